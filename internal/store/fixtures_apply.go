package store

import (
	"context"
	"database/sql"
	"dialbox/internal/domain"
	"dialbox/internal/sqldb"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// ---- fixtures ----

// applyFixtureApp upserts one application of a fixtures file (or the demo
// tenant) and everything it owns, changing nothing that already matches.
func applyFixtureApp(ctx context.Context, tx sqldb.Querier, fa *FixtureApp, now time.Time) error {
	at := Millis(now)
	// RETURNING says nothing when nothing changed: the id is read then.
	err := tx.QueryRow(ctx, `INSERT INTO applications (name, api_key, api_secret, is_demo, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (api_key) DO UPDATE SET name = excluded.name, api_secret = excluded.api_secret,
			disabled = 0, updated_at = excluded.updated_at
		WHERE applications.name IS DISTINCT FROM excluded.name OR applications.api_secret IS DISTINCT FROM excluded.api_secret
			OR applications.disabled <> 0
		RETURNING id`, fa.Name, fa.APIKey, fa.APISecret, boolInt(fa.isDemo), at, at).Scan(&fa.ID)
	if errors.Is(err, sql.ErrNoRows) {
		err = tx.QueryRow(ctx, `SELECT id FROM applications WHERE api_key = ?`, fa.APIKey).Scan(&fa.ID)
	}
	if err != nil {
		return fmt.Errorf("application %q: %w", fa.APIKey, err)
	}
	appID := fa.ID

	w := fa.walletOrDefault()
	// The balance is an opening balance: set when the wallet is made, never
	// reset by a restart (calls already charged stay charged).
	if _, err := tx.Exec(ctx, `INSERT INTO wallets (app_id, prepaid, balance, expires_at, price_per_call, price_per_minute, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (app_id) DO UPDATE SET prepaid = excluded.prepaid, expires_at = excluded.expires_at,
			price_per_call = excluded.price_per_call, price_per_minute = excluded.price_per_minute, updated_at = excluded.updated_at
		WHERE wallets.prepaid IS DISTINCT FROM excluded.prepaid OR wallets.expires_at IS DISTINCT FROM excluded.expires_at
			OR wallets.price_per_call IS DISTINCT FROM excluded.price_per_call
			OR wallets.price_per_minute IS DISTINCT FROM excluded.price_per_minute`,
		appID, boolInt(w.Prepaid), w.Balance, nullMS(w.ExpiresAt), w.PricePerCall, w.PricePerMinute, at); err != nil {
		return fmt.Errorf("application %q wallet: %w", fa.APIKey, err)
	}

	if fa.Advertising != nil {
		if err := setAdSettingsTx(ctx, tx, appID, fa.Advertising.settings(), now); err != nil {
			return fmt.Errorf("application %q advertising: %w", fa.APIKey, err)
		}
	}
	if fa.Destinations != nil {
		allow, deny := destinationsJSON(*fa.Destinations)
		if _, err := tx.Exec(ctx, `UPDATE applications SET destination_allow = ?, destination_deny = ?, updated_at = ?
			WHERE id = ? AND (destination_allow <> ? OR destination_deny <> ?)`, allow, deny, at, appID, allow, deny); err != nil {
			return fmt.Errorf("application %q destinations: %w", fa.APIKey, err)
		}
	}

	for _, p := range fa.HotlinePools {
		if _, err := tx.Exec(ctx, `INSERT INTO hotline_pools (app_id, key, trunk, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (app_id, key) DO UPDATE SET trunk = excluded.trunk WHERE hotline_pools.trunk IS DISTINCT FROM excluded.trunk`,
			appID, p.Key, p.Trunk, at); err != nil {
			return fmt.Errorf("hotline pool %q: %w", p.Key, err)
		}
		for _, n := range p.Numbers {
			if _, err := tx.Exec(ctx, `INSERT INTO hotlines (app_id, pool_key, number) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`,
				appID, p.Key, n); err != nil {
				return fmt.Errorf("hotline pool %q number %q: %w", p.Key, n, err)
			}
		}
	}

	for _, sc := range fa.Scenarios {
		if err := upsertScenario(ctx, tx, appID, sc.scenario(appID), at); err != nil {
			return err
		}
	}

	for _, c := range fa.Campaigns {
		if _, err := tx.Exec(ctx, `INSERT INTO campaigns (app_id, id, name, scenario_id, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (app_id, id) DO UPDATE SET name = excluded.name, scenario_id = excluded.scenario_id,
				updated_at = excluded.updated_at
			WHERE campaigns.name IS DISTINCT FROM excluded.name OR campaigns.scenario_id IS DISTINCT FROM excluded.scenario_id`,
			appID, c.ID, c.Name, c.ScenarioID, at, at); err != nil {
			return fmt.Errorf("campaign %q: %w", c.ID, err)
		}
	}

	for _, wh := range fa.Webhooks {
		if err := upsertFixtureWebhook(ctx, tx, appID, wh, at); err != nil {
			return err
		}
	}

	// The tenant's own do-not-call numbers; numbers listed otherwise (an
	// opt-out, the admin API) stay (docs/compliance.md#fixtures).
	if d := fa.DNC; d != nil && len(d.Numbers) > 0 {
		if d.numbers == nil {
			return fmt.Errorf("application %q: the do-not-call numbers were not read (FixtureFile.readDNC)", fa.APIKey)
		}
		id, err := currentList(ctx, tx, appID, now)
		if err != nil {
			return err
		}
		if _, err := addDNCNumbers(ctx, tx, id, d.numbers, at); err != nil {
			return fmt.Errorf("application %q do-not-call list: %w", fa.APIKey, err)
		}
	}
	return nil
}

// scriptColumn is the scenarios.script value: the script's JSON, or ” for
// plain content.
func scriptColumn(sc *domain.Scenario) (string, error) {
	if sc.Script == nil {
		return "", nil
	}
	b, err := domain.MarshalJSON(sc.Script)
	return string(b), err
}

func upsertScenario(ctx context.Context, tx sqldb.Querier, appID int64, sc *domain.Scenario, at int64) error {
	fields, config, scriptJSON, err := scenarioJSONColumns(sc)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO scenarios (app_id, id, name, description, status, content, script, personalized_fields, call_config, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (app_id, id) DO UPDATE SET name = excluded.name, description = excluded.description,
			status = excluded.status, content = excluded.content, script = excluded.script,
			personalized_fields = excluded.personalized_fields,
			call_config = excluded.call_config, updated_at = excluded.updated_at
		WHERE scenarios.name IS DISTINCT FROM excluded.name OR scenarios.description IS DISTINCT FROM excluded.description
			OR scenarios.status IS DISTINCT FROM excluded.status OR scenarios.content IS DISTINCT FROM excluded.content
			OR scenarios.script IS DISTINCT FROM excluded.script
			OR scenarios.personalized_fields IS DISTINCT FROM excluded.personalized_fields
			OR scenarios.call_config IS DISTINCT FROM excluded.call_config`,
		appID, sc.ID, sc.Name, sc.Description, sc.Status, sc.Content, scriptJSON, fields, config, at, at); err != nil {
		return fmt.Errorf("scenario %q: %w", sc.ID, err)
	}
	return nil
}

func upsertFixtureWebhook(ctx context.Context, tx sqldb.Querier, appID int64, wh FixtureWebhook, at int64) error {
	events, err := domain.MarshalJSON(wh.Events)
	if err != nil {
		return err
	}
	if wh.Events == nil {
		events = []byte("[]")
	}
	enabled := boolInt(wh.Enabled == nil || *wh.Enabled)
	var id string
	err = tx.QueryRow(ctx, `SELECT id FROM webhook_endpoints WHERE app_id = ? AND url = ?`, appID, wh.URL).Scan(&id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		_, err = tx.Exec(ctx, `INSERT INTO webhook_endpoints (id, app_id, url, secret, events, enabled, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, uuid.NewString(), appID, wh.URL, wh.Secret, string(events), enabled, at, at)
	case err == nil:
		_, err = tx.Exec(ctx, `UPDATE webhook_endpoints SET secret = ?, events = ?, enabled = ?, updated_at = ?
			WHERE id = ? AND (secret IS DISTINCT FROM ? OR events IS DISTINCT FROM ? OR enabled IS DISTINCT FROM ?)`,
			wh.Secret, string(events), enabled, at, id, wh.Secret, string(events), enabled)
	}
	if err != nil {
		return fmt.Errorf("webhook %q: %w", wh.URL, err)
	}
	return nil
}
