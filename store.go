package main

import (
	"context"
	"dialbox/internal/config"
	"dialbox/internal/recordings"
	"dialbox/internal/store"
	_ "embed"
)

// Which store `database` names: a postgres:// (or postgresql://) URL is
// PostgreSQL, shared by any number of dialbox nodes (docs/postgres.md);
// anything else is the path of a SQLite file, the default.

// openConfiguredStore opens the store cfg names, creating its schema (and
// the SQLite file) when missing: serve's way, the one command that makes a
// database. The store records into m.
func openConfiguredStore(ctx context.Context, cfg config.Config, m store.Metrics) (Store, error) {
	if config.IsPostgresURL(cfg.Database) {
		return store.OpenPostgres(ctx, cfg.Database, postgresMigrations(), cfg.Cluster, m, recordingsOf(cfg))
	}
	return store.OpenSQLite(cfg.Database, sqliteMigrations(), m, recordingsOf(cfg))
}

// recordingsOf is the folder of the recordings the store removes with the
// calls a delete takes (an application, a scenario, contacts).
func recordingsOf(cfg config.Config) recordings.Files {
	return recordings.Folder(cfg, store.DataDir(cfg))
}

// openExistingStore opens the store cfg names for a command that reads or
// changes data: it must already be a dialbox database. Created here, a
// mistyped --database would be a new empty database the command then
// "succeeds" on (docs/operations.md#which-commands-create-the-database).
// An older schema is still brought up to date, as serve would. A command
// serves no /metrics: its store's metrics are its own.
func openExistingStore(ctx context.Context, cfg config.Config) (Store, error) {
	if config.IsPostgresURL(cfg.Database) {
		if err := store.CheckPostgres(ctx, cfg.Database); err != nil {
			return nil, err
		}
		return store.OpenPostgres(ctx, cfg.Database, postgresMigrations(), cfg.Cluster, store.NewMetrics(true), recordingsOf(cfg))
	}
	if err := store.CheckSQLiteIsDialbox(ctx, cfg.Database); err != nil {
		return nil, err
	}
	return store.OpenSQLite(cfg.Database, sqliteMigrations(), store.NewMetrics(false), recordingsOf(cfg))
}

// cachedStore is the store with its configuration reads kept by
// store.Cached in front: Cached's reads are promoted from one level above
// the store's own, so they are the ones called, and every other method is
// the store's.
type cachedStore struct {
	*store.Cached
	uncached
}

// uncached holds the store one level below Cached's reads.
type uncached struct{ Store }

// newCachedStore wraps s, once, where the store is opened for a server.
func newCachedStore(s Store) cachedStore { return cachedStore{store.NewCached(s), uncached{s}} }

// The schemas live beside main.go, where go:embed can reach them, and are
// handed to the store's packages as their numbered blocks.
var (
	//go:embed schema.sql
	schemaSQL string
	//go:embed schema_postgres.sql
	schemaPostgresSQL string
)

// sqliteMigrations splits schema.sql into its numbered blocks, in order.
func sqliteMigrations() []string { return store.SplitMigrations("schema.sql", schemaSQL) }

// postgresMigrations splits schema_postgres.sql into its numbered blocks.
func postgresMigrations() []string {
	return store.SplitMigrations("schema_postgres.sql", schemaPostgresSQL)
}
