package main

// The store underneath the API: migrations, group commit, import records,
// fixtures, and the config and fixture files' errors and precedence.

import (
	"bytes"
	"context"
	"database/sql"
	"dialbox/internal/config"
	"dialbox/internal/domain"
	"dialbox/internal/importer"
	"dialbox/internal/recordings"
	"dialbox/internal/store"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestMigrations: a database left by an older dialbox (every older schema
// version) opens in this one with its data kept and its schema brought up
// to date; a database from a newer dialbox is refused, untouched.
func TestMigrations(t *testing.T) {
	latest := len(sqliteMigrations())
	if latest < 1 {
		t.Fatal("schema.sql has no migrations")
	}
	for from := 1; from < latest; from++ {
		t.Run(fmt.Sprintf("from version %d", from), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "old.db")
			old, err := store.OpenSQLite(path, sqliteMigrations()[:from], store.NewMetrics(false), recordings.Files{})
			if err != nil {
				t.Fatal(err)
			}
			opened(t, old, path)
			if v, _, _ := old.Migrations(context.Background()); v != from {
				t.Fatalf("old database at version %d, want %d", v, from)
			}
			// Rows in the tables of migration 1, written as its columns are.
			for _, q := range []string{
				`INSERT INTO applications (id, name, api_key, api_secret, created_at, updated_at) VALUES (1, 'Old', 'old-key', 'old-secret', 1000, 1000)`,
				`INSERT INTO wallets (app_id, prepaid, balance, price_per_call, updated_at) VALUES (1, 1, 5000, 1000, 1000)`,
				`INSERT INTO hotline_pools (app_id, key, created_at) VALUES (1, 'POOL_SYSTEM', 1000)`,
				`INSERT INTO hotlines (app_id, pool_key, number) VALUES (1, 'POOL_SYSTEM', '02873000001')`,
				`INSERT INTO scenarios (app_id, id, name, status, content, personalized_fields, call_config, created_at, updated_at)
				 VALUES (1, 'sc-old', 'Old scenario', 'ACTIVE', 'Xin chào', '["ho_ten"]', '{"pool_hotline_key":"POOL_SYSTEM"}', 1000, 1000)`,
				`INSERT INTO campaigns (app_id, id, name, scenario_id, created_at, updated_at) VALUES (1, 'camp-old', 'Old campaign', 'sc-old', 1000, 1000)`,
				`INSERT INTO imports (id, app_id, scenario_id, requested, added, skipped, code, created_at) VALUES ('imp-old', 1, 'sc-old', 2, 1, 1, 1, 1000)`,
				`INSERT INTO skipped_contacts (import_id, position, input, reason) VALUES ('imp-old', 1, '{"phone_number":"1"}', 'bad phone')`,
				`INSERT INTO contacts (id, app_id, scenario_id, import_id, phone, fields, unique_phone, next_attempt_at, created_at, updated_at)
				 VALUES ('c-old', 1, 'sc-old', 'imp-old', '+84910000001', '{"ho_ten":"A","so_dien_thoai":"+84910000001"}', 1, 1000, 1000, 1000)`,
			} {
				storeExec(t, old, q)
			}
			if err := old.Close(); err != nil {
				t.Fatal(err)
			}

			s, err := store.OpenSQLite(path, sqliteMigrations(), store.NewMetrics(false), recordings.Files{})
			if err != nil {
				t.Fatalf("opening a version %d database: %v", from, err)
			}
			opened(t, s, path)
			defer s.Close()
			ctx := context.Background()
			if v, _, err := s.Migrations(ctx); err != nil || v != latest {
				t.Fatalf("schema version %d (%v), want %d", v, err, latest)
			}
			app, err := s.AppByKey(ctx, "old-key")
			if err != nil || app.APISecret != "old-secret" || app.Name != "Old" {
				t.Fatalf("application after migration: %+v, %v", app, err)
			}
			if w, err := s.Wallet(ctx, app.ID); err != nil || !w.Prepaid || w.Balance != 5000 || w.PricePerCall != 1000 {
				t.Errorf("wallet after migration: %+v, %v", w, err)
			}
			sc, err := s.Scenario(ctx, app.ID, "sc-old")
			if err != nil || sc.Name != "Old scenario" || sc.Content != "Xin chào" || sc.CallConfig.PoolHotlineKey != "POOL_SYSTEM" {
				t.Fatalf("scenario after migration: %+v, %v", sc, err)
			}
			if c, err := s.Campaign(ctx, app.ID, "camp-old"); err != nil || c.ScenarioID != "sc-old" {
				t.Errorf("campaign after migration: %+v, %v", c, err)
			}
			if ids := contactIDs(t, s, app.ID); !ids["c-old"] || len(ids) != 1 {
				t.Errorf("contacts after migration: %v", ids)
			}
			if sk, err := s.SkippedOf(ctx, "imp-old"); err != nil || len(sk) != 1 || sk[0].Reason != "bad phone" {
				t.Errorf("skipped contacts after migration: %+v, %v", sk, err)
			}
			// The migrated database takes new imports, and its old queued
			// phone still counts as a duplicate.
			req := importRequest(t, app.ID, sc, `[{"phone_number":"0910000001"},{"phone_number":"0910000002"}]`)
			res, err := s.Import(ctx, req, time.Now())
			if err != nil || len(res.Added) != 1 || !bytes.Contains(res.Added[0].Echo, []byte(`"so_dien_thoai":"+84910000002"`)) {
				t.Fatalf("import into migrated database: %+v, %v", res, err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}

			// Opening again migrates nothing and loses nothing.
			again, err := store.OpenSQLite(path, sqliteMigrations(), store.NewMetrics(false), recordings.Files{})
			if err != nil {
				t.Fatal(err)
			}
			opened(t, again, path)
			defer again.Close()
			if v, _, _ := again.Migrations(ctx); v != latest {
				t.Errorf("version after reopening: %d", v)
			}
			if n := queryInt(t, again, `SELECT count(*) FROM contacts`); n != 2 {
				t.Errorf("%d contacts after reopening, want 2", n)
			}
		})
	}

	t.Run("from a newer dialbox", func(t *testing.T) {
		s, path := openTestStore(t)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, latest+1)); err != nil {
			t.Fatal(err)
		}
		db.Close()
		if s, err := store.OpenSQLite(path, sqliteMigrations(), store.NewMetrics(false), recordings.Files{}); err == nil {
			s.Close()
			t.Fatal("a database of a newer schema version opened")
		} else if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "newer dialbox") {
			t.Errorf("error %q should name the file and say it is from a newer dialbox", err)
		}
		db, _ = sql.Open("sqlite", path)
		defer db.Close()
		var v int
		if err := db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil || v != latest+1 {
			t.Errorf("refused database now at version %d (%v), want it untouched at %d", v, err, latest+1)
		}
	})
}

