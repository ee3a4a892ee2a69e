package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"dialbox/internal/auth"
	"dialbox/internal/config"
	"dialbox/internal/destinations"
	"dialbox/internal/domain"
	"dialbox/internal/store"
)

// The CLI's common tasks work on the database directly (the server may be
// running on it too: SQLite's WAL lets both in), with the same --config and
// --database flags as `dialbox token`.

// appUsage is the part of Usage that the app, wallet, scenario and
// contacts commands' usage errors show.
const appUsage = `  dialbox app create --name NAME [--api-key KEY] [--api-secret SECRET]
  dialbox app list
  dialbox app disable|enable|delete --app API_KEY
  dialbox wallet show --app API_KEY
  dialbox wallet top-up --app API_KEY --amount VND
  dialbox scenario list --app API_KEY [--status STATUS]
  dialbox scenario submit|approve --app API_KEY --scenario ID
  dialbox contacts list --app API_KEY [--scenario ID] [--campaign ID] [--state STATE]
                        [--outcome OUTCOME] [--phone PHONE] [--limit N] [--cursor C]
  (each also takes --config FILE and --database FILE)
`

// runApps runs `dialbox app|wallet|scenario|contacts SUBCOMMAND ...`.
func runApps(ctx context.Context, cmd string, args []string, stdout io.Writer, env []string, p Parts) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("%s: which subcommand?\n%s", cmd, appUsage)
	}
	sub := cmd + " " + args[0]
	fs, f := NewFlagSet(sub)
	var run func(context.Context, Store, config.Config) error
	var check func() error // usage errors, found before the database is opened
	switch sub {
	case "app create":
		name := fs.String("name", "", "name of the application")
		key := fs.String("api-key", "", "API key (default: generated)")
		secret := fs.String("api-secret", "", "API secret (default: generated)")
		check = func() error {
			if problem := domain.APIKeyProblem(*key); *key != "" && problem != "" {
				return fmt.Errorf("%s: --api-key %s", sub, problem)
			}
			if problem := domain.APISecretProblem(*secret); *secret != "" && problem != "" {
				return fmt.Errorf("%s: --api-secret %s", sub, problem)
			}
			return requireFlag(sub, "--name NAME", *name)
		}
		run = func(ctx context.Context, s Store, cfg config.Config) error {
			return appCreate(ctx, s, stdout, *name, *key, *secret)
		}
	case "app disable", "app enable", "app delete":
		app := fs.String("app", "", "API key of the application")
		check = func() error { return requireFlag(sub, "--app API_KEY", *app) }
		run = func(ctx context.Context, s Store, cfg config.Config) error {
			if args[0] == "delete" {
				return appDelete(ctx, s, stdout, *app)
			}
			return setAppDisabled(ctx, s, stdout, *app, args[0] == "disable")
		}
	case "wallet show":
		app := fs.String("app", "", "API key of the application")
		check = func() error { return requireFlag(sub, "--app API_KEY", *app) }
		run = func(ctx context.Context, s Store, cfg config.Config) error {
			return walletShow(ctx, s, stdout, *app)
		}
	case "wallet top-up":
		app := fs.String("app", "", "API key of the application")
		amount := fs.Int64("amount", 0, "VND to add to the balance")
		check = func() error {
			if err := requireFlag(sub, "--app API_KEY", *app); err != nil {
				return err
			}
			if *amount <= 0 {
				return fmt.Errorf("%s: --amount is required and must be a positive number of VND", sub)
			}
			return nil
		}
		run = func(ctx context.Context, s Store, cfg config.Config) error {
			return topUp(ctx, s, stdout, *app, *amount)
		}
	case "scenario submit", "scenario approve":
		app := fs.String("app", "", "API key of the application")
		scenario := fs.String("scenario", "", "scenario id")
		check = func() error {
			if err := requireFlag(sub, "--app API_KEY", *app); err != nil {
				return err
			}
			return requireFlag(sub, "--scenario ID", *scenario)
		}
		run = func(ctx context.Context, s Store, cfg config.Config) error {
			return transition(ctx, s, stdout, *app, *scenario, args[0])
		}
	case "app list":
		run = func(ctx context.Context, s Store, cfg config.Config) error { return appList(ctx, s, stdout) }
	case "scenario list":
		app := fs.String("app", "", "API key of the application")
		status := fs.String("status", "", "DRAFT, ACTIVE, REVIEWING or REJECT")
		run = func(ctx context.Context, s Store, cfg config.Config) error {
			return scenarioList(ctx, s, stdout, *app, *status)
		}
	case "contacts list":
		app := fs.String("app", "", "API key of the application")
		var cf domain.ContactFilter
		fs.StringVar(&cf.ScenarioID, "scenario", "", "scenario id")
		fs.StringVar(&cf.CampaignID, "campaign", "", "campaign id")
		fs.StringVar(&cf.State, "state", "", "queued, dialing or done")
		fs.StringVar(&cf.Outcome, "outcome", "", "final outcome, e.g. ANSWERED")
		fs.StringVar(&cf.Phone, "phone", "", "phone number")
		fs.IntVar(&cf.Limit, "limit", 50, "contacts per page")
		fs.Int64Var(&cf.Cursor, "cursor", 0, "next cursor printed by the previous page")
		run = func(ctx context.Context, s Store, cfg config.Config) error {
			return contactList(ctx, s, stdout, *app, cf, cfg.Phone.DefaultRegion)
		}
	default:
		return fmt.Errorf("unknown command %q\n%s", sub, appUsage)
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q", sub, fs.Arg(0))
	}
	if check != nil {
		if err := check(); err != nil {
			return err
		}
	}
	st, cfg, err := f.openStore(ctx, fs, env, p)
	if err != nil {
		return err
	}
	defer st.Close()
	return run(ctx, st, cfg)
}

