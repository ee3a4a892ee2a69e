package store

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/url"
	"os"

	_ "modernc.org/sqlite" // the "sqlite" driver
)

// OpenPlain opens a database file without the Store (no migration, no
// writer, no lock): backup reads a live database another process writes.
// The file must exist (mode=rw): none of its users means to create one.
func OpenPlain(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=rw&_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// CheckDatabaseFile checks that path is an intact dialbox database this
// build can open, one of whose known migrations it is at, and describes it.
func CheckDatabaseFile(ctx context.Context, path string, known int) (string, error) {
	if _, err := os.Stat(path); err != nil {
		return "", err
	}
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=ro")
	if err != nil {
		return "", err
	}
	defer db.Close()
	var check string
	if err := db.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&check); err != nil {
		return "", fmt.Errorf("not a readable SQLite database: %w", err)
	}
	if check != "ok" {
		return "", fmt.Errorf("damaged: %s", check)
	}
	var version, contacts, apps int
	if err := db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		return "", err
	}
	if version == 0 || version > known {
		return "", fmt.Errorf("schema version %d is not one this dialbox knows (1..%d)", version, known)
	}
	if err := db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM applications), (SELECT count(*) FROM contacts)`).Scan(&apps, &contacts); err != nil {
		return "", err
	}
	return fmt.Sprintf("schema version %d, %d applications, %d contacts", version, apps, contacts), nil
}

// Checkpoint folds the WAL of the database at path into its file, so the
// file is complete on its own.
func Checkpoint(ctx context.Context, path string) error {
	db, err := OpenPlain(path)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}

// CopyFile copies src to dst, synced before it returns.
func CopyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// SyncFile makes the file at path durable.
func SyncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// SyncDir makes a rename in dir durable; best effort, as some systems
// cannot sync a directory.
func SyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
