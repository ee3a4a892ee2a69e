package cli

import (
	"context"
	"dialbox/internal/config"
	"dialbox/internal/store"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// runBackup writes a consistent copy of the database, live or not, with
// VACUUM INTO: one read transaction, so the copy holds exactly the commits
// made before it began, and the server goes on writing meanwhile (WAL).
func runBackup(ctx context.Context, args []string, stdout io.Writer, env []string, p Parts) error {
	dst, cfg, err := sqliteCommand("backup", args, env, "one PATH to write the copy to", "back it up with pg_dump or pg_basebackup")
	if err != nil {
		return err
	}
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("backup: %s exists; choose a new path", dst)
	}
	if _, err := os.Stat(cfg.Database); err != nil {
		return fmt.Errorf("backup: database %w", err)
	}
	db, err := store.OpenPlain(cfg.Database)
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
	info, err := store.CheckDatabaseFile(ctx, tmp, len(p.Migrations))
	if err == nil {
		err = store.SyncFile(tmp)
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("backup: %w", err)
	}
	store.SyncDir(filepath.Dir(dst))
	fmt.Fprintf(stdout, "backup of %s written to %s in %s: %s\n", cfg.Database, dst, time.Since(start).Round(time.Millisecond), info)
	return nil
}

// runRestore puts a backup in place of the database. It refuses while any
// dialbox has the database open, and keeps the database it replaces.
func runRestore(ctx context.Context, args []string, stdout io.Writer, env []string, p Parts) error {
	src, cfg, err := sqliteCommand("restore", args, env, "the BACKUP file to restore", "restore it with pg_restore or psql")
	if err != nil {
		return err
	}
	dst := cfg.Database
	info, err := store.CheckDatabaseFile(ctx, src, len(p.Migrations))
	if err != nil {
		return fmt.Errorf("restore: %s: %w", src, err)
	}
	lock, err := store.LockDatabaseExclusive(dst)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer lock.Close()

	tmp := dst + ".restoring"
	if err := store.CopyFile(src, tmp); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("restore: %w", err)
	}
	var kept string
	if _, err := os.Stat(dst); err == nil {
		// Fold the old database's WAL into it first: the kept copy is then
		// complete on its own, and no stale -wal is left to meet the backup.
		if err := store.Checkpoint(ctx, dst); err != nil {
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
	store.SyncDir(filepath.Dir(dst))
	fmt.Fprintf(stdout, "restored %s from %s: %s\n", dst, src, info)
	if kept != "" {
		fmt.Fprintf(stdout, "the database it replaced is kept as %s\n", kept)
	}
	fmt.Fprintln(stdout, "start dialbox on it; migrations newer than the backup are applied at start")
	return nil
}

// errNotSQLite answers the commands that work on a SQLite file only.
func errNotSQLite(command, instead string) error {
	return errors.New(command + ": database is PostgreSQL; " + instead + " (docs/postgres.md#operations)")
}

// sqliteCommand reads the command line of backup or restore, commands of
// a SQLite file only: its one argument (what names it in the error when
// it is missing), then the configuration, whose database must not be
// PostgreSQL's (instead says what to do there).
func sqliteCommand(name string, args, env []string, what, instead string) (string, config.Config, error) {
	fs, f := NewFlagSet(name)
	pos, err := positional(fs, args, 1, fmt.Errorf("%s: give %s\n%s", name, what, Usage))
	if err != nil {
		return "", config.Config{}, err
	}
	cfg, err := f.Load(fs, env)
	if err != nil {
		return "", cfg, err
	}
	if config.IsPostgresURL(cfg.Database) {
		return "", cfg, errNotSQLite(name, instead)
	}
	return pos[0], cfg, nil
}