// importRequest validates contacts (a JSON array) as the handlers do.
func importRequest(t testing.TB, appID int64, sc *domain.Scenario, contacts string) domain.ImportRequest {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(contacts))
	dec.UseNumber()
	var items []any
	if err := dec.Decode(&items); err != nil {
		t.Fatal(err)
	}
	req := domain.ImportRequest{AppID: appID, ScenarioID: sc.ID, UniquePhone: !sc.CallConfig.AllowDuplicatePhone}
	req.Contacts, req.Skipped = importer.ValidateContacts(items, sc, "VN")
	return req
}

// TestImportSkipReasons: every skipped contact is recorded with its
// position, its input and why, for 1403 too; a 1105 records nothing.
func TestImportSkipReasons(t *testing.T) { eachBackend(t, testImportSkipReasons) }

func testImportSkipReasons(t *testing.T, backend string) {
	s, _ := fixtureStoreOn(t, backend)
	ctx := context.Background()
	now := time.Now()
	applyTestFixtures(t, s, testFixtures, now)
	qa, _ := s.AppByKey(ctx, "qa-key")
	sc, err := s.Scenario(ctx, qa.ID, "sc-remind")
	if err != nil {
		t.Fatal(err)
	}
	first, err := s.Import(ctx, importRequest(t, qa.ID, sc, `[{"phone_number":"0910000001"}]`), now)
	if err != nil {
		t.Fatal(err)
	}
	if sk, err := s.SkippedOf(ctx, first.ImportID); err != nil || len(sk) != 0 {
		t.Errorf("clean import: skipped %+v, %v", sk, err)
	}

	res, err := s.Import(ctx, importRequest(t, qa.ID, sc, `[
		"0910000002",
		{"ho_ten":"no phone"},
		{"phone_number":12345},
		{"phone_number":"12345"},
		{"phone_number":"0910000003","ho_ten":true},
		{"phone_number":"0910000004"},
		{"phone_number":"+84 910 000 004"},
		{"phone_number":"84910000001"},
		{"phone_number":"0910000005"}
	]`), now)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Added) != 2 {
		t.Errorf("added %+v, want the contacts at 5 and 8", res.Added)
	}
	want := []struct {
		pos   int
		input string
		why   string // a word the reason must contain
	}{
		{0, `"0910000002"`, "object"},
		{1, `{"ho_ten":"no phone"}`, "phone_number"},
		{2, `{"phone_number":12345}`, "phone_number"},
		{3, `{"phone_number":"12345"}`, "phone"},
		{4, `{"ho_ten":true,"phone_number":"0910000003"}`, "ho_ten"},
		{6, `{"phone_number":"+84 910 000 004"}`, "repeats"},
		{7, `{"phone_number":"84910000001"}`, "queued"},
	}
	sk, err := s.SkippedOf(ctx, res.ImportID)
	if err != nil {
		t.Fatal(err)
	}
	if len(sk) != len(want) {
		t.Fatalf("skipped %+v, want %d", sk, len(want))
	}
	for i, w := range want {
		if sk[i].Position != w.pos || string(sk[i].Input) != w.input || !strings.Contains(sk[i].Reason, w.why) {
			t.Errorf("skipped[%d] = {%d %s %q}, want position %d, input %s, a reason about %q",
				i, sk[i].Position, sk[i].Input, sk[i].Reason, w.pos, w.input, w.why)
		}
	}
	if got := queryInt(t, s, `SELECT requested*10000 + added*100 + skipped FROM imports WHERE id = ?`, res.ImportID); got != 90207 {
		t.Errorf("imports row requested/added/skipped = %d, want 9/2/7", got)
	}

	// All invalid: 1403, yet the import and its reasons are kept.
	res, err = s.Import(ctx, importRequest(t, qa.ID, sc, `[{"phone_number":"1"},{"phone_number":"0910000001"}]`), now)
	if !errors.Is(err, domain.ErrAllInvalid) || res == nil {
		t.Fatalf("all invalid: %v", err)
	}
	if sk, _ := s.SkippedOf(ctx, res.ImportID); len(sk) != 2 {
		t.Errorf("all-invalid import recorded %+v, want both contacts", sk)
	}
	if got := queryInt(t, s, `SELECT code FROM imports WHERE id = ?`, res.ImportID); got != 1403 {
		t.Errorf("imports code %d, want 1403", got)
	}

	// 1105: nothing is stored, not even the import.
	poor, _ := s.AppByKey(ctx, "poor-key")
	psc, _ := s.Scenario(ctx, poor.ID, "sc-poor")
	before := queryInt(t, s, `SELECT (SELECT count(*) FROM contacts) * 1000 + (SELECT count(*) FROM imports)`)
	_, err = s.Import(ctx, importRequest(t, poor.ID, psc, `[{"phone_number":"0910000011"},{"phone_number":"0910000012"},{"phone_number":"0910000013"}]`), now)
	if !errors.Is(err, domain.ErrWalletEmpty) {
		t.Fatalf("over the balance: %v, want 1105", err)
	}
	if after := queryInt(t, s, `SELECT (SELECT count(*) FROM contacts) * 1000 + (SELECT count(*) FROM imports)`); after != before {
		t.Errorf("a 1105 import stored something: %d -> %d", before, after)
	}
}

