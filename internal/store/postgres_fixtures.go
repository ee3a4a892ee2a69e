package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"dialbox/internal/sqldb"
)

// ApplyFixtures upserts every application of the file in one transaction
// (applyFixtureApp, store.go). Configuration writes are rare; they commit
// on their own, outside the imports' group commit, and every node hears of
// them (configWrite).
func (s *Postgres) ApplyFixtures(ctx context.Context, apps []*FixtureApp, now time.Time) error {
	return s.configWrite(ctx, func(tx pgx.Tx) error {
		for _, fa := range apps {
			if err := applyFixtureApp(ctx, sqldb.PGX(tx), fa, now); err != nil {
				return err
			}
		}
		return nil
	})
}
