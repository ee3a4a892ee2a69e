package main

import (
	"context"
	"database/sql"
	"dialbox/internal/config"
	"dialbox/internal/store"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// parseInterspersed parses flags written before or after the positional
// arguments ("dialbox backup PATH --database x") and returns the latter.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// openPlain opens a database file without the Store (no migration, no
// writer, no lock): backup reads a live database another process writes.
// The file must exist (mode=rw): none of its users means to create one.
func openPlain(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=rw&_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// runBackup writes a consistent copy of the database, live or not, with
// VACUUM INTO: one read transaction, so the copy holds exactly the commits
// made before it began, and the server goes on writing meanwhile (WAL).
func runBackup(ctx context.Context, args []string, stdout io.Writer, env []string) error {
	fs, f := newFlagSet("backup")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("backup: give one PATH to write the copy to\n%s", usage)
	}
	cfg, err := f.load(fs, env)
	if err != nil {
		return err
	}
	if config.IsPostgresURL(cfg.Database) {
		return errNotSQLite("backup", "back it up with pg_dump or pg_basebackup")
	}
	dst := pos[0]
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("backup: %s exists; choose a new path", dst)
	}
	if _, err := os.Stat(cfg.Database); err != nil {
		return fmt.Errorf("backup: database %w", err)
	}
	db, err := openPlain(cfg.Database)
	if err != nil {
		return err
	}
	defer db.Close()
	// Written beside the target and renamed when complete and synced, so a
	// crash never leaves a half backup under the name asked for.
	tmp := dst + ".partial"
	os.Remove(tmp)
	// VACUUM INTO would create the copy with the umask's mode, often
	// world-readable; it holds every secret and phone number. It writes
	// into an empty file it finds, which keeps this mode.
	if err := os.WriteFile(tmp, nil, 0o600); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	start := time.Now()
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, tmp); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("backup: %w", err)
	}
	info, err := checkDatabaseFile(ctx, tmp)
	if err == nil {
		err = syncFile(tmp)
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("backup: %w", err)
	}
	syncDir(filepath.Dir(dst))
	fmt.Fprintf(stdout, "backup of %s written to %s in %s: %s\n", cfg.Database, dst, time.Since(start).Round(time.Millisecond), info)
	return nil
}

// runRestore puts a backup in place of the database. It refuses while any
// dialbox has the database open, and keeps the database it replaces.
func runRestore(ctx context.Context, args []string, stdout io.Writer, env []string) error {
	fs, f := newFlagSet("restore")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("restore: give the BACKUP file to restore\n%s", usage)
	}
	cfg, err := f.load(fs, env)
	if err != nil {
		return err
	}
	if config.IsPostgresURL(cfg.Database) {
		return errNotSQLite("restore", "restore it with pg_restore or psql")
	}
	src, dst := pos[0], cfg.Database
	info, err := checkDatabaseFile(ctx, src)
	if err != nil {
		return fmt.Errorf("restore: %s: %w", src, err)
	}
	lock, err := store.LockDatabaseExclusive(dst)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer lock.Close()

	tmp := dst + ".restoring"
	if err := copyFile(src, tmp); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("restore: %w", err)
	}
	var kept string
	if _, err := os.Stat(dst); err == nil {
		// Fold the old database's WAL into it first: the kept copy is then
		// complete on its own, and no stale -wal is left to meet the backup.
		if err := checkpoint(ctx, dst); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("restore: %s: %w", dst, err)
		}
		kept = dst + ".before-restore-" + time.Now().UTC().Format("20060102T150405Z")
		if err := os.Rename(dst, kept); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("restore: %w", err)
		}
	}
	for _, side := range []string{"-wal", "-shm"} {
		if err := os.Remove(dst + side); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("restore: %w", err)
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	syncDir(filepath.Dir(dst))
	fmt.Fprintf(stdout, "restored %s from %s: %s\n", dst, src, info)
	if kept != "" {
		fmt.Fprintf(stdout, "the database it replaced is kept as %s\n", kept)
	}
	fmt.Fprintln(stdout, "start dialbox on it; migrations newer than the backup are applied at start")
	return nil
}

// checkDatabaseFile checks that path is an intact dialbox database this
// build can open, and describes it.
func checkDatabaseFile(ctx context.Context, path string) (string, error) {
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
	if version == 0 || version > len(migrations()) {
		return "", fmt.Errorf("schema version %d is not one this dialbox knows (1..%d)", version, len(migrations()))
	}
	if err := db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM applications), (SELECT count(*) FROM contacts)`).Scan(&apps, &contacts); err != nil {
		return "", err
	}
	return fmt.Sprintf("schema version %d, %d applications, %d contacts", version, apps, contacts), nil
}

func checkpoint(ctx context.Context, path string) error {
	db, err := openPlain(path)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}

func copyFile(src, dst string) error {
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

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// syncDir makes a rename in dir durable; best effort, as some systems
// cannot sync a directory.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
