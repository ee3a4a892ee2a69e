package store

import (
	"dialbox/internal/config"
	"fmt"
	"net/url"
	"path/filepath"
)

// DataDir is where the folders that default to "beside the database"
// (recordings, the TTS cache, prompts) are: the SQLite file's folder, or
// the working directory with PostgreSQL.
func DataDir(cfg config.Config) string {
	if config.IsPostgresURL(cfg.Database) {
		return "."
	}
	return filepath.Dir(cfg.Database)
}

// Redacted is `database` as logs and messages show it: a URL without
// its password.
func Redacted(database string) string {
	if !config.IsPostgresURL(database) {
		return database
	}
	u, err := url.Parse(database)
	if err != nil {
		return "postgres://(unparsable URL)"
	}
	return u.Redacted()
}

// NoDatabase says that database is no dialbox database, and how one is
// made.
func NoDatabase(database, why string) error {
	return fmt.Errorf("database %s %s: is --database (or database, DIALBOX_DATABASE) mistyped? Only `dialbox serve` creates a database: start it once on a new one",
		Redacted(database), why)
}