// openStore reads the configuration as Load does and opens its database,
// for the commands that work on it directly; the caller closes the store.
func (f Flags) openStore(ctx context.Context, fs *flag.FlagSet, env []string, p Parts) (Store, config.Config, error) {
	cfg, err := f.Load(fs, env)
	if err != nil {
		return nil, cfg, err
	}
	st, err := p.Open(ctx, cfg)
	return st, cfg, err
}

// runToken prints a fresh ACCESS_TOKEN for an application.
func runToken(ctx context.Context, args []string, stdout io.Writer, env []string, p Parts) error {
	fs, f := NewFlagSet("token")
	appKey := fs.String("app", "", "API key of the application")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *appKey == "" {
		return fmt.Errorf("token: --app API_KEY is required")
	}
	st, cfg, err := f.openStore(ctx, fs, env, p)
	if err != nil {
		return err
	}
	defer st.Close()
	app, err := st.AppByKey(ctx, *appKey)
	if errors.Is(err, domain.ErrNotFound) {
		return fmt.Errorf("token: no application has API key %q in %s", *appKey, store.Redacted(cfg.Database))
	}
	if err != nil {
		return err
	}
	token, err := auth.MintToken(app, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, token)
	return nil
}

func appCreate(ctx context.Context, s Store, out io.Writer, name, key, secret string) error {
	if key == "" {
		key = domain.RandomHex(16)
	}
	if secret == "" {
		secret = domain.RandomHex(24)
	}
	app, err := s.CreateApp(ctx, name, key, secret, destinations.Rules{}, time.Now())
	if errors.Is(err, domain.ErrConflict) {
		return fmt.Errorf("app create: an application with API key %q already exists", key)
	}
	if err != nil {
		return err
	}
	token, err := auth.MintToken(app, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "name:         %s\napi_key:      %s\napi_secret:   %s\naccess_token: %s\n", app.Name, app.APIKey, secret, token)
	return nil
}

func appList(ctx context.Context, s Store, out io.Writer) error {
	apps, err := s.ListApps(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAPI KEY\tNAME\tDISABLED\tDEMO\tCREATED")
	for _, a := range apps {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%t\t%t\t%s\n", a.ID, a.APIKey, a.Name, a.Disabled, a.IsDemo, a.CreatedAt.Format(time.RFC3339))
	}
	return tw.Flush()
}

// appByKey is the application apiKey names, with the commands' wording
// when there is none.
func appByKey(ctx context.Context, s Store, apiKey string) (*domain.Application, error) {
	if apiKey == "" {
		return nil, fmt.Errorf("--app API_KEY is required")
	}
	app, err := s.AppByKey(ctx, apiKey)
	if errors.Is(err, domain.ErrNotFound) {
		return nil, fmt.Errorf("no application has API key %q", apiKey)
	}
	return app, err
}

func scenarioList(ctx context.Context, s Store, out io.Writer, apiKey, status string) error {
	app, err := appByKey(ctx, s, apiKey)
	if err != nil {
		return err
	}
	if status != "" && !domain.ValidScenarioStatus(status) {
		return fmt.Errorf("--status must be DRAFT, ACTIVE, REVIEWING or REJECT")
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tNAME\tPOOL\tUPDATED")
	for offset := 0; ; offset += 500 {
		list, total, err := s.ListScenarios(ctx, app.ID, status, 500, offset)
		if err != nil {
			return err
		}
		for _, sc := range list {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", sc.ID, sc.Status, sc.Name, sc.CallConfig.PoolHotlineKey, sc.UpdatedAt.Format(time.RFC3339))
		}
		if offset+len(list) >= total || len(list) == 0 {
			break
		}
	}
	return tw.Flush()
}

func contactList(ctx context.Context, s Store, out io.Writer, apiKey string, f domain.ContactFilter, region string) error {
	app, err := appByKey(ctx, s, apiKey)
	if err != nil {
		return err
	}
	if f.Limit < 1 {
		return fmt.Errorf("--limit must be at least 1")
	}
	if f.Phone != "" {
		if f.Phone, err = domain.NormalizePhone(f.Phone, region); err != nil {
			return fmt.Errorf("--phone: %w", err)
		}
	}
	list, next, err := s.Contacts(ctx, app.ID, f)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTACT ID\tPHONE\tSCENARIO\tCAMPAIGN\tSTATE\tATTEMPTS\tOUTCOME\tCREATED")
	for _, c := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", c.ID, c.Phone, c.ScenarioID, dash(c.CampaignID), c.State,
			c.Attempts, dash(c.Outcome), c.CreatedAt.Format(time.RFC3339))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if next != "" {
		fmt.Fprintf(out, "more: --cursor %s\n", next)
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
