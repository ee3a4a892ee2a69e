package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"dialbox/internal/sqldb"
)

// Do-not-call lists on PostgreSQL (docs/compliance.md#how-lists-are-stored),
// what is PostgreSQL's own: the numbers of a replacing load COPYed into a
// new version; the rest is dnc.go's, for both stores.

// LoadDNC is SQLite.LoadDNC's contract, a chunk in a transaction of
// its own: appended numbers inserted from an array, a replace's new
// version (numbers sorted without repeats, nothing to conflict with)
// COPYed, its added_at NULL.
func (s *Postgres) LoadDNC(ctx context.Context, list int64, numbers []int64, replace bool, now time.Time, progress func(int)) (int, error) {
	return s.loadDNC(ctx, list, numbers, replace, now, progress, func(id int64, part []int64, addedAt any) (n int, err error) {
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) (err error) {
			if addedAt != nil {
				n, err = addDNCNumbers(ctx, sqldb.PGX(tx), id, part, addedAt)
				return err
			}
			k, err := tx.CopyFrom(ctx, pgx.Identifier{"dnc_numbers"}, []string{"list_id", "number"},
				pgx.CopyFromSlice(len(part), func(i int) ([]any, error) { return []any{id, part[i]}, nil }))
			n = int(k)
			return err
		})
		return n, err
	})
}
