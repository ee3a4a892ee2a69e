package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"dialbox/internal/destinations"
	"dialbox/internal/domain"
	"dialbox/internal/script"
	"dialbox/internal/sqldb"
)

// The queries of the public operations and the import; the machinery they
// run on (opening, migrations, the group-commit writer) is in sqlite.go.

func Millis(t time.Time) int64 { return t.UnixMilli() }

func FromMillis(v int64) time.Time { return time.UnixMilli(v).UTC() }

func nullMS(t *time.Time) any {
	if t == nil {
		return nil
	}
	return Millis(*t)
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ---- applications, wallets, pools ----

// Flags are integers 0/1 on both databases; <> 0 reads them as booleans,
// which pgx scans into a bool as database/sql does an integer.
const appColumns = `id, name, api_key, api_secret, disabled <> 0, is_demo <> 0, created_at, updated_at, destination_allow, destination_deny`

func scanApp(row interface{ Scan(...any) error }) (*domain.Application, error) {
	var a domain.Application
	var created, updated int64
	var allow, deny string
	if err := scanErr(row.Scan(&a.ID, &a.Name, &a.APIKey, &a.APISecret, &a.Disabled, &a.IsDemo, &created, &updated, &allow, &deny)); err != nil {
		return nil, err
	}
	a.CreatedAt, a.UpdatedAt = FromMillis(created), FromMillis(updated)
	var err error
	if a.Destinations, err = scanDestinations(allow, deny); err != nil {
		return nil, fmt.Errorf("application %q: %w", a.APIKey, err)
	}
	return &a, nil
}

// scanDestinations reads a tenant's destination rules as stored
// (migration 11): JSON arrays, shown as [] when empty.
func scanDestinations(allow, deny string) (destinations.Rules, error) {
	r := destinations.Rules{Allow: []string{}, Deny: []string{}}
	if err := json.Unmarshal([]byte(allow), &r.Allow); err != nil {
		return r, fmt.Errorf("destination_allow: %w", err)
	}
	if err := json.Unmarshal([]byte(deny), &r.Deny); err != nil {
		return r, fmt.Errorf("destination_deny: %w", err)
	}
	return r, nil
}

// destinationsJSON is how a tenant's rules are stored: each list a JSON
// array, never null.
func destinationsJSON(r destinations.Rules) (allow, deny string) {
	list := func(prefixes []string) string {
		if len(prefixes) == 0 {
			return "[]"
		}
		b, _ := json.Marshal(prefixes) // strings only: cannot fail
		return string(b)
	}
	return list(r.Allow), list(r.Deny)
}

// AppByKey finds an application by its API key, disabled ones included.
func (s *sqlStore) AppByKey(ctx context.Context, apiKey string) (*domain.Application, error) {
	return scanApp(s.db.QueryRow(ctx, `SELECT `+appColumns+` FROM applications WHERE api_key = ?`, apiKey))
}

// DemoApp is the demo tenant made on a first run, if there is one.
func (s *sqlStore) DemoApp(ctx context.Context) (*domain.Application, error) {
	return scanApp(s.db.QueryRow(ctx, `SELECT `+appColumns+` FROM applications WHERE is_demo = 1 ORDER BY id LIMIT 1`))
}

// CountApps counts every application.
func (s *sqlStore) CountApps(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRow(ctx, `SELECT count(*) FROM applications`).Scan(&n)
	return n, err
}

// Wallet returns an application's wallet; an application without one is
// postpaid.
func (s *sqlStore) Wallet(ctx context.Context, appID int64) (domain.Wallet, error) {
	return scanWallet(s.db.QueryRow(ctx, walletQuery, appID))
}

// prepaid <> 0: PostgreSQL's driver scans only a boolean into a bool.
const walletQuery = `SELECT prepaid <> 0, balance, expires_at, price_per_call, price_per_minute FROM wallets WHERE app_id = ?`

func scanWallet(row interface{ Scan(...any) error }) (domain.Wallet, error) {
	var w domain.Wallet
	var expires sql.NullInt64
	err := row.Scan(&w.Prepaid, &w.Balance, &expires, &w.PricePerCall, &w.PricePerMinute)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.Wallet{}, nil
	}
	if expires.Valid {
		t := FromMillis(expires.Int64)
		w.ExpiresAt = &t
	}
	return w, err
}

// WalletExpired reports whether the application's wallet is prepaid and
// past its expiry at now.
func (s *sqlStore) WalletExpired(ctx context.Context, appID int64, now time.Time) (bool, error) {
	w, err := s.Wallet(ctx, appID)
	return w.Expired(now), err
}

