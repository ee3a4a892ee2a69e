package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"dialbox/internal/destinations"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// The admin API's reads and writes. Every write goes through SQLiteStore.Write
// like the public API's, so admin changes share the group commit.

func isUniqueViolation(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) &&
		(se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY)
}

// changed turns "no row was updated" into errNotFound.
func changed(r sql.Result, err error) error {
	if err != nil {
		return err
	}
	if n, _ := r.RowsAffected(); n == 0 {
		return errNotFound
	}
	return nil
}

// ---- admin settings ----

// AdminSetting returns a value of admin_settings, or "" when unset.
func (s *SQLiteStore) AdminSetting(ctx context.Context, key string) (string, error) {
	var v string
	err := s.read.QueryRowContext(ctx, `SELECT value FROM admin_settings WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return v, err
}

func (s *SQLiteStore) SetAdminSetting(ctx context.Context, key, value string) error {
	return s.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO admin_settings (key, value) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
		return err
	})
}

// DeleteAdminSettings removes the keys, in one commit; a missing one is
// no error. secure_delete zeroes what they held: a removed token must not
// stay readable in the file's free pages (docs/admin.md#token).
func (s *SQLiteStore) DeleteAdminSettings(ctx context.Context, keys ...string) error {
	return s.Write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.Exec(`PRAGMA secure_delete = ON`); err != nil {
			return err
		}
		var err error
		for _, key := range keys {
			if _, err = tx.Exec(`DELETE FROM admin_settings WHERE key = ?`, key); err != nil {
				break
			}
		}
		// The writer's other deletes need not pay for zeroing.
		_, off := tx.Exec(`PRAGMA secure_delete = OFF`)
		return errors.Join(err, off)
	})
}

// RepointDemoSink points the demo tenant's sink webhook, made by an older
// dialbox with a server's address, at url.
func (s *SQLiteStore) RepointDemoSink(ctx context.Context, appID int64, url string, now time.Time) error {
	return s.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`UPDATE webhook_endpoints SET url = ?, updated_at = ?
			WHERE app_id = ? AND url LIKE '%/sink/demo' AND url <> ?`, url, ms(now), appID, url)
		return err
	})
}

// ---- applications ----

// ListApps returns every application, oldest first.
func (s *SQLiteStore) ListApps(ctx context.Context) ([]*Application, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT `+appColumns+` FROM applications ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*Application{}
	for rows.Next() {
		a, err := scanApp(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// CreateApp adds an application with a postpaid wallet; errConflict when the
// API key is taken.
func (s *SQLiteStore) CreateApp(ctx context.Context, name, apiKey, apiSecret string, rules destinations.Rules, now time.Time) (*Application, error) {
	allow, deny := destinationsJSON(rules)
	err := s.Write(ctx, func(tx *sql.Tx) error {
		r, err := tx.Exec(`INSERT INTO applications (name, api_key, api_secret, created_at, updated_at, destination_allow, destination_deny)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, name, apiKey, apiSecret, ms(now), ms(now), allow, deny)
		if isUniqueViolation(err) {
			return errConflict
		}
		if err != nil {
			return err
		}
		id, err := r.LastInsertId()
		if err != nil {
			return err
		}
		_, err = tx.Exec(`INSERT INTO wallets (app_id, prepaid, updated_at) VALUES (?, 0, ?)`, id, ms(now))
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.AppByKey(ctx, apiKey)
}

// AppPatch holds the application fields an update sets; nil leaves one as is.
type AppPatch struct {
	Name      *string
	APISecret *string
	Disabled  *bool
	// Destinations replaces both of the tenant's lists of prefixes.
	Destinations *destinations.Rules
}

// destinationColumns are p's rules as stored, nil for each when p keeps them.
func (p AppPatch) destinationColumns() (allow, deny *string) {
	if p.Destinations == nil {
		return nil, nil
	}
	a, d := destinationsJSON(*p.Destinations)
	return &a, &d
}

func (s *SQLiteStore) UpdateApp(ctx context.Context, apiKey string, p AppPatch, now time.Time) (*Application, error) {
	allow, deny := p.destinationColumns()
	err := s.Write(ctx, func(tx *sql.Tx) error {
		return changed(tx.Exec(`UPDATE applications SET name = coalesce(?, name), api_secret = coalesce(?, api_secret),
			disabled = coalesce(?, disabled), destination_allow = coalesce(?, destination_allow),
			destination_deny = coalesce(?, destination_deny), updated_at = ? WHERE api_key = ?`,
			p.Name, p.APISecret, p.Disabled, allow, deny, ms(now), apiKey))
	})
	if err != nil {
		return nil, err
	}
	return s.AppByKey(ctx, apiKey)
}

