package main

import (
	"context"
	"errors"
	"net/url"
	"path/filepath"
)

// Which store `database` names: a postgres:// (or postgresql://) URL is
// PostgreSQL, shared by any number of dialbox nodes (docs/postgres.md);
// anything else is the path of a SQLite file, the default.

// openConfiguredStore opens the store cfg names.
func openConfiguredStore(ctx context.Context, cfg Config) (Store, error) {
	if isPostgresURL(cfg.Database) {
		return OpenPostgres(ctx, cfg.Database, cfg.Cluster)
	}
	return OpenStore(cfg.Database)
}

// dataDir is where the folders that default to "beside the database"
// (recordings, the TTS cache, prompts) are: the SQLite file's folder, or
// the working directory with PostgreSQL.
func dataDir(cfg Config) string {
	if isPostgresURL(cfg.Database) {
		return "."
	}
	return filepath.Dir(cfg.Database)
}

// databaseName is `database` as logs and messages show it: a URL without
// its password.
func databaseName(database string) string {
	if !isPostgresURL(database) {
		return database
	}
	u, err := url.Parse(database)
	if err != nil {
		return "postgres://(unparsable URL)"
	}
	return u.Redacted()
}

// errNotSQLite answers the commands that work on a SQLite file only.
func errNotSQLite(command, instead string) error {
	return errors.New(command + ": database is PostgreSQL; " + instead + " (docs/postgres.md#operations)")
}
