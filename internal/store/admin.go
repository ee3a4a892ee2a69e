package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"dialbox/internal/destinations"
	"dialbox/internal/domain"
	"dialbox/internal/sqldb"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// The admin API's reads and writes, written once on sqlStore for both
// stores (docs/architecture.md#one-query-layer): settings, applications,
// wallets, pools, scenarios and campaigns here; contacts, calls and imports
// in admin_contacts.go; webhook endpoints and messages in
// admin_webhooks.go. Configuration writes go through writeConfig, so
// every cache (every node's, on PostgreSQL) hears of them.

// isUniqueViolation reports a unique or primary key constraint refusing a
// row, on either database.
func isUniqueViolation(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// changed turns "no row was updated" into errNotFound.
func changed(r sql.Result, err error) error {
	if err != nil {
		return err
	}
	if n, _ := r.RowsAffected(); n == 0 {
		return domain.ErrNotFound
	}
	return nil
}

// changedRows is changed for a Querier's Exec.
func changedRows(n int64, err error) error {
	if err == nil && n == 0 {
		return domain.ErrNotFound
	}
	return err
}

// ---- admin settings ----

// AdminSetting returns a value of admin_settings, or "" when unset.
func (s *sqlStore) AdminSetting(ctx context.Context, key string) (string, error) {
	var v string
	err := s.db.QueryRow(ctx, `SELECT value FROM admin_settings WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return v, err
}

func (s *sqlStore) SetAdminSetting(ctx context.Context, key, value string) error {
	return s.writeConfig(ctx, func(tx sqldb.Querier) error {
		_, err := tx.Exec(ctx, `INSERT INTO admin_settings (key, value) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
		return err
	})
}

// DeleteAdminSettings removes the keys, in one commit; a missing one is
// no error. On SQLite secure_delete zeroes what they held: a removed token
// must not stay readable in the file's free pages (docs/admin.md#token).
func (s *sqlStore) DeleteAdminSettings(ctx context.Context, keys ...string) error {
	return s.writeConfig(ctx, func(tx sqldb.Querier) error {
		sqliteFile := tx.Dialect() == sqldb.SQLite
		if sqliteFile {
			if _, err := tx.Exec(ctx, `PRAGMA secure_delete = ON`); err != nil {
				return err
			}
		}
		var err error
		for _, key := range keys {
			if _, err = tx.Exec(ctx, `DELETE FROM admin_settings WHERE key = ?`, key); err != nil {
				break
			}
		}
		if !sqliteFile {
			return err
		}
		// The writer's other deletes need not pay for zeroing.
		_, off := tx.Exec(ctx, `PRAGMA secure_delete = OFF`)
		return errors.Join(err, off)
	})
}

// RepointDemoSink points the demo tenant's sink webhook, made by an older
// dialbox with a server's address, at url. dialbox wrote those addresses in
// lower case, so LIKE's case rules (SQLite ignores ASCII case) do not matter.
func (s *sqlStore) RepointDemoSink(ctx context.Context, appID int64, url string, now time.Time) error {
	return s.writeConfig(ctx, func(tx sqldb.Querier) error {
		_, err := tx.Exec(ctx, `UPDATE webhook_endpoints SET url = ?, updated_at = ?
			WHERE app_id = ? AND url LIKE '%/sink/demo' AND url <> ?`, url, Millis(now), appID, url)
		return err
	})
}

// ---- applications ----

// ListApps returns every application, oldest first.
func (s *sqlStore) ListApps(ctx context.Context) ([]*domain.Application, error) {
	return sqldb.Collect(ctx, s.db, scanApp, `SELECT `+appColumns+` FROM applications ORDER BY id`)
}

