package cli

import (
	"context"
	"dialbox/internal/config"
	"dialbox/internal/store"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
)

// runMigrateTo runs `dialbox migrate-to URL`.
func runMigrateTo(ctx context.Context, args []string, stdout io.Writer, env []string, p Parts) error {
	fs, f := NewFlagSet("migrate-to")
	replace := fs.Bool("replace", false, "empty the target's tables first (in the copy's transaction) instead of refusing a target that holds data")
	verifyOnly := fs.Bool("verify-only", false, "copy nothing: compare an earlier copy with the SQLite database")
	pos, err := positional(fs, args, 1, fmt.Errorf("migrate-to: give one postgres:// URL to copy into\n%s", migrateToUsage))
	if err != nil {
		return err
	}
	if *replace && *verifyOnly {
		return errors.New("migrate-to: --replace and --verify-only do not go together")
	}
	target := pos[0]
	if !config.IsPostgresURL(target) {
		return fmt.Errorf("migrate-to: the target must be a postgres:// or postgresql:// URL\n%s", migrateToUsage)
	}
	if err := config.CheckPostgresURL(target); err != nil {
		return fmt.Errorf("migrate-to: %w", err)
	}
	cfg, err := f.Load(fs, env)
	if err != nil {
		return err
	}
	source := cfg.Database
	if config.IsPostgresURL(source) {
		return fmt.Errorf("migrate-to: the database to copy from (--database, database, DIALBOX_DATABASE) must be a SQLite file, not %s", store.Redacted(source))
	}
	if _, err := os.Stat(source); err != nil {
		return fmt.Errorf("migrate-to: database %w", err)
	}
	// Nothing else may have the file open while it is copied: a server's
	// writes after the copy began would be lost (internal/store/dblock_unix.go).
	lock, err := store.LockDatabaseExclusive(source)
	if err != nil {
		return fmt.Errorf("migrate-to: %w", err)
	}
	defer lock.Close()

	// The target answers before the SQLite file is touched.
	pcfg, err := pgxpool.ParseConfig(target)
	if err != nil {
		return fmt.Errorf("migrate-to: %w", err)
	}
	pcfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return fmt.Errorf("migrate-to: %w", err)
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err != nil {
		return fmt.Errorf("migrate-to: %s: %w", store.Redacted(target), err)
	}

	lite, err := store.OpenPlain(source)
	if err != nil {
		return err
	}
	defer lite.Close()
	var liteVersion int
	if err := lite.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&liteVersion); err != nil {
		return fmt.Errorf("migrate-to: %s: %w", source, err)
	}
	if liteVersion == 0 {
		return fmt.Errorf("migrate-to: %s is not a dialbox database (it has no schema version)", source)
	}
	if !*verifyOnly {
		// The copy has the tables of this dialbox's schema on both sides,
		// as a start of this dialbox on the file would migrate it.
		if err := store.Migrate(lite, p.Migrations); err != nil {
			return fmt.Errorf("migrate-to: %s: %w", source, err)
		}
		liteVersion = len(p.Migrations)
	}

	m := store.NewMigration(lite, pool, stdout, source, store.Redacted(target), func(ctx context.Context, pool *pgxpool.Pool) error {
		return store.MigratePostgres(ctx, pool, p.PostgresMigrations, len(p.PostgresMigrations))
	})
	if *verifyOnly {
		return m.VerifyOnly(ctx)
	}
	fmt.Fprintf(stdout, "copying %s (schema version %d) into %s\n", source, liteVersion, store.Redacted(target))
	return m.Copy(ctx, *replace)
}

const migrateToUsage = `usage: dialbox migrate-to postgres://USER:PASSWORD@HOST:PORT/DATABASE [--replace | --verify-only] [--config FILE] [--database FILE]`