// DeleteApp removes an application and everything it owns, its calls'
// recordings included.
func (s *SQLiteStore) DeleteApp(ctx context.Context, apiKey string) error {
	return s.deleteWithRecordings(ctx, `SELECT id FROM calls WHERE recording_bytes > 0
		AND app_id = (SELECT id FROM applications WHERE api_key = ?)`, []any{apiKey}, func(tx *sql.Tx) error {
		return changed(tx.Exec(`DELETE FROM applications WHERE api_key = ?`, apiKey))
	})
}

// ---- wallets ----

// UpdateWallet changes an application's wallet in one transaction, so a
// call charged meanwhile is not overwritten, and returns the result.
func (s *SQLiteStore) UpdateWallet(ctx context.Context, appID int64, change func(*Wallet), now time.Time) (Wallet, error) {
	var w Wallet
	err := s.Write(ctx, func(tx *sql.Tx) error {
		var err error
		if w, err = scanWallet(tx.QueryRow(walletQuery, appID)); err != nil {
			return err
		}
		change(&w)
		_, err = tx.Exec(`INSERT INTO wallets (app_id, prepaid, balance, expires_at, price_per_call, price_per_minute, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (app_id) DO UPDATE SET prepaid = excluded.prepaid, balance = excluded.balance,
				expires_at = excluded.expires_at, price_per_call = excluded.price_per_call,
				price_per_minute = excluded.price_per_minute, updated_at = excluded.updated_at`,
			appID, boolInt(w.Prepaid), w.Balance, nullMS(w.ExpiresAt), w.PricePerCall, w.PricePerMinute, ms(now))
		return err
	})
	return w, err
}

// TopUp adds amount to the balance in one statement, so a call charged at
// the same moment is not lost.
func (s *SQLiteStore) TopUp(ctx context.Context, appID int64, amount int64, now time.Time) error {
	return s.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO wallets (app_id, prepaid, balance, updated_at) VALUES (?, 0, ?, ?)
			ON CONFLICT (app_id) DO UPDATE SET balance = balance + excluded.balance, updated_at = excluded.updated_at`,
			appID, amount, ms(now))
		return err
	})
}

// ---- hotline pools ----

type Pool struct {
	Key string `json:"key"`
	// Trunk is the SIP trunk the pool's calls go through; empty (left out
	// of answers, which stay as they were before trunks): the first.
	Trunk     string    `json:"trunk,omitempty"`
	Numbers   []Hotline `json:"numbers"`
	CreatedAt time.Time `json:"created_at"`
}

type Hotline struct {
	Number  string `json:"number"`
	Enabled bool   `json:"enabled"`
}

// Pools returns the application's pools with their numbers; key "" means all.
func (s *SQLiteStore) Pools(ctx context.Context, appID int64, key string) ([]*Pool, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT p.key, p.trunk, p.created_at, h.number, h.enabled
		FROM hotline_pools p LEFT JOIN hotlines h ON h.app_id = p.app_id AND h.pool_key = p.key
		WHERE p.app_id = ? AND (? = '' OR p.key = ?)
		ORDER BY p.key, h.number`, appID, key, key)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*Pool{}
	for rows.Next() {
		var k, trunk string
		var created int64
		var number sql.NullString
		var enabled sql.NullBool
		if err := rows.Scan(&k, &trunk, &created, &number, &enabled); err != nil {
			return nil, err
		}
		if len(out) == 0 || out[len(out)-1].Key != k {
			out = append(out, &Pool{Key: k, Trunk: trunk, Numbers: []Hotline{}, CreatedAt: fromMS(created)})
		}
		if number.Valid {
			p := out[len(out)-1]
			p.Numbers = append(p.Numbers, Hotline{Number: number.String, Enabled: enabled.Bool})
		}
	}
	return out, rows.Err()
}

// poolTrunk is a pool that names its trunk.
type poolTrunk struct{ App, Key, Trunk string }