// fixtureSnapshot is every fixture-made row with its timestamps, and the
// row count of every table.
func fixtureSnapshot(t testing.TB, s Store) map[string]string {
	t.Helper()
	tables := `SELECT 'rows ' || name, 0 FROM sqlite_schema WHERE type = 'table'`
	if _, ok := s.(*store.Postgres); ok {
		tables = `SELECT 'rows ' || table_name, 0 FROM information_schema.tables WHERE table_schema = 'public'`
	}
	out := map[string]string{}
	for _, q := range []string{
		`SELECT 'app ' || api_key, name || '|' || api_secret || '|' || disabled || '|' || created_at || '|' || updated_at FROM applications`,
		`SELECT 'wallet ' || app_id, prepaid || '|' || balance || '|' || coalesce(expires_at || '', '') || '|' || price_per_call || '|' || updated_at FROM wallets`,
		`SELECT 'pool ' || app_id || ' ' || key, created_at || '' FROM hotline_pools`,
		`SELECT 'hotline ' || app_id || ' ' || pool_key || ' ' || number, enabled || '' FROM hotlines`,
		`SELECT 'scenario ' || app_id || ' ' || id, status || '|' || call_config || '|' || created_at || '|' || updated_at FROM scenarios`,
		`SELECT 'campaign ' || app_id || ' ' || id, scenario_id || '|' || created_at || '|' || updated_at FROM campaigns`,
		`SELECT 'webhook ' || app_id || ' ' || url, id || '|' || created_at || '|' || updated_at FROM webhook_endpoints`,
		tables,
	} {
		queryRows(t, s, q, nil, func(scan func(...any) error) error {
			var k, v string
			if err := scan(&k, &v); err != nil {
				return err
			}
			out[k] = v
			return nil
		})
	}
	for k := range out {
		if table, ok := strings.CutPrefix(k, "rows "); ok {
			out[k] = fmt.Sprint(queryInt(t, s, `SELECT count(*) FROM "`+table+`"`))
		}
	}
	return out
}

