package main

import (
	"context"
	"dialbox/internal/config"
	"dialbox/internal/store"
	_ "embed"
	"errors"
)

// Which store `database` names: a postgres:// (or postgresql://) URL is
// PostgreSQL, shared by any number of dialbox nodes (docs/postgres.md);
// anything else is the path of a SQLite file, the default.

// openConfiguredStore opens the store cfg names, creating its schema (and
// the SQLite file) when missing: serve's way, the one command that makes a
// database. The store records into m.
func openConfiguredStore(ctx context.Context, cfg config.Config, m storeMetrics) (Store, error) {
	if config.IsPostgresURL(cfg.Database) {
		return OpenPostgres(ctx, cfg.Database, cfg.Cluster, m)
	}
	return OpenStore(cfg.Database, m)
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
		return OpenPostgres(ctx, cfg.Database, cfg.Cluster, newStoreMetrics(true))
	}
	if err := checkSQLiteIsDialbox(ctx, cfg.Database); err != nil {
		return nil, err
	}
	return OpenStore(cfg.Database, newStoreMetrics(false))
}

// errNotSQLite answers the commands that work on a SQLite file only.
func errNotSQLite(command, instead string) error {
	return errors.New(command + ": database is PostgreSQL; " + instead + " (docs/postgres.md#operations)")
}

//go:embed schema_postgres.sql
var schemaPostgresSQL string

// postgresMigrations splits schema_postgres.sql into its numbered blocks.
func postgresMigrations() []string {
	return splitMigrations("schema_postgres.sql", schemaPostgresSQL)
}
