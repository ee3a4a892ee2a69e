package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"dialbox/internal/sqldb"
)

// Fixtures on PostgreSQL: applyFixtureApp's upserts (store.go) in
// PostgreSQL's SQL, with the same rule that nothing already matching is
// rewritten and an opening balance is never reset.

// ApplyFixtures upserts every application of the file in one transaction.
// Configuration writes are rare; they commit on their own, outside the
// imports' group commit, and every node hears of them (configWrite).
func (s *PostgresStore) ApplyFixtures(ctx context.Context, apps []*FixtureApp, now time.Time) error {
	return s.configWrite(ctx, func(tx pgx.Tx) error {
		for _, fa := range apps {
			if err := pgApplyFixtureApp(ctx, tx, fa, now); err != nil {
				return err
			}
		}
		return nil
	})
}

func pgApplyFixtureApp(ctx context.Context, tx pgx.Tx, fa *FixtureApp, now time.Time) error {
	at := ms(now)
	if err := tx.QueryRow(ctx, `INSERT INTO applications (name, api_key, api_secret, is_demo, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $5)
		ON CONFLICT (api_key) DO UPDATE SET name = excluded.name, api_secret = excluded.api_secret,
			disabled = 0, updated_at = excluded.updated_at
		WHERE applications.name IS DISTINCT FROM excluded.name OR applications.api_secret IS DISTINCT FROM excluded.api_secret
			OR applications.disabled <> 0
		RETURNING id`, fa.Name, fa.APIKey, fa.APISecret, boolInt(fa.isDemo), at).Scan(&fa.id); errors.Is(err, pgx.ErrNoRows) {
		// Nothing changed, so nothing was returned.
		if err := tx.QueryRow(ctx, `SELECT id FROM applications WHERE api_key = $1`, fa.APIKey).Scan(&fa.id); err != nil {
			return err
		}
	} else if err != nil {
		return fmt.Errorf("application %q: %w", fa.APIKey, err)
	}
	appID := fa.id

	w := fa.walletOrDefault()
	if _, err := tx.Exec(ctx, `INSERT INTO wallets (app_id, prepaid, balance, expires_at, price_per_call, price_per_minute, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (app_id) DO UPDATE SET prepaid = excluded.prepaid, expires_at = excluded.expires_at,
			price_per_call = excluded.price_per_call, price_per_minute = excluded.price_per_minute, updated_at = excluded.updated_at
		WHERE wallets.prepaid IS DISTINCT FROM excluded.prepaid OR wallets.expires_at IS DISTINCT FROM excluded.expires_at
			OR wallets.price_per_call IS DISTINCT FROM excluded.price_per_call
			OR wallets.price_per_minute IS DISTINCT FROM excluded.price_per_minute`,
		appID, boolInt(w.Prepaid), w.Balance, nullMS(w.ExpiresAt), w.PricePerCall, w.PricePerMinute, at); err != nil {
		return fmt.Errorf("application %q wallet: %w", fa.APIKey, err)
	}

	if fa.Advertising != nil {
		if err := setAdSettingsTx(ctx, sqldb.PGX(tx), appID, fa.Advertising.settings(), now); err != nil {
			return fmt.Errorf("application %q advertising: %w", fa.APIKey, err)
		}
	}
	if fa.Destinations != nil {
		allow, deny := destinationsJSON(*fa.Destinations)
		if _, err := tx.Exec(ctx, `UPDATE applications SET destination_allow = $1, destination_deny = $2, updated_at = $3
			WHERE id = $4 AND (destination_allow <> $1 OR destination_deny <> $2)`, allow, deny, at, appID); err != nil {
			return fmt.Errorf("application %q destinations: %w", fa.APIKey, err)
		}
	}

	for _, p := range fa.HotlinePools {
		if _, err := tx.Exec(ctx, `INSERT INTO hotline_pools (app_id, key, trunk, created_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (app_id, key) DO UPDATE SET trunk = excluded.trunk WHERE hotline_pools.trunk IS DISTINCT FROM excluded.trunk`,
			appID, p.Key, p.Trunk, at); err != nil {
			return fmt.Errorf("hotline pool %q: %w", p.Key, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO hotlines (app_id, pool_key, number)
			SELECT $1, $2, n FROM unnest($3::text[]) AS n ON CONFLICT DO NOTHING`, appID, p.Key, p.Numbers); err != nil {
			return fmt.Errorf("hotline pool %q numbers: %w", p.Key, err)
		}
	}

	for _, fs := range fa.Scenarios {
		sc := fs.scenario(appID)
		fields, config, scriptJSON, err := scenarioJSONColumns(sc)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO scenarios (app_id, id, name, description, status, content, script, personalized_fields, call_config, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)
			ON CONFLICT (app_id, id) DO UPDATE SET name = excluded.name, description = excluded.description,
				status = excluded.status, content = excluded.content, script = excluded.script,
				personalized_fields = excluded.personalized_fields,
				call_config = excluded.call_config, updated_at = excluded.updated_at
			WHERE (scenarios.name, scenarios.description, scenarios.status, scenarios.content, scenarios.script,
				scenarios.personalized_fields, scenarios.call_config)
				IS DISTINCT FROM (excluded.name, excluded.description, excluded.status, excluded.content, excluded.script,
				excluded.personalized_fields, excluded.call_config)`,
			appID, sc.ID, sc.Name, sc.Description, sc.Status, sc.Content, scriptJSON, fields, config, at); err != nil {
			return fmt.Errorf("scenario %q: %w", sc.ID, err)
		}
	}

	for _, c := range fa.Campaigns {
		if _, err := tx.Exec(ctx, `INSERT INTO campaigns (app_id, id, name, scenario_id, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $5)
			ON CONFLICT (app_id, id) DO UPDATE SET name = excluded.name, scenario_id = excluded.scenario_id,
				updated_at = excluded.updated_at
			WHERE (campaigns.name, campaigns.scenario_id) IS DISTINCT FROM (excluded.name, excluded.scenario_id)`,
			appID, c.ID, c.Name, c.ScenarioID, at); err != nil {
			return fmt.Errorf("campaign %q: %w", c.ID, err)
		}
	}

	for _, wh := range fa.Webhooks {
		events, err := marshalJSON(wh.Events)
		if err != nil {
			return err
		}
		if wh.Events == nil {
			events = []byte("[]")
		}
		enabled := boolInt(wh.Enabled == nil || *wh.Enabled)
		var id string
		err = tx.QueryRow(ctx, `SELECT id FROM webhook_endpoints WHERE app_id = $1 AND url = $2`, appID, wh.URL).Scan(&id)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			_, err = tx.Exec(ctx, `INSERT INTO webhook_endpoints (id, app_id, url, secret, events, enabled, created_at, updated_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $7)`, uuid.NewString(), appID, wh.URL, wh.Secret, string(events), enabled, at)
		case err == nil:
			_, err = tx.Exec(ctx, `UPDATE webhook_endpoints SET secret = $1, events = $2, enabled = $3, updated_at = $4
				WHERE id = $5 AND (secret, events, enabled) IS DISTINCT FROM ($1, $2, $3)`,
				wh.Secret, string(events), enabled, at, id)
		}
		if err != nil {
			return fmt.Errorf("webhook %q: %w", wh.URL, err)
		}
	}

	// The tenant's own do-not-call numbers; numbers listed otherwise (an
	// opt-out, the admin API) stay (docs/compliance.md#fixtures).
	if d := fa.DNC; d != nil && len(d.Numbers) > 0 {
		if d.numbers == nil {
			return fmt.Errorf("application %q: the do-not-call numbers were not read (FixtureFile.readDNC)", fa.APIKey)
		}
		id, err := currentList(ctx, sqldb.PGX(tx), appID, now)
		if err != nil {
			return err
		}
		if _, err := addDNCNumbers(ctx, sqldb.PGX(tx), id, d.numbers, at); err != nil {
			return fmt.Errorf("application %q do-not-call list: %w", fa.APIKey, err)
		}
	}
	return nil
}