// poolTrunks lists every pool, of every application, that names a trunk.
func (s *SQLiteStore) poolTrunks(ctx context.Context) ([]poolTrunk, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT a.api_key, p.key, p.trunk FROM hotline_pools p
		JOIN applications a ON a.id = p.app_id WHERE p.trunk <> '' ORDER BY a.id, p.key`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []poolTrunk
	for rows.Next() {
		var p poolTrunk
		if err := rows.Scan(&p.App, &p.Key, &p.Trunk); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// CreatePool adds a pool calling through trunk ("" for the first) with its
// numbers; errConflict when the key is taken.
func (s *SQLiteStore) CreatePool(ctx context.Context, appID int64, key, trunk string, numbers []string, now time.Time) error {
	return s.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO hotline_pools (app_id, key, trunk, created_at) VALUES (?, ?, ?, ?)`, appID, key, trunk, ms(now))
		if isUniqueViolation(err) {
			return errConflict
		}
		if err != nil {
			return err
		}
		return insertHotlines(tx, appID, key, numbers)
	})
}

func insertHotlines(tx *sql.Tx, appID int64, pool string, numbers []string) error {
	for _, n := range numbers {
		if _, err := tx.Exec(`INSERT INTO hotlines (app_id, pool_key, number) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`,
			appID, pool, n); err != nil {
			return err
		}
	}
	return nil
}

func (s *SQLiteStore) DeletePool(ctx context.Context, appID int64, key string) error {
	return s.Write(ctx, func(tx *sql.Tx) error {
		return changed(tx.Exec(`DELETE FROM hotline_pools WHERE app_id = ? AND key = ?`, appID, key))
	})
}

// AddHotlines adds numbers (enabled) to an existing pool; numbers already
// there are left as they are.
func (s *SQLiteStore) AddHotlines(ctx context.Context, appID int64, pool string, numbers []string) error {
	return s.Write(ctx, func(tx *sql.Tx) error {
		var ok bool
		if err := tx.QueryRow(`SELECT EXISTS (SELECT 1 FROM hotline_pools WHERE app_id = ? AND key = ?)`, appID, pool).Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return errNotFound
		}
		return insertHotlines(tx, appID, pool, numbers)
	})
}

func (s *SQLiteStore) RemoveHotline(ctx context.Context, appID int64, pool, number string) error {
	return s.Write(ctx, func(tx *sql.Tx) error {
		return changed(tx.Exec(`DELETE FROM hotlines WHERE app_id = ? AND pool_key = ? AND number = ?`, appID, pool, number))
	})
}

func (s *SQLiteStore) SetHotlineEnabled(ctx context.Context, appID int64, pool, number string, enabled bool) error {
	return s.Write(ctx, func(tx *sql.Tx) error {
		return changed(tx.Exec(`UPDATE hotlines SET enabled = ? WHERE app_id = ? AND pool_key = ? AND number = ?`,
			boolInt(enabled), appID, pool, number))
	})
}

// ---- scenarios ----

// CreateScenario adds a scenario; errConflict when the id is taken.
func (s *SQLiteStore) CreateScenario(ctx context.Context, sc *Scenario, now time.Time) error {
	fields, config, scriptJSON, err := scenarioJSONColumns(sc)
	if err != nil {
		return err
	}
	return s.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO scenarios (app_id, id, name, description, status, content, script, personalized_fields, call_config, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			sc.AppID, sc.ID, sc.Name, sc.Description, sc.Status, sc.Content, scriptJSON, fields, config, ms(now), ms(now))
		if isUniqueViolation(err) {
			return errConflict
		}
		return err
	})
}

// UpdateScenario stores a scenario's editable fields (not its status).
func (s *SQLiteStore) UpdateScenario(ctx context.Context, sc *Scenario, now time.Time) error {
	fields, config, scriptJSON, err := scenarioJSONColumns(sc)
	if err != nil {
		return err
	}
	return s.Write(ctx, func(tx *sql.Tx) error {
		return changed(tx.Exec(`UPDATE scenarios SET name = ?, description = ?, content = ?, script = ?, personalized_fields = ?,
			call_config = ?, updated_at = ? WHERE app_id = ? AND id = ?`,
			sc.Name, sc.Description, sc.Content, scriptJSON, fields, config, ms(now), sc.AppID, sc.ID))
	})
}

func scenarioJSONColumns(sc *Scenario) (fields, config, scriptJSON string, err error) {
	f, err := marshalJSON(sc.PersonalizedFields)
	if err != nil {
		return "", "", "", err
	}
	c, err := marshalJSON(sc.CallConfig)
	if err != nil {
		return "", "", "", err
	}
	scriptJSON, err = scriptColumn(sc)
	return string(f), string(c), scriptJSON, err
}

