package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrateLock is the advisory lock every migration transaction takes, so
// nodes starting together apply each block once, one after the other.
const migrateLock = `SELECT pg_advisory_xact_lock(7412001)`

// MigratePostgres applies every migration of all after the database's
// version, each in its own transaction, up to version.
func MigratePostgres(ctx context.Context, pool *pgxpool.Pool, all []string, version int) error {
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, migrateLock+`;
			CREATE TABLE IF NOT EXISTS dialbox_schema (
				one     integer PRIMARY KEY DEFAULT 1 CHECK (one = 1),
				version integer NOT NULL
			);
			INSERT INTO dialbox_schema (version) VALUES (0) ON CONFLICT DO NOTHING`)
		return err
	}); err != nil {
		return err
	}
	current, err := postgresVersion(ctx, pool)
	if err != nil {
		return err
	}
	if current > len(all) {
		return fmt.Errorf("made by a newer dialbox (schema version %d, this one knows %d)", current, len(all))
	}
	for v := current + 1; v <= version; v++ {
		if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			var at int
			if _, err := tx.Exec(ctx, migrateLock); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, `SELECT version FROM dialbox_schema`).Scan(&at); err != nil {
				return err
			}
			if at >= v {
				return nil // another node applied it while this one waited
			}
			// Without arguments Exec runs the block as one simple query, all
			// its statements in this transaction.
			if _, err := tx.Exec(ctx, all[v-1]); err != nil {
				return fmt.Errorf("migration %d: %w", v, err)
			}
			_, err := tx.Exec(ctx, `UPDATE dialbox_schema SET version = $1`, v)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// CheckPostgres checks, without changing it, that the database
// at url holds dialbox's schema: PostgreSQL never creates a database, but
// an existing one named by mistake (postgres, another application's)
// would otherwise get dialbox's tables.
func CheckPostgres(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	defer conn.Close(ctx)
	var made bool
	version := 0
	err = conn.QueryRow(ctx, `SELECT to_regclass('dialbox_schema') IS NOT NULL`).Scan(&made)
	if err == nil && made {
		version, err = postgresVersion(ctx, conn)
	}
	if err != nil {
		return fmt.Errorf("database %s: %w", Redacted(url), err)
	}
	if version == 0 {
		return NoDatabase(url, "holds no dialbox schema")
	}
	return nil
}

// postgresVersion is the schema version the database records, 0 when none is.
func postgresVersion(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (int, error) {
	var v int
	err := q.QueryRow(ctx, `SELECT version FROM dialbox_schema`).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return v, err
}
