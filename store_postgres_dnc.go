package main

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"dialbox/internal/sqldb"
)

// Do-not-call lists on PostgreSQL (docs/compliance.md#how-lists-are-stored),
// what is PostgreSQL's own: the numbers of a replacing load COPYed into a
// new version and switched in one short transaction that locks the lists'
// table; the rest is store_dnc.go's, for both stores.

// holdContacts runs holdContactsTx, the tenants' counts of unfinished
// contacts locked first in the order of their ids, as a settle and an
// import take them, so none of them deadlocks with another.
func (s *PostgresStore) holdContacts(ctx context.Context, holds []callHold, now, firstTry time.Time) error {
	var apps []int64
	for _, h := range holds {
		apps = append(apps, h.AppID)
	}
	slices.Sort(apps)
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM queued_contacts WHERE app_id = ANY($1) ORDER BY app_id FOR UPDATE`,
			slices.Compact(apps)); err != nil {
			return err
		}
		return holdContactsTx(pgTx{ctx: ctx, tx: tx}, holds, now, firstTry)
	})
}

// LoadDNC is SQLiteStore.LoadDNC's contract: commits of dncChunkRows, and
// with replace a new version COPYed beside the current one, switched in
// one short transaction that holds the lists' table against another
// switch, then the old version deleted a chunk at a time.
func (s *PostgresStore) LoadDNC(ctx context.Context, list int64, numbers []int64, replace bool, now time.Time, progress func(int)) (int, error) {
	var id int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) (err error) {
		if replace {
			return tx.QueryRow(ctx, `INSERT INTO dnc_lists (app_id, state, loaded_at) VALUES ($1, 'loading', $2) RETURNING id`,
				listApp(list), ms(now)).Scan(&id)
		}
		id, err = currentList(ctx, sqldb.PGX(tx), list, now)
		return err
	})
	if err != nil {
		return 0, err
	}
	gained := 0
	for from := 0; from < len(numbers); from += dncChunkRows {
		part := numbers[from:min(from+dncChunkRows, len(numbers))]
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if !replace {
				n, err := addDNCNumbers(ctx, sqldb.PGX(tx), id, part, ms(now))
				gained += n
				return err
			}
			// A new version, and numbers sorted without repeats: nothing
			// to conflict with, so COPY. added_at NULL: since the load.
			n, err := tx.CopyFrom(ctx, pgx.Identifier{"dnc_numbers"}, []string{"list_id", "number"},
				pgx.CopyFromSlice(len(part), func(i int) ([]any, error) { return []any{id, part[i]}, nil }))
			gained += int(n)
			return err
		})
		if err != nil {
			return gained, err
		}
		if progress != nil {
			progress(from + len(part))
		}
	}
	if !replace {
		return gained, nil
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE dnc_lists IN EXCLUSIVE MODE`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE dnc_lists SET state = 'old' WHERE state = 'current' AND app_id IS NOT DISTINCT FROM $1`,
			listApp(list)); err != nil {
			return err
		}
		r, err := tx.Exec(ctx, `UPDATE dnc_lists SET state = 'current' WHERE id = $1`, id)
		if err == nil && r.RowsAffected() == 0 {
			err = errNotFound
		}
		return err
	})
	if errors.Is(err, errNotFound) {
		// Another load dropped this version while its numbers were still
		// coming: drop them too.
		if err := s.dropDNCVersion(ctx, id); err != nil {
			return 0, err
		}
		return 0, errors.New("the list was replaced by another load while this one ran; this one is dropped")
	}
	if err != nil {
		return 0, err
	}
	return gained, s.dropOldDNC(ctx, list, id)
}