// TestFixturesIdempotent: applying the same fixtures again, later, changes
// no row (updated_at included) and duplicates none; changing one scenario
// in the file changes that scenario only; a wallet's balance is an opening
// balance that a restart does not reset.
func TestFixturesIdempotent(t *testing.T) { eachBackend(t, testFixturesIdempotent) }

func testFixturesIdempotent(t *testing.T, backend string) {
	s, _ := fixtureStoreOn(t, backend)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	text := testFixtures + manyScenarios()
	applyTestFixtures(t, s, text, t0)
	first := fixtureSnapshot(t, s)
	if first["rows applications"] != "7" || first["rows scenarios"] != "69" || first["rows webhook_endpoints"] != "1" {
		t.Fatalf("first apply: %s applications, %s scenarios, %s webhooks", first["rows applications"], first["rows scenarios"], first["rows webhook_endpoints"])
	}
	applyTestFixtures(t, s, text, t0.Add(time.Hour))
	if again := fixtureSnapshot(t, s); !reflect.DeepEqual(first, again) {
		for k, v := range again {
			if first[k] != v {
				t.Errorf("%s: %q -> %q", k, first[k], v)
			}
		}
		if len(first) != len(again) {
			t.Errorf("%d rows before, %d after", len(first), len(again))
		}
	}

	// A charged wallet keeps its balance across a restart.
	storeExec(t, s, `UPDATE wallets SET balance = 123 WHERE app_id = (SELECT id FROM applications WHERE api_key = 'qa-key')`)
	edited := strings.Replace(text, `name = "Payment reminder"`, `name = "Payment reminder v2"`, 1)
	t2 := t0.Add(2 * time.Hour)
	applyTestFixtures(t, s, edited, t2)
	after := fixtureSnapshot(t, s)
	ctx := context.Background()
	qa, _ := s.AppByKey(ctx, "qa-key")
	if w, _ := s.Wallet(ctx, qa.ID); w.Balance != 123 {
		t.Errorf("balance after re-applying fixtures: %d, want 123 (kept)", w.Balance)
	}
	sc, _ := s.Scenario(ctx, qa.ID, "sc-remind")
	if sc.Name != "Payment reminder v2" || !sc.UpdatedAt.Equal(t2) || !sc.CreatedAt.Equal(t0) {
		t.Errorf("edited scenario: name %q created %v updated %v", sc.Name, sc.CreatedAt, sc.UpdatedAt)
	}
	for k, v := range after {
		if k == fmt.Sprintf("scenario %d sc-remind", qa.ID) || strings.HasPrefix(k, "wallet ") {
			continue
		}
		if first[k] != v {
			t.Errorf("%s changed although its fixture did not: %q -> %q", k, first[k], v)
		}
	}
}