// DeleteScenario removes a scenario with its campaigns and contacts, and
// their calls' recordings.
func (s *SQLiteStore) DeleteScenario(ctx context.Context, appID int64, id string) error {
	return s.deleteWithRecordings(ctx, `SELECT c.id FROM calls c JOIN contacts k ON k.seq = c.contact_seq
		WHERE c.recording_bytes > 0 AND k.app_id = ? AND k.scenario_id = ?`, []any{appID, id}, func(tx *sql.Tx) error {
		return changed(tx.Exec(`DELETE FROM scenarios WHERE app_id = ? AND id = ?`, appID, id))
	})
}

// errBadTransition carries the status a scenario was in when a transition
// from it was refused.
type errBadTransition struct{ status string }

func (e errBadTransition) Error() string { return "scenario is " + e.status }

// TransitionScenario moves a scenario to status to if it is in one of from.
func (s *SQLiteStore) TransitionScenario(ctx context.Context, appID int64, id string, from []string, to string, now time.Time) error {
	return s.Write(ctx, func(tx *sql.Tx) error {
		args := []any{to, ms(now), appID, id}
		for _, f := range from {
			args = append(args, f)
		}
		r, err := tx.Exec(`UPDATE scenarios SET status = ?, updated_at = ?
			WHERE app_id = ? AND id = ? AND status IN (?`+strings.Repeat(", ?", len(from)-1)+`)`, args...)
		if err := changed(r, err); !errors.Is(err, errNotFound) {
			return err
		}
		var current string
		err = tx.QueryRow(`SELECT status FROM scenarios WHERE app_id = ? AND id = ?`, appID, id).Scan(&current)
		if errors.Is(err, sql.ErrNoRows) {
			return errNotFound
		}
		if err != nil {
			return err
		}
		return errBadTransition{current}
	})
}

// ---- campaigns ----

func (s *SQLiteStore) ListCampaigns(ctx context.Context, appID int64, scenarioID string) ([]*Campaign, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT `+campaignColumns+` FROM campaigns
		WHERE app_id = ? AND (? = '' OR scenario_id = ?) ORDER BY created_at, id`, appID, scenarioID, scenarioID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*Campaign{}
	for rows.Next() {
		c, err := scanCampaign(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// CreateCampaign adds a campaign of an existing scenario; errConflict when
// the id is taken.
func (s *SQLiteStore) CreateCampaign(ctx context.Context, c *Campaign, now time.Time) error {
	return s.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO campaigns (app_id, id, name, scenario_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
			c.AppID, c.ID, c.Name, c.ScenarioID, ms(now), ms(now))
		if isUniqueViolation(err) {
			return errConflict
		}
		return err
	})
}

func (s *SQLiteStore) SetCampaignPaused(ctx context.Context, appID int64, id string, paused bool, now time.Time) error {
	return s.Write(ctx, func(tx *sql.Tx) error {
		return changed(tx.Exec(`UPDATE campaigns SET paused = ?, updated_at = ? WHERE app_id = ? AND id = ?`,
			boolInt(paused), ms(now), appID, id))
	})
}

// ---- webhook endpoints ----

type WebhookEndpoint struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	Secret    string    `json:"secret,omitempty"` // shown on create and rotate only
	Events    []string  `json:"events"`
	Enabled   bool      `json:"enabled"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

const endpointColumns = `id, url, secret, events, enabled, created_at, updated_at`

func scanEndpoint(row interface{ Scan(...any) error }) (*WebhookEndpoint, error) {
	var e WebhookEndpoint
	var events string
	var created, updated int64
	err := row.Scan(&e.ID, &e.URL, &e.Secret, &events, &e.Enabled, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNotFound
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(events), &e.Events); err != nil {
		return nil, fmt.Errorf("webhook endpoint %s events: %w", e.ID, err)
	}
	e.CreatedAt, e.UpdatedAt = fromMS(created), fromMS(updated)
	return &e, nil
}

func (s *SQLiteStore) Endpoints(ctx context.Context, appID int64) ([]*WebhookEndpoint, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints
		WHERE app_id = ? ORDER BY created_at, id`, appID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*WebhookEndpoint{}
	for rows.Next() {
		e, err := scanEndpoint(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

func (s *SQLiteStore) Endpoint(ctx context.Context, appID int64, id string) (*WebhookEndpoint, error) {
	return scanEndpoint(s.read.QueryRowContext(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints
		WHERE app_id = ? AND id = ?`, appID, id))
}