// CreateApp adds an application with a postpaid wallet; errConflict when the
// API key is taken.
func (s *sqlStore) CreateApp(ctx context.Context, name, apiKey, apiSecret string, rules destinations.Rules, now time.Time) (*domain.Application, error) {
	allow, deny := destinationsJSON(rules)
	err := s.writeConfig(ctx, func(tx sqldb.Querier) error {
		var id int64
		err := tx.QueryRow(ctx, `INSERT INTO applications (name, api_key, api_secret, created_at, updated_at, destination_allow, destination_deny)
			VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`, name, apiKey, apiSecret, Millis(now), Millis(now), allow, deny).Scan(&id)
		if isUniqueViolation(err) {
			return domain.ErrConflict
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO wallets (app_id, prepaid, updated_at) VALUES (?, 0, ?)`, id, Millis(now))
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.AppByKey(ctx, apiKey)
}

// destinationColumns are p's rules as stored, nil for each when p keeps them.
func destinationColumns(p domain.AppPatch) (allow, deny *string) {
	if p.Destinations == nil {
		return nil, nil
	}
	a, d := destinationsJSON(*p.Destinations)
	return &a, &d
}

func (s *sqlStore) UpdateApp(ctx context.Context, apiKey string, p domain.AppPatch, now time.Time) (*domain.Application, error) {
	var disabled *int // the flag's 0/1, as stored on both databases
	if p.Disabled != nil {
		d := boolInt(*p.Disabled)
		disabled = &d
	}
	allow, deny := destinationColumns(p)
	err := s.writeConfig(ctx, func(tx sqldb.Querier) error {
		return changedRows(tx.Exec(ctx, `UPDATE applications SET name = coalesce(?, name), api_secret = coalesce(?, api_secret),
			disabled = coalesce(?, disabled), destination_allow = coalesce(?, destination_allow),
			destination_deny = coalesce(?, destination_deny), updated_at = ? WHERE api_key = ?`,
			p.Name, p.APISecret, disabled, allow, deny, Millis(now), apiKey))
	})
	if err != nil {
		return nil, err
	}
	return s.AppByKey(ctx, apiKey)
}

// ---- wallets ----

// UpdateWallet changes an application's wallet in one transaction, so a
// call charged meanwhile is not overwritten, and returns the result.
func (s *sqlStore) UpdateWallet(ctx context.Context, appID int64, change func(*domain.Wallet), now time.Time) (domain.Wallet, error) {
	var w domain.Wallet
	err := s.writeConfig(ctx, func(tx sqldb.Querier) error {
		query := walletQuery
		if tx.Dialect() == sqldb.Postgres {
			// A call charged meanwhile, on any node, waits for this; SQLite's
			// one writer needs no lock.
			query += ` FOR UPDATE`
		}
		var err error
		if w, err = scanWallet(tx.QueryRow(ctx, query, appID)); err != nil {
			return err
		}
		change(&w)
		_, err = tx.Exec(ctx, `INSERT INTO wallets (app_id, prepaid, balance, expires_at, price_per_call, price_per_minute, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (app_id) DO UPDATE SET prepaid = excluded.prepaid, balance = excluded.balance,
				expires_at = excluded.expires_at, price_per_call = excluded.price_per_call,
				price_per_minute = excluded.price_per_minute, updated_at = excluded.updated_at`,
			appID, boolInt(w.Prepaid), w.Balance, nullMS(w.ExpiresAt), w.PricePerCall, w.PricePerMinute, Millis(now))
		return err
	})
	return w, err
}

// TopUp adds amount to the balance in one statement, so a call charged at
// the same moment is not lost. A balance is data, not configuration (no
// cache holds it), so this is a data write.
func (s *sqlStore) TopUp(ctx context.Context, appID int64, amount int64, now time.Time) error {
	return s.writeData(ctx, func(tx sqldb.Querier) error {
		_, err := tx.Exec(ctx, `INSERT INTO wallets (app_id, prepaid, balance, updated_at) VALUES (?, 0, ?, ?)
			ON CONFLICT (app_id) DO UPDATE SET balance = wallets.balance + excluded.balance, updated_at = excluded.updated_at`,
			appID, amount, Millis(now))
		return err
	})
}

// ---- hotline pools ----

// Pools returns the application's pools with their numbers; key "" means all.
func (s *sqlStore) Pools(ctx context.Context, appID int64, key string) ([]*domain.Pool, error) {
	c := s.db.Dialect().CollateC()
	out := []*domain.Pool{}
	err := s.db.Query(ctx, `SELECT p.key, p.trunk, p.created_at, h.number, h.enabled <> 0
		FROM hotline_pools p LEFT JOIN hotlines h ON h.app_id = p.app_id AND h.pool_key = p.key
		WHERE p.app_id = ? AND (? = '' OR p.key = ?)
		ORDER BY p.key`+c+`, h.number`+c, []any{appID, key, key}, func(scan func(...any) error) error {
		var k, trunk string
		var created int64
		var number sql.NullString
		var enabled sql.NullBool
		if err := scan(&k, &trunk, &created, &number, &enabled); err != nil {
			return err
		}
		if len(out) == 0 || out[len(out)-1].Key != k {
			out = append(out, &domain.Pool{Key: k, Trunk: trunk, Numbers: []domain.Hotline{}, CreatedAt: FromMillis(created)})
		}
		if number.Valid {
			p := out[len(out)-1]
			p.Numbers = append(p.Numbers, domain.Hotline{Number: number.String, Enabled: enabled.Bool})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PoolTrunk is a pool that names its trunk.
type PoolTrunk struct{ App, Key, Trunk string }

// PoolTrunks lists every pool, of every application, that names a trunk.
func (s *sqlStore) PoolTrunks(ctx context.Context) ([]PoolTrunk, error) {
	return sqldb.Collect(ctx, s.db, func(r sqldb.Row) (PoolTrunk, error) {
		var p PoolTrunk
		err := r.Scan(&p.App, &p.Key, &p.Trunk)
		return p, err
	}, `SELECT a.api_key, p.key, p.trunk FROM hotline_pools p
		JOIN applications a ON a.id = p.app_id WHERE p.trunk <> '' ORDER BY a.id, p.key`+s.db.Dialect().CollateC())
}

// CreatePool adds a pool calling through trunk ("" for the first) with its
// numbers; errConflict when the key is taken.
func (s *sqlStore) CreatePool(ctx context.Context, appID int64, key, trunk string, numbers []string, now time.Time) error {
	return s.writeConfig(ctx, func(tx sqldb.Querier) error {
		_, err := tx.Exec(ctx, `INSERT INTO hotline_pools (app_id, key, trunk, created_at) VALUES (?, ?, ?, ?)`, appID, key, trunk, Millis(now))
		if isUniqueViolation(err) {
			return domain.ErrConflict
		}
		if err != nil {
			return err
		}
		return insertHotlines(ctx, tx, appID, key, numbers)
	})
}

// hotlinesPerInsert bounds the rows of one INSERT, well under either
// database's limit on a statement's parameters.
const hotlinesPerInsert = 500

// insertHotlines adds numbers to a pool, in order, a few hundred rows a
// statement (one round trip each on PostgreSQL); those already there stay.
func insertHotlines(ctx context.Context, tx sqldb.Querier, appID int64, pool string, numbers []string) error {
	for len(numbers) > 0 {
		chunk := numbers[:min(len(numbers), hotlinesPerInsert)]
		numbers = numbers[len(chunk):]
		args := make([]any, 0, 3*len(chunk))
		for _, n := range chunk {
			args = append(args, appID, pool, n)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO hotlines (app_id, pool_key, number) VALUES (?, ?, ?)`+
			strings.Repeat(`, (?, ?, ?)`, len(chunk)-1)+` ON CONFLICT DO NOTHING`, args...); err != nil {
			return err
		}
	}
	return nil
}

func (s *sqlStore) DeletePool(ctx context.Context, appID int64, key string) error {
	return s.writeConfig(ctx, func(tx sqldb.Querier) error {
		return changedRows(tx.Exec(ctx, `DELETE FROM hotline_pools WHERE app_id = ? AND key = ?`, appID, key))
	})
}

// AddHotlines adds numbers (enabled) to an existing pool; numbers already
// there are left as they are.
func (s *sqlStore) AddHotlines(ctx context.Context, appID int64, pool string, numbers []string) error {
	return s.writeConfig(ctx, func(tx sqldb.Querier) error {
		var ok bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM hotline_pools WHERE app_id = ? AND key = ?)`, appID, pool).Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return domain.ErrNotFound
		}
		return insertHotlines(ctx, tx, appID, pool, numbers)
	})
}

func (s *sqlStore) RemoveHotline(ctx context.Context, appID int64, pool, number string) error {
	return s.writeConfig(ctx, func(tx sqldb.Querier) error {
		return changedRows(tx.Exec(ctx, `DELETE FROM hotlines WHERE app_id = ? AND pool_key = ? AND number = ?`, appID, pool, number))
	})
}

func (s *sqlStore) SetHotlineEnabled(ctx context.Context, appID int64, pool, number string, enabled bool) error {
	return s.writeConfig(ctx, func(tx sqldb.Querier) error {
		return changedRows(tx.Exec(ctx, `UPDATE hotlines SET enabled = ? WHERE app_id = ? AND pool_key = ? AND number = ?`,
			boolInt(enabled), appID, pool, number))
	})
}

// ---- scenarios ----

// CreateScenario adds a scenario; errConflict when the id is taken.
func (s *sqlStore) CreateScenario(ctx context.Context, sc *domain.Scenario, now time.Time) error {
	fields, config, scriptJSON, err := scenarioJSONColumns(sc)
	if err != nil {
		return err
	}
	return s.writeConfig(ctx, func(tx sqldb.Querier) error {
		_, err := tx.Exec(ctx, `INSERT INTO scenarios (app_id, id, name, description, status, content, script, personalized_fields, call_config, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			sc.AppID, sc.ID, sc.Name, sc.Description, sc.Status, sc.Content, scriptJSON, fields, config, Millis(now), Millis(now))
		if isUniqueViolation(err) {
			return domain.ErrConflict
		}
		return err
	})
}

// UpdateScenario stores a scenario's editable fields (not its status).
func (s *sqlStore) UpdateScenario(ctx context.Context, sc *domain.Scenario, now time.Time) error {
	fields, config, scriptJSON, err := scenarioJSONColumns(sc)
	if err != nil {
		return err
	}
	return s.writeConfig(ctx, func(tx sqldb.Querier) error {
		return changedRows(tx.Exec(ctx, `UPDATE scenarios SET name = ?, description = ?, content = ?, script = ?, personalized_fields = ?,
			call_config = ?, updated_at = ? WHERE app_id = ? AND id = ?`,
			sc.Name, sc.Description, sc.Content, scriptJSON, fields, config, Millis(now), sc.AppID, sc.ID))
	})
}

func scenarioJSONColumns(sc *domain.Scenario) (fields, config, scriptJSON string, err error) {
	f, err := domain.MarshalJSON(sc.PersonalizedFields)
	if err != nil {
		return "", "", "", err
	}
	c, err := domain.MarshalJSON(sc.CallConfig)
	if err != nil {
		return "", "", "", err
	}
	scriptJSON, err = scriptColumn(sc)
	return string(f), string(c), scriptJSON, err
}

// TransitionScenario moves a scenario to status to if it is in one of from.
func (s *sqlStore) TransitionScenario(ctx context.Context, appID int64, id string, from []string, to string, now time.Time) error {
	return s.writeConfig(ctx, func(tx sqldb.Querier) error {
		args := []any{to, Millis(now), appID, id}
		for _, f := range from {
			args = append(args, f)
		}
		err := changedRows(tx.Exec(ctx, `UPDATE scenarios SET status = ?, updated_at = ?
			WHERE app_id = ? AND id = ? AND status IN (?`+strings.Repeat(", ?", len(from)-1)+`)`, args...))
		if !errors.Is(err, domain.ErrNotFound) {
			return err
		}
		var current string
		err = tx.QueryRow(ctx, `SELECT status FROM scenarios WHERE app_id = ? AND id = ?`, appID, id).Scan(&current)
		if errors.Is(err, sql.ErrNoRows) {
			return domain.ErrNotFound
		}
		if err != nil {
			return err
		}
		return domain.ErrBadTransition{Status: current}
	})
}

// ---- campaigns ----

func (s *sqlStore) ListCampaigns(ctx context.Context, appID int64, scenarioID string) ([]*domain.Campaign, error) {
	return sqldb.Collect(ctx, s.db, scanCampaign, `SELECT `+campaignColumns+` FROM campaigns
		WHERE app_id = ? AND (? = '' OR scenario_id = ?) ORDER BY created_at, id`+s.db.Dialect().CollateC(),
		appID, scenarioID, scenarioID)
}

// CreateCampaign adds a campaign of an existing scenario; errConflict when
// the id is taken.
func (s *sqlStore) CreateCampaign(ctx context.Context, c *domain.Campaign, now time.Time) error {
	return s.writeConfig(ctx, func(tx sqldb.Querier) error {
		_, err := tx.Exec(ctx, `INSERT INTO campaigns (app_id, id, name, scenario_id, paused, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			c.AppID, c.ID, c.Name, c.ScenarioID, boolInt(c.Paused), Millis(now), Millis(now))
		if isUniqueViolation(err) {
			return domain.ErrConflict
		}
		return err
	})
}

func (s *sqlStore) SetCampaignPaused(ctx context.Context, appID int64, id string, paused bool, now time.Time) error {
	return s.writeConfig(ctx, func(tx sqldb.Querier) error {
		return changedRows(tx.Exec(ctx, `UPDATE campaigns SET paused = ?, updated_at = ? WHERE app_id = ? AND id = ?`,
			boolInt(paused), Millis(now), appID, id))
	})
}

// QueuedOfCampaign returns up to limit contacts of a campaign still
// queued, oldest first: the next ones a stop ends (docs/admin.md#campaigns).
func (s *sqlStore) QueuedOfCampaign(ctx context.Context, appID int64, scenarioID, campaignID string, limit int) ([]domain.DueContact, error) {
	return sqldb.Collect(ctx, s.db, func(row sqldb.Row) (domain.DueContact, error) {
		var c domain.DueContact
		err := row.Scan(&c.Seq, &c.Phone, &c.Fields, &c.Campaign)
		return c, err
	}, `SELECT seq, phone, fields, campaign_id FROM contacts
		WHERE app_id = ? AND scenario_id = ? AND campaign_id = ? AND state = 'queued' ORDER BY seq LIMIT ?`,
		appID, scenarioID, campaignID, limit)
}

// ---- deletes and reset ----

// Deleting an application or a scenario deletes its calls, whose
// recordings go once the delete has committed: each store's
// deleteWithRecordings holds its remover of recordings (recordings.go,
// postgres_admin.go), so DeleteApp, DeleteScenario and Reset stay
// each store's, over this SQL written once.
const (
	appRecordings = `SELECT id FROM calls WHERE recording_bytes > 0
		AND app_id = (SELECT id FROM applications WHERE api_key = ?)`
	deleteAppSQL       = `DELETE FROM applications WHERE api_key = ?`
	scenarioRecordings = `SELECT c.id FROM calls c JOIN contacts k ON k.seq = c.contact_seq
		WHERE c.recording_bytes > 0 AND k.app_id = ? AND k.scenario_id = ?`
	deleteScenarioSQL = `DELETE FROM scenarios WHERE app_id = ? AND id = ?`
	allRecordings     = `SELECT id FROM calls WHERE recording_bytes > 0`
)

// DeleteApp removes an application and everything it owns, its calls'
// recordings included.
func (s *SQLite) DeleteApp(ctx context.Context, apiKey string) error {
	return s.deleteWithRecordings(ctx, appRecordings, []any{apiKey}, func(tx sqldb.SQLQueryer) error {
		return changed(tx.ExecContext(ctx, deleteAppSQL, apiKey))
	})
}

// DeleteScenario removes a scenario with its campaigns and contacts, and
// their calls' recordings.
func (s *SQLite) DeleteScenario(ctx context.Context, appID int64, id string) error {
	return s.deleteWithRecordings(ctx, scenarioRecordings, []any{appID, id}, func(tx sqldb.SQLQueryer) error {
		return changed(tx.ExecContext(ctx, deleteScenarioSQL, appID, id))
	})
}

// resetTables lists every table of tenant data, children first; the admin
// settings survive a reset.
var resetTables = []string{
	"webhook_attempts", "webhook_messages", "webhook_endpoints", "call_blocks", "calls", "contacts", "skipped_contacts",
	"imports", "campaigns", "scenarios", "hotlines", "hotline_pools", "wallets", "advertising_settings", "applications",
}

// Reset wipes every tenant (and the recordings of their calls) and applies
// apps, in one transaction.
func (s *SQLite) Reset(ctx context.Context, apps []*FixtureApp, now time.Time) error {
	return s.deleteWithRecordings(ctx, allRecordings, nil, func(tx sqldb.SQLQueryer) error {
		for _, t := range resetTables {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+t); err != nil {
				return fmt.Errorf("reset %s: %w", t, err)
			}
		}
		for _, fa := range apps {
			if err := applyFixtureApp(ctx, sqldb.SQLShared(tx), fa, now); err != nil {
				return err
			}
		}
		return nil
	})
}
