// Package store owns the database mechanics dialbox's store stands on:
// the SQLite database's lock files (against a restore under a running
// server, and a second server); the WAL-index commit counter that lets
// the configuration cache see other processes' commits; backup's and
// restore's opening, checking and copying of a SQLite file; migrate-to's
// copy of a stopped SQLite database into PostgreSQL, with the per-table
// count and checksum that verify it; the folder beside the database and
// the database's name as logs show it; PostgreSQL's migrations, applied
// from the schema the root embeds and hands in. The query layer and both stores join
// it as they leave the root package (docs/architecture.md). It imports
// internal/sqldb and the database drivers, never the root.
package store
