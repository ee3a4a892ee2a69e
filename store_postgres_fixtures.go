package main

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
func (s *PostgresStore) ApplyFixtures(ctx context.Context, apps []*FixtureApp, now time.Time) error {
	return s.configWrite(ctx, func(tx pgx.Tx) error {
		for _, fa := range apps {
			if err := applyFixtureApp(ctx, pgFixtureTx(ctx, tx, now), fa, now); err != nil {
				return err
			}
		}
		return nil
	})
}

// pgFixtureTx is a PostgreSQL transaction as fixtures apply them.
func pgFixtureTx(ctx context.Context, tx pgx.Tx, now time.Time) fixtureTx {
	return fixtureTx{Querier: sqldb.PGX(tx),
		setAdSettings: func(appID int64, a AdSettings) error { return pgSetAdSettings(ctx, tx, appID, a, now) },
		addDNC: func(list int64, numbers []int64) error {
			id, err := pgCurrentList(ctx, tx, list, now)
			if err == nil {
				_, err = pgAddDNC(ctx, tx, id, numbers, ms(now))
			}
			return err
		}}
}
