package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"dialbox/internal/config"
	"dialbox/internal/destinations"
	"dialbox/internal/domain"
	"dialbox/internal/importer"
)

// Usage is `dialbox help`, and what a usage error shows.
const Usage = `usage:
  dialbox [serve] [--config FILE] [--listen ADDR] [--database FILE] [--fixtures FILE]
  dialbox token --app API_KEY [--config FILE] [--database FILE]
  dialbox backup PATH [--config FILE] [--database FILE]
  dialbox restore BACKUP [--config FILE] [--database FILE]
  dialbox migrate-to postgres://... [--replace | --verify-only] [--config FILE] [--database FILE]
  dialbox import (--scenario ID | --campaign ID) [--app API_KEY] [--chunk N] [--config FILE] [--database FILE] contacts.csv
  dialbox version
` + appUsage + dncUsage

// dncUsage is the part of Usage that `dialbox dnc`'s usage errors show.
const dncUsage = `  dialbox dnc import FILE [--app API_KEY] [--replace [--force]]   load a list file into the national register (or a tenant's list)
  dialbox dnc add|remove|check NUMBER [--app API_KEY]
  dialbox dnc count [--app API_KEY]
`

// Parts are what the commands take from the rest of dialbox.
type Parts struct {
	// Open opens the existing dialbox database cfg names; the caller
	// closes it.
	Open func(ctx context.Context, cfg config.Config) (Store, error)
	// Migrations and PostgresMigrations are the schema's migrations this
	// build embeds: a backup's schema version must be one of SQLite's, and
	// migrate-to brings both databases to the last.
	Migrations, PostgresMigrations []string
	Version                        string // what `dialbox version` prints
}

// Run runs `dialbox cmd args...`: every command but serve.
func Run(ctx context.Context, cmd string, args []string, stdout io.Writer, env []string, p Parts) error {
	switch cmd {
	case "backup":
		return runBackup(ctx, args, stdout, env, p)
	case "restore":
		return runRestore(ctx, args, stdout, env, p)
	case "migrate-to":
		return runMigrateTo(ctx, args, stdout, env, p)
	case "token":
		return runToken(ctx, args, stdout, env, p)
	case "app", "wallet", "scenario", "contacts":
		return runApps(ctx, cmd, args, stdout, env, p)
	case "import":
		return runImport(ctx, args, stdout, env, p)
	case "dnc":
		return runDNC(ctx, args, stdout, env, p)
	case "version":
		fmt.Fprintln(stdout, "dialbox", p.Version)
		return nil
	case "help":
		fmt.Fprint(stdout, Usage)
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", cmd, Usage)
}

// Flags are the flags every command that opens the database takes; the
// config file is read first, then DIALBOX_* variables, then the flags.
type Flags struct {
	config, listen, database, fixtures *string
}

// NewFlagSet is the flag set of the command name, with the Flags.
func NewFlagSet(name string) (*flag.FlagSet, Flags) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	return fs, Flags{
		config:   fs.String("config", "", "TOML config file (env DIALBOX_CONFIG)"),
		listen:   fs.String("listen", "", "address to serve on (default 127.0.0.1:8080)"),
		database: fs.String("database", "", "SQLite database file (default dialbox.db)"),
		fixtures: fs.String("fixtures", "", "fixtures file applied at start"),
	}
}

// Load reads the configuration: the config file, the environment, then
// the flags of fs that were set.
func (f Flags) Load(fs *flag.FlagSet, env []string) (config.Config, error) {
	path := *f.config
	if path == "" {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, "DIALBOX_CONFIG="); ok {
				path = v
			}
		}
	}
	cfg, err := config.LoadConfig(path, env)
	if err != nil {
		return cfg, err
	}
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "listen":
			cfg.Listen = *f.listen
		case "database":
			cfg.Database = *f.database
		case "fixtures":
			cfg.Fixtures = *f.fixtures
		}
	})
	return cfg, nil
}

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

// positional parses args into fs as parseInterspersed does and wants n
// positional arguments; wrong is the error for another count.
func positional(fs *flag.FlagSet, args []string, n int, wrong error) ([]string, error) {
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) != n {
		return nil, wrong
	}
	return pos, nil
}

// Store is what the commands use of the store: they work on the database
// directly, also while a server runs on it.
type Store interface {
	importer.Store // dialbox import
	AppByKey(ctx context.Context, apiKey string) (*domain.Application, error)
	ListApps(ctx context.Context) ([]*domain.Application, error)
	CreateApp(ctx context.Context, name, apiKey, apiSecret string, rules destinations.Rules, now time.Time) (*domain.Application, error)
	UpdateApp(ctx context.Context, apiKey string, p domain.AppPatch, now time.Time) (*domain.Application, error)
	DeleteApp(ctx context.Context, apiKey string) error
	Wallet(ctx context.Context, appID int64) (domain.Wallet, error)
	TopUp(ctx context.Context, appID int64, amount int64, now time.Time) error
	Scenario(ctx context.Context, appID int64, id string) (*domain.Scenario, error)
	ListScenarios(ctx context.Context, appID int64, status string, limit, offset int) ([]*domain.Scenario, int, error)
	TransitionScenario(ctx context.Context, appID int64, id string, from []string, to string, now time.Time) error
	Campaign(ctx context.Context, appID int64, id string) (*domain.Campaign, error)
	Contacts(ctx context.Context, appID int64, f domain.ContactFilter) ([]*domain.ContactRecord, string, error)
	CountDNC(ctx context.Context, list int64) (int64, time.Time, error)
	LoadDNC(ctx context.Context, list int64, numbers []int64, replace bool, now time.Time, progress func(int)) (int, error)
	AddDNC(ctx context.Context, list int64, phones []string, now time.Time) (int, error)
	RemoveDNC(ctx context.Context, list int64, e164 string) error
	LookupDNC(ctx context.Context, tenant int64, e164 string) ([]domain.DNCListing, error)
	Close() error
}