// TestFixtureErrors: a bad fixtures file stops the start with
// "file:line: key: message" (docs/design.md#configuration-file-environment-flags).
func TestFixtureErrors(t *testing.T) {
	const app = "[[applications]]\napi_key = \"k\"\napi_secret = \"s\"\n"
	for _, c := range []struct {
		name, text string
		want       string // after "path:"
	}{
		{"TOML syntax", app + "  [[applications.scenarios]]\n  id = \"sc\n",
			`5: applications.scenarios.id: `},
		{"wrong type", app + "  [applications.wallet]\n  balance = \"lots\"\n",
			`5: applications.wallet.balance: `},
		{"unknown key", app + "  [[applications.scenarios]]\n  id = \"sc\"\n  colour = \"red\"\n",
			`6: applications.scenarios.colour: unknown key`},
		{"unknown key in call_config", app + "  [[applications.scenarios]]\n  id = \"sc\"\n    [applications.scenarios.call_config]\n    max_concurent = 3\n",
			`7: applications.scenarios.call_config.max_concurent: unknown key`},
		{"bad status", app + "  [[applications.scenarios]]\n  id = \"sc\"\n  status = \"LIVE\"\n",
			`6: applications[0].scenarios[0].status: must be DRAFT, ACTIVE, REVIEWING or REJECT`},
		{"bad status in the second application", app + "[[applications]]\napi_key = \"k2\"\napi_secret = \"s\"\n  [[applications.scenarios]]\n  id = \"a\"\n  [[applications.scenarios]]\n  id = \"b\"\n  status = \"active\"\n",
			`11: applications[1].scenarios[1].status: must be DRAFT, ACTIVE, REVIEWING or REJECT`},
		{"campaign of a missing scenario", app + "  [[applications.scenarios]]\n  id = \"sc\"\n  [[applications.campaigns]]\n  id = \"camp\"\n  scenario_id = \"nope\"\n",
			`8: applications[0].campaigns[0].scenario_id: "nope" is not a scenario of this application`},
		{"missing api_secret", "[[applications]]\napi_key = \"k\"\n",
			`1: applications[0].api_secret: is required`},
		{"repeated api_key", app + app,
			`5: applications[1].api_key: "k" is used by an earlier application`},
		{"bad call_window", app + "  [[applications.scenarios]]\n  id = \"sc\"\n    [applications.scenarios.call_config.call_window]\n    start = \"8am\"\n",
			`6: applications[0].scenarios[0].call_config.call_window: start: "8am" is not a time like "08:00"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, "fixtures.toml", c.text)
			_, err := store.LoadFixtures(path)
			if err == nil {
				t.Fatal("loaded")
			}
			checkConfigError(t, err, path, c.want)

			// The same error stops a start.
			m := NewMain(os.Stdout)
			if err := m.ParseFlags([]string{"--listen", "127.0.0.1:0", "--database", filepath.Join(t.TempDir(), "d.db"), "--fixtures", path}, nil); err != nil {
				t.Fatal(err)
			}
			err = m.Run(context.Background())
			if err == nil {
				m.Close()
				t.Fatal("started with a bad fixtures file")
			}
			checkConfigError(t, err, path, c.want)
		})
	}
}

// checkConfigError: err reads "path:" + want, where a want ending in ": "
// (errors worded by the TOML library) only fixes line and key and needs
// some message after them.
func checkConfigError(t testing.TB, err error, path, want string) {
	t.Helper()
	got := err.Error()
	if strings.HasSuffix(want, ": ") {
		if !strings.HasPrefix(got, path+":"+want) || len(got) == len(path+":"+want) {
			t.Errorf("error %q, want %q followed by a message", got, path+":"+want)
		}
		return
	}
	if got != path+":"+want {
		t.Errorf("error\n got %q\nwant %q", got, path+":"+want)
	}
}

// TestConfigErrors: a bad config file or DIALBOX_* variable names the file
// (or variable), line and key.
func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		name, text string
		env        []string
		want       string
	}{
		{"TOML syntax", "listen = \"127.0.0.1:1\"\n[api\n", nil, `2: `},
		{"wrong type", "[limits]\nmax_contacts_per_request = \"many\"\n", nil, `2: limits.max_contacts_per_request: `},
		{"unknown key", "listen = \"127.0.0.1:1\"\n\n[api]\nerror_status = \"semantic\"\n", nil, `4: api.error_status: unknown key`},
		{"bad value", "[api]\n# comment\nerror_http_status = \"sometimes\"\n", nil, `3: api.error_http_status: must be "semantic" or "always_200"`},
		{"bad region", "[phone]\ndefault_region = \"XX\"\n", nil, `2: phone.default_region: "XX" is not a known region code like "VN"`},
		{"bad duration", "[webhooks]\ntimeout = \"soon\"\n", nil, `2: webhooks.timeout: `},
		{"bad destination prefix", "[destinations]\nallow = [\"+65\"]\ndeny = [\"1900\"]\n", nil,
			`3: destinations.deny: "1900" is not a number prefix: "+" and 1 to 15 digits, like "+8491"`},
		{"bad PostgreSQL URL, password hidden", "database = \"postgres://me:secret@db:port/x\"\n", nil,
			"1: database: must be a SQLite file or a valid PostgreSQL URL like \"postgres://user:password@host:5432/dialbox\": cannot parse `postgres://me:xxxxx@db:port/x`: invalid port"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, "dialbox.toml", c.text)
			_, err := config.LoadConfig(path, c.env)
			if err == nil {
				t.Fatal("loaded")
			}
			checkConfigError(t, err, path, c.want)
		})
	}
	t.Run("environment", func(t *testing.T) {
		_, err := config.LoadConfig("", []string{"DIALBOX_LIMITS_MAX_BODY_BYTES=big"})
		if err == nil || err.Error() != `environment DIALBOX_LIMITS_MAX_BODY_BYTES: limits.max_body_bytes: not an integer: "big"` {
			t.Errorf("error %v", err)
		}
		_, err = config.LoadConfig("", []string{"DIALBOX_API_ERROR_HTTP_STATUS=never"})
		if err == nil || !strings.Contains(err.Error(), `api.error_http_status: must be "semantic" or "always_200"`) {
			t.Errorf("error %v", err)
		}
	})
	t.Run("flag stops the start", func(t *testing.T) {
		path := writeFile(t, "dialbox.toml", "[api]\nerror_http_status = \"sometimes\"\n")
		m := NewMain(os.Stdout)
		err := m.ParseFlags([]string{"--config", path}, nil)
		if err == nil || err.Error() != path+`:2: api.error_http_status: must be "semantic" or "always_200"` {
			t.Errorf("error %v", err)
		}
	})
}

