// Package store owns dialbox's database: the store on SQLite (SQLite, the
// default) and on PostgreSQL (Postgres, for several nodes), both over one
// query layer written once (docs/architecture.md#one-query-layer); their
// migrations, handed in by the root, which embeds the schema files beside
// main.go; the group-commit writers; applying fixtures; the store's own
// metrics; the configuration cache (Cached) over the reads it keeps. It
// also owns the database mechanics the store stands on: the SQLite
// database's lock files (against a restore under a running server, and a
// second server); the WAL-index commit counter that lets the
// configuration cache see other processes' commits; backup's and
// restore's opening, checking and copying of a SQLite file; migrate-to's
// copy of a stopped SQLite database into PostgreSQL, with the per-table
// count and checksum that verify it; the folder beside the database and
// the database's name as logs show it. It imports internal/domain,
// internal/sqldb, the small libraries it stores for (config, dnc,
// recordings, destinations, script, writehealth) and the database
// drivers, never the root.
package store
