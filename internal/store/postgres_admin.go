package store

import (
	"context"
	"fmt"
	"time"

	"dialbox/internal/sqldb"

	"github.com/jackc/pgx/v5"
)

// The admin API on PostgreSQL: its writes' transactions, and what stays
// PostgreSQL's own of the queries sqlStore runs for both stores
// (admin.go).

// configWrite runs fn in a transaction of its own that changes
// configuration. Once it has committed this node's configuration cache is
// invalidated, and every other node's by the notification it sends at
// commit (docs/postgres.md#configuration-changes).
func (s *Postgres) configWrite(ctx context.Context, fn func(pgx.Tx) error) error {
	defer s.configChanges.Add(1)
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, configChannel, s.node)
		return err
	})
}

// dataWrite runs fn in a transaction of its own that changes no
// configuration.
func (s *Postgres) dataWrite(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}

// pgxWrite is sqlStore's write over one of configWrite and dataWrite.
func pgxWrite(write func(context.Context, func(pgx.Tx) error) error) func(context.Context, func(sqldb.Querier) error) error {
	return func(ctx context.Context, fn func(sqldb.Querier) error) error {
		return write(ctx, func(tx pgx.Tx) error { return fn(sqldb.PGX(tx)) })
	}
}

// ---- deletes and reset (admin.go says why they are each store's) ----

func (s *Postgres) DeleteApp(ctx context.Context, apiKey string) error {
	return s.deleteWithRecordings(ctx, appRecordings, []any{apiKey}, func(tx pgx.Tx) error {
		return changedRows(sqldb.PGX(tx).Exec(ctx, deleteAppSQL, apiKey))
	})
}

func (s *Postgres) DeleteScenario(ctx context.Context, appID int64, id string) error {
	return s.deleteWithRecordings(ctx, scenarioRecordings, []any{appID, id}, func(tx pgx.Tx) error {
		return changedRows(sqldb.PGX(tx).Exec(ctx, deleteScenarioSQL, appID, id))
	})
}

// deleteWithRecordings is recordings.go's on PostgreSQL: the delete
// is a configuration write, and the recordings of the calls it deleted go
// once it has committed. recorded has ? placeholders.
func (s *Postgres) deleteWithRecordings(ctx context.Context, recorded string, args []any, del func(tx pgx.Tx) error) error {
	var ids []string
	err := s.configWrite(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, sqldb.Numbered(recorded), args...)
		if err != nil {
			return err
		}
		if ids, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		return del(tx)
	})
	if err == nil {
		s.recordings.Remove(ids)
	}
	return err
}

func (s *Postgres) Reset(ctx context.Context, apps []*FixtureApp, now time.Time) error {
	return s.deleteWithRecordings(ctx, allRecordings, nil, func(tx pgx.Tx) error {
		for _, t := range resetTables {
			if _, err := tx.Exec(ctx, `DELETE FROM `+t); err != nil {
				return fmt.Errorf("reset %s: %w", t, err)
			}
		}
		for _, fa := range apps {
			if err := applyFixtureApp(ctx, sqldb.PGX(tx), fa, now); err != nil {
				return err
			}
		}
		return nil
	})
}