// TestConfigPrecedence: the file, then DIALBOX_* variables, then flags
// (docs/design.md#configuration-file-environment-flags); DIALBOX_CONFIG names the file when --config does not.
func TestConfigPrecedence(t *testing.T) {
	path := writeFile(t, "dialbox.toml", `
listen = "127.0.0.1:1001"
database = "file.db"
fixtures = "file-fixtures.toml"
[api]
error_http_status = "always_200"
[limits]
max_contacts_per_request = 7
[phone]
default_region = "GB"
`)
	for _, c := range []struct {
		name string
		args []string
		env  []string
		want func(*config.Config)
	}{
		{"file only", []string{"--config", path}, nil, func(c *config.Config) {}},
		{"DIALBOX_CONFIG names the file", nil, []string{"DIALBOX_CONFIG=" + path}, func(c *config.Config) {}},
		{"--config over DIALBOX_CONFIG", []string{"--config", path}, []string{"DIALBOX_CONFIG=/nonexistent/dialbox.toml"}, func(c *config.Config) {}},
		{"environment over file", []string{"--config", path},
			[]string{"DIALBOX_LISTEN=127.0.0.1:2002", "DIALBOX_DATABASE=env.db", "DIALBOX_API_ERROR_HTTP_STATUS=semantic", "DIALBOX_PHONE_DEFAULT_REGION=US", "OTHER_LISTEN=127.0.0.1:9"},
			func(c *config.Config) {
				c.Listen, c.Database, c.API.ErrorHTTPStatus, c.Phone.DefaultRegion = "127.0.0.1:2002", "env.db", "semantic", "US"
			}},
		{"flags over environment over file", []string{"--config", path, "--listen", "127.0.0.1:3003", "--fixtures", "flag-fixtures.toml"},
			[]string{"DIALBOX_LISTEN=127.0.0.1:2002", "DIALBOX_DATABASE=env.db", "DIALBOX_FIXTURES=env-fixtures.toml", "DIALBOX_LIMITS_MAX_CONTACTS_PER_REQUEST=8"},
			func(c *config.Config) {
				c.Listen, c.Database, c.Fixtures, c.Limits.MaxContactsPerRequest = "127.0.0.1:3003", "env.db", "flag-fixtures.toml", 8
			}},
		{"flags without a file", []string{"--database", "flag.db"}, []string{"DIALBOX_DATABASE=env.db"},
			func(c *config.Config) {
				*c = config.DefaultConfig()
				c.Database = "flag.db"
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := config.DefaultConfig()
			want.Listen, want.Database, want.Fixtures = "127.0.0.1:1001", "file.db", "file-fixtures.toml"
			want.API.ErrorHTTPStatus, want.Limits.MaxContactsPerRequest, want.Phone.DefaultRegion = "always_200", 7, "GB"
			c.want(&want)
			m := NewMain(os.Stdout)
			if err := m.ParseFlags(c.args, c.env); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(m.Config, want) {
				t.Errorf("config\n got %+v\nwant %+v", m.Config, want)
			}
		})
	}
}

// TestExampleConfig: config.example.toml documents every key with its
// default, so it decodes to exactly DefaultConfig() and names every key.
func TestExampleConfig(t *testing.T) {
	cfg, err := config.LoadConfig("config.example.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := config.DefaultConfig(); !reflect.DeepEqual(cfg, want) {
		t.Errorf("config.example.toml\n gives %+v\nDefault %+v", cfg, want)
	}
	data, err := os.ReadFile("config.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	// Every scalar key of Config is written in the file (active, not only
	// in a comment); tables of rules and maps may be shown commented out.
	def := config.DefaultConfig()
	config.WalkKeys(reflect.ValueOf(&def).Elem(), "", func(key string, f reflect.Value) error {
		if f.Kind() == reflect.Map || (f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Struct) {
			if !strings.Contains(string(data), key[strings.LastIndex(key, ".")+1:]) {
				t.Errorf("config.example.toml does not mention %s", key)
			}
			return nil
		}
		if config.KeyLine(data, key) == 0 || config.FindKeyLine(data, key) == 0 {
			t.Errorf("config.example.toml does not set %s", key)
		}
		return nil
	})
}