// PoolAvailable reports whether the pool has at least one enabled hotline.
func (s *sqlStore) PoolAvailable(ctx context.Context, appID int64, poolKey string) (bool, error) {
	var ok bool
	err := s.db.QueryRow(ctx,
		`SELECT EXISTS (SELECT 1 FROM hotlines WHERE app_id = ? AND pool_key = ? AND enabled = 1)`,
		appID, poolKey).Scan(&ok)
	return ok, err
}

// ---- scenarios and campaigns ----

const scenarioColumns = `app_id, id, name, description, status, content, script, personalized_fields, call_config, created_at, updated_at`

func scanScenario(row interface{ Scan(...any) error }) (*domain.Scenario, error) {
	var sc domain.Scenario
	var scriptJSON, fields, config string
	var created, updated int64
	if err := scanErr(row.Scan(&sc.AppID, &sc.ID, &sc.Name, &sc.Description, &sc.Status, &sc.Content, &scriptJSON, &fields, &config, &created, &updated)); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(fields), &sc.PersonalizedFields); err != nil {
		return nil, fmt.Errorf("scenario %s personalized_fields: %w", sc.ID, err)
	}
	if scriptJSON != "" {
		sc.Script = new(script.Script)
		if err := json.Unmarshal([]byte(scriptJSON), sc.Script); err != nil {
			return nil, fmt.Errorf("scenario %s script: %w", sc.ID, err)
		}
	}
	sc.CallConfig = domain.DefaultCallConfig()
	if err := json.Unmarshal([]byte(config), &sc.CallConfig); err != nil {
		return nil, fmt.Errorf("scenario %s call_config: %w", sc.ID, err)
	}
	sc.CreatedAt, sc.UpdatedAt = FromMillis(created), FromMillis(updated)
	return &sc, nil
}

// Scenario returns the tenant's scenario id, or errNotFound.
func (s *sqlStore) Scenario(ctx context.Context, appID int64, id string) (*domain.Scenario, error) {
	return scanScenario(s.db.QueryRow(ctx,
		`SELECT `+scenarioColumns+` FROM scenarios WHERE app_id = ? AND id = ?`, appID, id))
}

// ListScenarios returns one page of the tenant's scenarios, newest first,
// and how many match in all. status "" matches every status.
func (s *sqlStore) ListScenarios(ctx context.Context, appID int64, status string, limit, offset int) ([]*domain.Scenario, int, error) {
	var total int
	if err := s.db.QueryRow(ctx,
		`SELECT count(*) FROM scenarios WHERE app_id = ? AND (? = '' OR status = ?)`, appID, status, status,
	).Scan(&total); err != nil {
		return nil, 0, err
	}
	// Ties ordered by id byte by byte, on both databases.
	out, err := sqldb.Collect(ctx, s.db, scanScenario, `SELECT `+scenarioColumns+` FROM scenarios
		WHERE app_id = ? AND (? = '' OR status = ?)
		ORDER BY created_at DESC, id`+s.db.Dialect().CollateC()+` LIMIT ? OFFSET ?`, appID, status, status, limit, offset)
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

const campaignColumns = `app_id, id, name, scenario_id, paused <> 0, created_at, updated_at`

func scanCampaign(row interface{ Scan(...any) error }) (*domain.Campaign, error) {
	var c domain.Campaign
	var created, updated int64
	if err := scanErr(row.Scan(&c.AppID, &c.ID, &c.Name, &c.ScenarioID, &c.Paused, &created, &updated)); err != nil {
		return nil, err
	}
	c.CreatedAt, c.UpdatedAt = FromMillis(created), FromMillis(updated)
	return &c, nil
}

// Campaign returns the tenant's campaign id, or errNotFound.
func (s *sqlStore) Campaign(ctx context.Context, appID int64, id string) (*domain.Campaign, error) {
	return scanCampaign(s.db.QueryRow(ctx,
		`SELECT `+campaignColumns+` FROM campaigns WHERE app_id = ? AND id = ?`, appID, id))
}

// ScenarioScript is a scenario with a script, for the checks at start.
type ScenarioScript struct {
	App, ID string // the application's api_key, the scenario's id
	Script  script.Script
}

// ScenarioScripts lists the script of every scenario, of every
// application, that has one.
func (s *sqlStore) ScenarioScripts(ctx context.Context) ([]ScenarioScript, error) {
	return sqldb.Collect(ctx, s.db, func(r sqldb.Row) (ScenarioScript, error) {
		var sc ScenarioScript
		var text string
		if err := r.Scan(&sc.App, &sc.ID, &text); err != nil {
			return sc, err
		}
		if err := json.Unmarshal([]byte(text), &sc.Script); err != nil {
			return sc, fmt.Errorf("scenario %s script: %w", sc.ID, err)
		}
		return sc, nil
	}, `SELECT a.api_key, s.id, s.script FROM scenarios s
		JOIN applications a ON a.id = s.app_id WHERE s.script <> '' ORDER BY a.id, s.id`+s.db.Dialect().CollateC())
}