// SaveEndpoint inserts or replaces an endpoint of appID.
func (s *SQLiteStore) SaveEndpoint(ctx context.Context, appID int64, e *WebhookEndpoint, now time.Time) error {
	events, err := marshalJSON(e.Events)
	if err != nil {
		return err
	}
	return s.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO webhook_endpoints (id, app_id, url, secret, events, enabled, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET url = excluded.url, secret = excluded.secret, events = excluded.events,
				enabled = excluded.enabled, updated_at = excluded.updated_at
			WHERE webhook_endpoints.app_id = excluded.app_id`,
			e.ID, appID, e.URL, e.Secret, string(events), boolInt(e.Enabled), ms(now), ms(now))
		return err
	})
}

func (s *SQLiteStore) DeleteEndpoint(ctx context.Context, appID int64, id string) error {
	return s.Write(ctx, func(tx *sql.Tx) error {
		return changed(tx.Exec(`DELETE FROM webhook_endpoints WHERE app_id = ? AND id = ?`, appID, id))
	})
}

// ---- contacts, calls, imports ----

type ContactRecord struct {
	ID            string            `json:"id"`
	ScenarioID    string            `json:"scenario_id"`
	CampaignID    string            `json:"campaign_id,omitempty"`
	ImportID      string            `json:"import_id"`
	Phone         string            `json:"phone"`
	Fields        map[string]string `json:"fields"`
	State         string            `json:"state"`
	Attempts      int               `json:"attempts"`
	NextAttemptAt time.Time         `json:"next_attempt_at"`
	Outcome       string            `json:"outcome,omitempty"`
	CreatedAt     time.Time         `json:"created_at"`
	UpdatedAt     time.Time         `json:"updated_at"`

	seq int64
}

type CallRecord struct {
	ID         string     `json:"id"`
	Attempt    int        `json:"attempt"`
	Hotline    string     `json:"hotline"`
	State      string     `json:"state"`
	Outcome    string     `json:"outcome,omitempty"`
	Cause      *int64     `json:"cause"`
	StartedAt  time.Time  `json:"started_at"`
	AnsweredAt *time.Time `json:"answered_at"`
	EndedAt    *time.Time `json:"ended_at"`
	Duration   int64      `json:"duration"`
	Cost       int64      `json:"cost"`
	// What the script did, as the call's webhooks say (callResults).
	AnsweredBy string          `json:"answered_by"`
	Digits     string          `json:"digits"`
	Result     string          `json:"result"`
	Steps      json.RawMessage `json:"steps"`
	// RecordingURL is filled by the admin API when recorded is set
	// (docs/voicebot.md#recordings); left out otherwise.
	RecordingURL string `json:"recording_url,omitempty"`

	recorded bool
}

// CursorPage is how the contact and webhook-message lists page: Limit rows
// created in [From, To) (zero times: unbounded), newest first, after Cursor,
// the seq of the last row of the previous page (0: the first page).
type CursorPage struct {
	From, To time.Time
	Cursor   int64
	Limit    int
}

// ContactFilter selects contacts of one application; zero fields match all.
// ScanLimit, when above 0, bounds how many contacts (newest first) one page
// looks through, so a filter that matches few of millions still answers at
// once: the page may then hold fewer than Limit, with a cursor to look
// further (docs/console.md#contacts).
type ContactFilter struct {
	ScenarioID, CampaignID, State, Outcome, Phone string
	ScanLimit                                     int
	CursorPage
}

const contactColumns = `seq, id, scenario_id, coalesce(campaign_id, ''), import_id, phone, fields, state, attempts,
	next_attempt_at, coalesce(outcome, ''), created_at, updated_at`

func scanContact(row interface{ Scan(...any) error }) (*ContactRecord, error) {
	var c ContactRecord
	var fields string
	var next, created, updated int64
	err := row.Scan(&c.seq, &c.ID, &c.ScenarioID, &c.CampaignID, &c.ImportID, &c.Phone, &fields, &c.State, &c.Attempts,
		&next, &c.Outcome, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNotFound
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(fields), &c.Fields); err != nil {
		return nil, fmt.Errorf("contact %s fields: %w", c.ID, err)
	}
	c.NextAttemptAt, c.CreatedAt, c.UpdatedAt = fromMS(next), fromMS(created), fromMS(updated)
	return &c, nil
}

// optMS is 0 for the zero time, so "? = 0 OR ..." skips an unset bound.
func optMS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return ms(t)
}

// Contacts returns one page of contacts, newest first, and the cursor of the
// next page ("" on the last one).
func (s *SQLiteStore) Contacts(ctx context.Context, appID int64, f ContactFilter) ([]*ContactRecord, string, error) {
	return contactsPage(appID, f, func(q string, args []any) interface{ Scan(...any) error } {
		return s.read.QueryRowContext(ctx, q, args...)
	}, func(q string, args []any) ([]*ContactRecord, error) {
		rows, err := s.read.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		out := []*ContactRecord{}
		for rows.Next() {
			c, err := scanContact(rows)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		return out, rows.Err()
	})
}

// contactsPage is Contacts on either store, given its way to read one row
// and a page (queries with ? placeholders). Only the filters given are in
// the query, so the database can use the index of the phone (or of the
// application alone).
func contactsPage(appID int64, f ContactFilter, queryRow func(q string, args []any) interface{ Scan(...any) error },
	queryPage func(q string, args []any) ([]*ContactRecord, error)) ([]*ContactRecord, string, error) {
	where, args := []string{"app_id = ?"}, []any{appID}
	add := func(cond string, v any) {
		where = append(where, cond)
		args = append(args, v)
	}
	if f.Cursor != 0 {
		add("seq < ?", f.Cursor)
	}
	// The scan window: the seq below which this page stops looking.
	var floor, scanned int64
	filtered := f.ScenarioID != "" || f.CampaignID != "" || f.State != "" || f.Outcome != "" || !f.From.IsZero() || !f.To.IsZero()
	if f.ScanLimit > 0 && f.Phone == "" && filtered { // unfiltered, or by phone, an index finds the page at once
		err := queryRow(`SELECT coalesce(min(seq), 0), count(*) FROM (SELECT seq FROM contacts
			WHERE `+strings.Join(where, " AND ")+` ORDER BY seq DESC LIMIT ?) AS w`, append(args, f.ScanLimit)).Scan(&floor, &scanned)
		if err != nil {
			return nil, "", err
		}
		add("seq >= ?", floor)
	}
	for _, c := range []struct{ col, v string }{{"scenario_id", f.ScenarioID}, {"campaign_id", f.CampaignID},
		{"state", f.State}, {"outcome", f.Outcome}, {"phone", f.Phone}} {
		if c.v != "" {
			add(c.col+" = ?", c.v)
		}
	}
	if !f.From.IsZero() {
		add("created_at >= ?", ms(f.From))
	}
	if !f.To.IsZero() {
		add("created_at < ?", ms(f.To))
	}
	out, err := queryPage(`SELECT `+contactColumns+` FROM contacts
		WHERE `+strings.Join(where, " AND ")+` ORDER BY seq DESC LIMIT ?`, append(args, f.Limit))
	if err != nil {
		return nil, "", err
	}
	next := ""
	switch {
	case len(out) == f.Limit:
		next = strconv.FormatInt(out[len(out)-1].seq, 10)
	case f.ScanLimit > 0 && scanned == int64(f.ScanLimit):
		// The window ended before the page filled: look on below it.
		next = strconv.FormatInt(floor, 10)
	}
	return out, next, nil
}

// Contact returns one contact of appID with every call attempt made to it.
func (s *SQLiteStore) Contact(ctx context.Context, appID int64, id string) (*ContactRecord, []CallRecord, error) {
	c, err := scanContact(s.read.QueryRowContext(ctx, `SELECT `+contactColumns+` FROM contacts WHERE app_id = ? AND id = ?`, appID, id))
	if err != nil {
		return nil, nil, err
	}
	rows, err := s.read.QueryContext(ctx, `SELECT id, attempt, hotline, state, coalesce(outcome, ''), cause,
		started_at, answered_at, ended_at, duration, cost, answered_by, digits, result, steps, recording_bytes > 0
		FROM calls WHERE contact_seq = ? ORDER BY attempt`, c.seq)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	calls := []CallRecord{}
	for rows.Next() {
		var k CallRecord
		var cause, answered, ended sql.NullInt64
		var started int64
		var steps string
		if err := rows.Scan(&k.ID, &k.Attempt, &k.Hotline, &k.State, &k.Outcome, &cause, &started, &answered, &ended,
			&k.Duration, &k.Cost, &k.AnsweredBy, &k.Digits, &k.Result, &steps, &k.recorded); err != nil {
			return nil, nil, err
		}
		k.StartedAt, k.Steps = fromMS(started), json.RawMessage(steps)
		k.Cause, k.AnsweredAt, k.EndedAt = nullInt(cause), nullTime(answered), nullTime(ended)
		calls = append(calls, k)
	}
	return c, calls, rows.Err()
}

func nullInt(v sql.NullInt64) *int64 {
	if !v.Valid {
		return nil
	}
	return &v.Int64
}

func nullTime(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMS(v.Int64)
	return &t
}

type ImportRecord struct {
	ID         string    `json:"id"`
	ScenarioID string    `json:"scenario_id"`
	CampaignID string    `json:"campaign_id,omitempty"`
	Requested  int       `json:"requested"`
	Added      int       `json:"added"`
	Skipped    int       `json:"skipped"`
	Code       int       `json:"code"`
	CreatedAt  time.Time `json:"created_at"`
}

const importColumns = `id, scenario_id, coalesce(campaign_id, ''), requested, added, skipped, code, created_at`

func scanImport(row interface{ Scan(...any) error }) (*ImportRecord, error) {
	var im ImportRecord
	var created int64
	err := row.Scan(&im.ID, &im.ScenarioID, &im.CampaignID, &im.Requested, &im.Added, &im.Skipped, &im.Code, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNotFound
	}
	im.CreatedAt = fromMS(created)
	return &im, err
}

// Imports returns the application's most recent imports, newest first.
func (s *SQLiteStore) Imports(ctx context.Context, appID int64, scenarioID string, limit int) ([]*ImportRecord, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT `+importColumns+` FROM imports
		WHERE app_id = ? AND (? = '' OR scenario_id = ?) ORDER BY created_at DESC, rowid DESC LIMIT ?`,
		appID, scenarioID, scenarioID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*ImportRecord{}
	for rows.Next() {
		im, err := scanImport(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, im)
	}
	return out, rows.Err()
}

// ImportByID returns one import of appID.
func (s *SQLiteStore) ImportByID(ctx context.Context, appID int64, id string) (*ImportRecord, error) {
	return scanImport(s.read.QueryRowContext(ctx, `SELECT `+importColumns+` FROM imports WHERE app_id = ? AND id = ?`, appID, id))
}

// ---- webhook messages ----

type WebhookMessage struct {
	ID         string          `json:"id"`
	EndpointID string          `json:"endpoint_id"`
	EventType  string          `json:"event_type"`
	Payload    json.RawMessage `json:"payload"`
	State      string          `json:"state"`
	Attempts   int             `json:"attempts"`
	NextTryAt  time.Time       `json:"next_try_at"`
	CreatedAt  time.Time       `json:"created_at"`
	UpdatedAt  time.Time       `json:"updated_at"`

	seq int64
}

type WebhookAttempt struct {
	Attempt    int       `json:"attempt"`
	StatusCode *int64    `json:"status_code"`
	Error      string    `json:"error,omitempty"`
	LatencyMS  int64     `json:"latency_ms"`
	At         time.Time `json:"at"`
}

// MessageFilter selects webhook messages of one application.
type MessageFilter struct {
	EndpointID, State, EventType string
	CursorPage
}

const messageColumns = `seq, id, endpoint_id, event_type, payload, state, attempts, next_try_at, created_at, updated_at`

func scanMessage(row interface{ Scan(...any) error }) (*WebhookMessage, error) {
	var m WebhookMessage
	var payload string
	var next, created, updated int64
	err := row.Scan(&m.seq, &m.ID, &m.EndpointID, &m.EventType, &payload, &m.State, &m.Attempts, &next, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNotFound
	}
	if err != nil {
		return nil, err
	}
	m.Payload = json.RawMessage(payload)
	m.NextTryAt, m.CreatedAt, m.UpdatedAt = fromMS(next), fromMS(created), fromMS(updated)
	return &m, nil
}

// Messages returns one page of webhook messages, newest first, and the
// cursor of the next page.
func (s *SQLiteStore) Messages(ctx context.Context, appID int64, f MessageFilter) ([]*WebhookMessage, string, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT `+messageColumns+` FROM webhook_messages
		WHERE app_id = ? AND (? = 0 OR seq < ?) AND (? = '' OR endpoint_id = ?)
			AND (? = '' OR state = ?) AND (? = '' OR event_type = ?)
			AND (? = 0 OR created_at >= ?) AND (? = 0 OR created_at < ?)
		ORDER BY seq DESC LIMIT ?`,
		appID, f.Cursor, f.Cursor, f.EndpointID, f.EndpointID, f.State, f.State, f.EventType, f.EventType,
		optMS(f.From), optMS(f.From), optMS(f.To), optMS(f.To), f.Limit)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	out := []*WebhookMessage{}
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, "", err
		}
		out = append(out, m)
	}
	next := ""
	if len(out) == f.Limit {
		next = strconv.FormatInt(out[len(out)-1].seq, 10)
	}
	return out, next, rows.Err()
}

// Message returns one webhook message of appID with every delivery attempt.
func (s *SQLiteStore) Message(ctx context.Context, appID int64, id string) (*WebhookMessage, []WebhookAttempt, error) {
	m, err := scanMessage(s.read.QueryRowContext(ctx, `SELECT `+messageColumns+` FROM webhook_messages
		WHERE app_id = ? AND id = ?`, appID, id))
	if err != nil {
		return nil, nil, err
	}
	rows, err := s.read.QueryContext(ctx, `SELECT attempt, status_code, coalesce(error, ''), latency_ms, at
		FROM webhook_attempts WHERE message_seq = ? ORDER BY attempt`, m.seq)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	attempts := []WebhookAttempt{}
	for rows.Next() {
		var a WebhookAttempt
		var status sql.NullInt64
		var at int64
		if err := rows.Scan(&a.Attempt, &status, &a.Error, &a.LatencyMS, &at); err != nil {
			return nil, nil, err
		}
		a.StatusCode, a.At = nullInt(status), fromMS(at)
		attempts = append(attempts, a)
	}
	return m, attempts, rows.Err()
}

// Redeliver puts a message back in the outbox, due now, whatever its state.
func (s *SQLiteStore) Redeliver(ctx context.Context, appID int64, id string, now time.Time) error {
	return s.Write(ctx, func(tx *sql.Tx) error {
		return changed(tx.Exec(`UPDATE webhook_messages SET state = 'pending', tries = 0, next_try_at = ?, updated_at = ?
			WHERE app_id = ? AND id = ?`, ms(now), ms(now), appID, id))
	})
}

// RecoverFailed puts every dead message of an endpoint created since then
// back in the outbox, due now, and says how many.
func (s *SQLiteStore) RecoverFailed(ctx context.Context, appID int64, endpointID string, since, now time.Time) (int64, error) {
	var n int64
	err := s.Write(ctx, func(tx *sql.Tx) error {
		r, err := tx.Exec(`UPDATE webhook_messages SET state = 'pending', tries = 0, next_try_at = ?, updated_at = ?
			WHERE app_id = ? AND endpoint_id = ? AND state = 'dead' AND created_at >= ?`,
			ms(now), ms(now), appID, endpointID, ms(since))
		if err != nil {
			return err
		}
		n, err = r.RowsAffected()
		return err
	})
	return n, err
}

// ---- reset ----

// resetTables lists every table of tenant data, children first; the admin
// settings survive a reset.
var resetTables = []string{
	"webhook_attempts", "webhook_messages", "webhook_endpoints", "call_blocks", "calls", "contacts", "skipped_contacts",
	"imports", "campaigns", "scenarios", "hotlines", "hotline_pools", "wallets", "advertising_settings", "applications",
}

// Reset wipes every tenant (and the recordings of their calls) and applies
// apps, in one transaction.
func (s *SQLiteStore) Reset(ctx context.Context, apps []*FixtureApp, now time.Time) error {
	return s.deleteWithRecordings(ctx, `SELECT id FROM calls WHERE recording_bytes > 0`, nil, func(tx *sql.Tx) error {
		for _, t := range resetTables {
			if _, err := tx.Exec(`DELETE FROM ` + t); err != nil {
				return fmt.Errorf("reset %s: %w", t, err)
			}
		}
		for _, fa := range apps {
			if err := applyFixtureApp(ctx, sqliteFixtureTx(tx, now), fa, now); err != nil {
				return err
			}
		}
		return nil
	})
}
