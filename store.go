package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"dialbox/internal/destinations"
	"dialbox/internal/domain"
	"dialbox/internal/script"
	"dialbox/internal/sqldb"
)

// The queries of the public operations and the import; the machinery they
// run on (opening, migrations, the group-commit writer) is in db.go.

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

func nullMS(t *time.Time) any {
	if t == nil {
		return nil
	}
	return ms(*t)
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
	err := row.Scan(&a.ID, &a.Name, &a.APIKey, &a.APISecret, &a.Disabled, &a.IsDemo, &created, &updated, &allow, &deny)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, domain.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	a.CreatedAt, a.UpdatedAt = fromMS(created), fromMS(updated)
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
		t := fromMS(expires.Int64)
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
	err := row.Scan(&sc.AppID, &sc.ID, &sc.Name, &sc.Description, &sc.Status, &sc.Content, &scriptJSON, &fields, &config, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, domain.ErrNotFound
	}
	if err != nil {
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
	sc.CreatedAt, sc.UpdatedAt = fromMS(created), fromMS(updated)
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
	err := row.Scan(&c.AppID, &c.ID, &c.Name, &c.ScenarioID, &c.Paused, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, domain.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	c.CreatedAt, c.UpdatedAt = fromMS(created), fromMS(updated)
	return &c, nil
}

// Campaign returns the tenant's campaign id, or errNotFound.
func (s *sqlStore) Campaign(ctx context.Context, appID int64, id string) (*domain.Campaign, error) {
	return scanCampaign(s.db.QueryRow(ctx,
		`SELECT `+campaignColumns+` FROM campaigns WHERE app_id = ? AND id = ?`, appID, id))
}

// ---- imports ----

// Import stores the request's valid contacts in one durable commit and
// returns them with their new contact_ids. Contacts whose phone is already
// pending for the scenario (when duplicates are not allowed) are skipped.
// It fails with errAllInvalid when nothing is left to add (the import and
// its reasons are still recorded), errQueueFull when the application would
// have more than req.MaxQueued unfinished contacts, and errWalletEmpty when
// a prepaid wallet cannot pay one call per added contact (for these two
// nothing is recorded). It runs in the one writer's group commit, its
// statements those prepared when the store opened (writeStmts).
func (s *SQLiteStore) Import(ctx context.Context, req domain.ImportRequest, now time.Time) (*domain.ImportResult, error) {
	var res *domain.ImportResult
	allInvalid := false
	err := s.WriteData(ctx, func(tx *sql.Tx) (err error) {
		res, allInvalid, err = importTx(ctx, sqldb.SQLShared(preparedTx{tx, s.stmts.byQuery}), req, now)
		return err
	})
	return imported(s.metrics.imports, res, allInvalid, err)
}

// importTx is an import's work in its store's writer, on either database
// (SQLiteStore.Import, PostgresStore.Import); allInvalid when nothing was
// added.
func importTx(ctx context.Context, tx sqldb.Querier, req domain.ImportRequest, now time.Time) (res *domain.ImportResult, allInvalid bool, err error) {
	res = &domain.ImportResult{ImportID: uuid.NewString(), Skipped: append([]domain.SkippedContact(nil), req.Skipped...)}
	if err := insertContacts(ctx, tx, req, res, now); err != nil {
		return nil, false, err
	}
	if len(res.Added) == 0 {
		// Nothing was inserted; the import and its reasons are still
		// recorded for the admin API.
		return res, true, recordImport(ctx, tx, req, res, importAllInvalid, now)
	}
	if err := checkQueued(ctx, tx, req.AppID, req.MaxQueued, len(res.Added)); err != nil {
		return nil, false, err
	}
	// A failure here undoes the inserts with the rest of the job.
	if err := checkBalance(ctx, tx, req.AppID, len(res.Added)); err != nil {
		return nil, false, err
	}
	return res, false, recordImport(ctx, tx, req, res, importAdded, now)
}

// imported is Import's answer once its writer has committed (or not),
// counted into m.
func imported(m importMetrics, res *domain.ImportResult, allInvalid bool, err error) (*domain.ImportResult, error) {
	if err != nil {
		return nil, err
	}
	m.observe(len(res.Added), len(res.Skipped))
	if allInvalid {
		return res, domain.ErrAllInvalid
	}
	return res, nil
}

// insertContacts adds the contacts; RETURNING tells which rows the
// pending-phone index let in, the others are duplicates. SQLite takes them
// in multi-row statements of contactChunk rows, prepared once; PostgreSQL
// in one statement per request, its arrays unnested (a round trip each).
func insertContacts(ctx context.Context, tx sqldb.Querier, req domain.ImportRequest, res *domain.ImportResult, now time.Time) error {
	inserted := make(map[string]bool, len(req.Contacts))
	// One destination for every row: this runs in the writer.
	var id string
	dest := []any{&id}
	collect := func(scan func(...any) error) error {
		if err := scan(dest...); err != nil {
			return err
		}
		inserted[id] = true
		return nil
	}
	if tx.Dialect() == sqldb.Postgres {
		ids := make([]string, len(req.Contacts))
		phones := make([]string, len(req.Contacts))
		fields := make([]string, len(req.Contacts))
		for i, c := range req.Contacts {
			ids[i], phones[i], fields[i] = c.ID, c.Phone, string(c.Fields)
		}
		at := ms(now)
		if err := tx.Query(ctx, `INSERT INTO contacts
			(id, app_id, scenario_id, campaign_id, import_id, phone, fields, unique_phone, next_attempt_at, created_at, updated_at)
			SELECT u.id, ?, ?, ?, ?, u.phone, u.fields, ?, ?, ?, ?
			FROM unnest(?::text[], ?::text[], ?::text[]) WITH ORDINALITY AS u(id, phone, fields, n)
			ORDER BY u.n
			ON CONFLICT DO NOTHING RETURNING id`,
			[]any{req.AppID, req.ScenarioID, nullString(req.CampaignID), res.ImportID, boolInt(req.UniquePhone), at, at, at,
				ids, phones, fields}, collect); err != nil {
			return err
		}
	} else {
		// The values every row shares are boxed once: this loop runs in
		// the writer, which every import waits for.
		var (
			at       any = ms(now)
			unique   any = boolInt(req.UniquePhone)
			camp         = nullString(req.CampaignID)
			appID    any = req.AppID
			scenario any = req.ScenarioID
			importID any = res.ImportID
		)
		args := make([]any, 0, min(len(req.Contacts), contactChunk)*11)
		for start := 0; start < len(req.Contacts); start += contactChunk {
			chunk := req.Contacts[start:min(start+contactChunk, len(req.Contacts))]
			args = args[:0]
			for _, c := range chunk {
				args = append(args, c.ID, appID, scenario, camp, importID, c.Phone, c.Fields, unique, at, at, at)
			}
			if err := tx.Query(ctx, insertContactsSQL[len(chunk)], args, collect); err != nil {
				return err
			}
		}
	}
	res.Added = slices.Grow(res.Added, len(inserted))
	for _, c := range req.Contacts {
		if !inserted[c.ID] {
			input, _ := domain.MarshalJSON(c.Input)
			res.Skipped = append(res.Skipped, domain.SkippedContact{Position: c.Position, Input: input,
				Reason: "phone_number is already queued for this scenario"})
			continue
		}
		res.Added = append(res.Added, domain.AddedContact{ID: c.ID, Echo: c.Echo})
	}
	return nil
}

// writeStmts are prepared on the writer's only connection when the store
// opens (a statement cannot be prepared through the pool while the writer's
// transaction holds that connection) and bound to each transaction with
// tx.Stmt, so the hot path never parses SQL.
type writeStmts struct {
	savepoint, release, rollback *sql.Stmt
	// byQuery holds the import's statements by their text (preparedTx):
	// every chunk size of insertContactsSQL, the import row, a skipped
	// row, the wallet and the count of unfinished contacts.
	byQuery map[string]*sql.Stmt
}

// prepare prepares the statements whose tables exist at the schema version
// (older versions are opened by migration tests).
func (w *writeStmts) prepare(db *sql.DB, version int) error {
	var err error
	prep := func(query string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		st, err = db.Prepare(query)
		return st
	}
	w.savepoint, w.release, w.rollback = prep(`SAVEPOINT job`), prep(`RELEASE job`), prep(`ROLLBACK TO job`)
	w.byQuery = map[string]*sql.Stmt{}
	if version < 1 {
		return err
	}
	queries := append([]string{insertImportSQL, insertSkippedSQL, walletQuery}, insertContactsSQL[1:]...)
	if version >= 4 { // queued_contacts
		queries = append(queries, queuedSQL)
	}
	for _, q := range queries {
		if st := prep(q); st != nil {
			w.byQuery[q] = st
		}
	}
	return err
}

func (w *writeStmts) Close() {
	for _, st := range []*sql.Stmt{w.savepoint, w.release, w.rollback} {
		if st != nil {
			st.Close()
		}
	}
	for _, st := range w.byQuery {
		st.Close()
	}
}

// preparedTx runs a query of the writer's transaction as the statement
// prepared for its text, if there is one (writeStmts), else as it comes.
type preparedTx struct {
	tx    *sql.Tx
	stmts map[string]*sql.Stmt
}

func (p preparedTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := p.stmts[query]; st != nil {
		return p.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return p.tx.ExecContext(ctx, query, args...)
}

func (p preparedTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := p.stmts[query]; st != nil {
		return p.tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return p.tx.QueryContext(ctx, query, args...)
}

func (p preparedTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := p.stmts[query]; st != nil {
		return p.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return p.tx.QueryRowContext(ctx, query, args...)
}

// contactChunk rows per INSERT: large enough to amortise the statement,
// small enough to stay far below SQLite's parameter limit.
const contactChunk = 50

// insertContactsSQL[n] inserts n contacts on SQLite; imports need every
// chunk size.
var insertContactsSQL = func() (q [contactChunk + 1]string) {
	for n := 1; n <= contactChunk; n++ {
		q[n] = `INSERT INTO contacts
	(id, app_id, scenario_id, campaign_id, import_id, phone, fields, unique_phone, next_attempt_at, created_at, updated_at)
	VALUES ` + strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?), ", n), ", ") + `
	ON CONFLICT DO NOTHING RETURNING id`
	}
	return q
}()

const (
	queuedSQL       = `SELECT n FROM queued_contacts WHERE app_id = ?`
	insertImportSQL = `INSERT INTO imports (id, app_id, scenario_id, campaign_id, requested, added, skipped, code, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	insertSkippedSQL = `INSERT INTO skipped_contacts (import_id, position, input, reason) VALUES (?, ?, ?, ?)`
)

// checkQueued fails with errQueueFull when the added contacts took the
// application over max unfinished contacts. The count, kept by triggers
// (schema.sql migrations 4 and 13), already includes them; read in the
// writer's transaction (on PostgreSQL, holding the row until it commits),
// it is exact even under concurrent imports.
func checkQueued(ctx context.Context, tx sqldb.Querier, appID, max int64, added int) error {
	if max <= 0 {
		return nil
	}
	var n int64
	if err := tx.QueryRow(ctx, queuedSQL, appID).Scan(&n); err != nil {
		return err
	}
	if n > max {
		return domain.ErrQueueFull(n-int64(added), max, added)
	}
	return nil
}

// checkBalance fails with errWalletEmpty when a prepaid wallet cannot pay
// the minimum charge of n calls.
func checkBalance(ctx context.Context, tx sqldb.Querier, appID int64, n int) error {
	w, err := scanWallet(tx.QueryRow(ctx, walletQuery, appID))
	if err != nil {
		return err
	}
	if w.Prepaid && w.Balance < int64(n)*w.PricePerCall {
		return domain.ErrWalletEmpty
	}
	return nil
}

// The code an import row records: 1 when contacts were added, else the
// public API's code for "all contacts invalid", as the admin API shows it.
const (
	importAdded      = 1
	importAllInvalid = 1403
)

// recordImport writes the import's row and its skipped contacts: on SQLite
// a prepared statement a row, on PostgreSQL one statement, arrays unnested.
func recordImport(ctx context.Context, tx sqldb.Querier, req domain.ImportRequest, res *domain.ImportResult, code int, now time.Time) error {
	requested := len(req.Contacts) + len(req.Skipped)
	if _, err := tx.Exec(ctx, insertImportSQL, res.ImportID, req.AppID, req.ScenarioID, nullString(req.CampaignID),
		requested, len(res.Added), len(res.Skipped), code, ms(now)); err != nil {
		return err
	}
	if len(res.Skipped) == 0 {
		return nil
	}
	if tx.Dialect() == sqldb.Postgres {
		positions := make([]int32, len(res.Skipped))
		inputs := make([]string, len(res.Skipped))
		reasons := make([]string, len(res.Skipped))
		for i, sk := range res.Skipped {
			positions[i], inputs[i], reasons[i] = int32(sk.Position), string(sk.Input), sk.Reason
		}
		_, err := tx.Exec(ctx, `INSERT INTO skipped_contacts (import_id, position, input, reason)
			SELECT ?, u.position, u.input, u.reason FROM unnest(?::int[], ?::text[], ?::text[]) AS u(position, input, reason)`,
			res.ImportID, positions, inputs, reasons)
		return err
	}
	for _, sk := range res.Skipped {
		if _, err := tx.Exec(ctx, insertSkippedSQL, res.ImportID, sk.Position, string(sk.Input), sk.Reason); err != nil {
			return err
		}
	}
	return nil
}

// ContactIDs returns the contact_ids of every stored contact of an
// application (tests use it to check that nothing acknowledged was lost).
func (s *sqlStore) ContactIDs(ctx context.Context, appID int64) (map[string]bool, error) {
	ids := map[string]bool{}
	err := s.db.Query(ctx, `SELECT id FROM contacts WHERE app_id = ?`, []any{appID}, func(scan func(...any) error) error {
		var id string
		err := scan(&id)
		ids[id] = true
		return err
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// SkippedOf returns an import's skipped contacts with their reasons.
func (s *sqlStore) SkippedOf(ctx context.Context, importID string) ([]domain.SkippedContact, error) {
	return sqldb.Collect(ctx, s.db, scanSkipped,
		`SELECT position, input, reason FROM skipped_contacts WHERE import_id = ? ORDER BY position`, importID)
}

func scanSkipped(row sqldb.Row) (domain.SkippedContact, error) {
	var sk domain.SkippedContact
	var input string
	err := row.Scan(&sk.Position, &input, &sk.Reason)
	sk.Input = json.RawMessage(input)
	return sk, err
}

// ---- fixtures ----

// applyFixtureApp upserts one application of a fixtures file (or the demo
// tenant) and everything it owns, changing nothing that already matches.
func applyFixtureApp(ctx context.Context, tx sqldb.Querier, fa *FixtureApp, now time.Time) error {
	at := ms(now)
	// RETURNING says nothing when nothing changed: the id is read then.
	err := tx.QueryRow(ctx, `INSERT INTO applications (name, api_key, api_secret, is_demo, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (api_key) DO UPDATE SET name = excluded.name, api_secret = excluded.api_secret,
			disabled = 0, updated_at = excluded.updated_at
		WHERE applications.name IS DISTINCT FROM excluded.name OR applications.api_secret IS DISTINCT FROM excluded.api_secret
			OR applications.disabled <> 0
		RETURNING id`, fa.Name, fa.APIKey, fa.APISecret, boolInt(fa.isDemo), at, at).Scan(&fa.id)
	if errors.Is(err, sql.ErrNoRows) {
		err = tx.QueryRow(ctx, `SELECT id FROM applications WHERE api_key = ?`, fa.APIKey).Scan(&fa.id)
	}
	if err != nil {
		return fmt.Errorf("application %q: %w", fa.APIKey, err)
	}
	appID := fa.id

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
