package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"dialbox/internal/domain"
	"dialbox/internal/engine"
	"dialbox/internal/pgtest"
	"dialbox/internal/recordings"
	"dialbox/internal/sqldb"
	"dialbox/internal/store"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// `dialbox migrate-to` (docs/postgres.md#moving-from-sqlite): a SQLite
// database filled by a real server (API, engine, webhooks) is copied into
// PostgreSQL, verified, and served: the copy answers every admin and
// public read as the original does.

// migrateToFill runs a server on a new SQLite file until its calls and
// deliveries are settled, stops it, and leaves one call up as a crash
// would. It returns the file.
func migrateToFill(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	db := filepath.Join(dir, "dialbox.db")
	fx := writeFile(t, "fixtures.toml", adminFixtures)
	rcv := newWHReceiver(t)
	var mu sync.Mutex
	tries := map[string]int{}
	rcv.answer(func(r *http.Request) (int, http.Header) {
		mu.Lock()
		defer mu.Unlock()
		id := r.Header.Get("webhook-id")
		tries[id]++
		if tries[id] <= 2 { // every message delivered at its third attempt
			return http.StatusInternalServerError, nil
		}
		return 0, nil
	})
	m := startMain(t, io.Discard, []string{"--database", db, "--fixtures", fx},
		[]string{"DIALBOX_ADMIN_TOKEN=" + testAdminToken, "DIALBOX_ENGINE_ENABLED=true", "DIALBOX_SIMULATOR_TIME_SCALE=1000",
			"DIALBOX_LIMITS_RATE_PER_SECOND=0", "DIALBOX_WEBHOOKS_RETRY_SCHEDULE=0s,0s,0s"}, nil)
	s := &testServer{m: m, url: m.URL(), db: db}
	s.admin(t, "POST", "/apps/qa-key/webhooks", `{"url":"`+rcv.URL()+`","secret":"`+whSecret+`"}`, nil)
	// Nothing listens there: its messages die after three failed attempts.
	s.admin(t, "POST", "/apps/qa-key/webhooks", `{"url":"http://127.0.0.1:1/hook","secret":"`+whSecret+`","events":["call.completed"]}`, nil)
	s.admin(t, "POST", "/apps", `{"name":"Third tenant","api_key":"third-key","api_secret":"third-secret-0123"}`, nil)
	s.admin(t, "POST", "/apps/third-key/wallet/topup", `{"amount":50000}`, nil)
	// Paused campaigns keep their contacts queued.
	s.admin(t, "POST", "/apps/qa-key/campaigns/camp-2/pause", "", nil)
	s.admin(t, "POST", "/apps/other-key/campaigns/camp-other/pause", "", nil)
	// Do-not-call lists: the national register loaded twice (a replace
	// makes a new version, so the lists' ids go past 1) and the tenant's
	// own list, two of whose numbers it then imports and the engine blocks.
	register := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "+84913%06d\n", i)
		}
		return b.String()
	}
	s.admin(t, "PUT", "/dnc/numbers", register(1000), nil)
	s.admin(t, "PUT", "/dnc/numbers", register(migrateToRegister), nil)
	s.admin(t, "POST", "/apps/qa-key/dnc/numbers", `{"numbers":["0912000007","0912000008"]}`, nil)

	post := func(path, auth, body string) {
		t.Helper()
		if status, b := s.do(t, "POST", path, auth, body); status != 200 || !bytes.Contains(b, []byte(`"status":1`)) {
			t.Fatalf("POST %s: HTTP %d %s", path, status, b)
		}
	}
	qa, other := bearer(t, "qa-key", "qa-secret"), bearer(t, "other-key", "other-secret")
	var phones []string
	for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 9, 10, 11} {
		phones = append(phones, fmt.Sprintf(`{"phone_number":"+849000000%02d","ho_ten":"Khách %d"}`, n, n))
	}
	// A skipped contact (its number is not one) beside the added ones.
	post(opA("sc-remind"), qa, `{"contacts":[`+strings.Join(phones, ",")+`,{"phone_number":"not a phone"}]}`)
	post(opA("sc-remind"), qa, `{"contacts":[{"phone_number":"0912000001","ho_ten":"<b>&amp;</b>","note":"a`+"\u2028"+`b"}]}`)
	post(pathC, qa, `{"campaign_id":"camp-2","contacts":[{"phone_number":"0912000002"},{"phone_number":"0912000003"},{"phone_number":"x"}]}`)
	post(pathC, other, `{"campaign_id":"camp-other","contacts":[{"phone_number":"0912000004"}]}`)
	post(opA("sc-remind"), qa, `{"contacts":[{"phone_number":"0912000007"},{"phone_number":"0912000008"}]}`)

	waitFor(t, "the calls ended and every webhook message delivered or dead", func() bool {
		return queryInt(t, m.store, `SELECT count(*) FROM contacts WHERE scenario_id = 'sc-remind' AND state <> 'done'`) == 0 &&
			queryInt(t, m.store, `SELECT count(*) FROM webhook_messages WHERE state = 'pending'`) == 0
	})
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	// A call left up as a crash leaves it: its contact dialing.
	st, err := store.OpenSQLite(db, sqliteMigrations(), store.NewMetrics(false), recordings.Files{})
	if err != nil {
		t.Fatal(err)
	}
	opened(t, st, db)
	defer st.Close()

	// An advertising tenant with settings of its own, dialled by an engine
	// whose clock is in lawful hours: its calls carry ad_phone, its number
	// on the national register is blocked, and the number answered is held
	// by the daily limit in its second advertising scenario (call_blocks
	// with and without until). It has no webhooks, so a server on the
	// original has nothing to deliver while it is read.
	ad := adTenant("ad-key")
	ad.Webhooks = nil
	ad.Advertising = &store.FixtureAdvertising{End: "16:00"}
	if err := st.ApplyFixtures(context.Background(), []*store.FixtureApp{ad}, time.Now()); err != nil {
		t.Fatal(err)
	}
	clock := &engClock{}
	clock.Set(testDate(2026, 11, 30, 9, 0, 0, 0, hcm))
	e := engStart(t, st, nil, nil, func(p *engine.Parts) { p.Now = clock.Now })
	engImport(t, st, ad.ID, "sc", "", "+84900000001", "+84913000001")
	engWaitAllDone(t, st, ad.ID, 2)
	engImport(t, st, ad.ID, "ad2", "", "+84900000001")
	waitFor(t, "the second advertising call held by the daily limit", func() bool {
		return queryInt(t, st, `SELECT count(*) FROM call_blocks WHERE reason = ?`, domain.ReasonDailyLimit) == 1
	})
	e.Stop()

	app, err := st.AppByKey(context.Background(), "qa-key")
	if err != nil {
		t.Fatal(err)
	}
	engImport(t, st, app.ID, "sc-remind", "", "+84900000001")
	due, err := st.DueContacts(context.Background(), app.ID, "sc-remind", time.Now(), 10)
	if err != nil || len(due) != 1 {
		t.Fatalf("due: %v %v", due, err)
	}
	claim := domain.CallClaim{CallID: domain.NewV7(), AppID: app.ID, ScenarioID: "sc-remind", Contact: due[0], Hotline: "02873000001", Start: time.Now()}
	if taken, err := st.ClaimCalls(context.Background(), []domain.CallClaim{claim}, time.Now); err != nil || len(taken) != 1 {
		t.Fatalf("claim: %d %v", len(taken), err)
	}
	for _, state := range []string{"queued", "dialing", "done"} {
		if queryInt(t, st, `SELECT count(*) FROM contacts WHERE state = ?`, state) == 0 {
			t.Fatalf("no contact %s", state)
		}
	}
	for _, reason := range []string{domain.ReasonDNCTenant, domain.ReasonDNCNational, domain.ReasonDailyLimit} {
		if queryInt(t, st, `SELECT count(*) FROM call_blocks WHERE reason = ?`, reason) == 0 {
			t.Fatalf("no call blocked for %s", reason)
		}
	}
	if queryInt(t, st, `SELECT count(*) FROM calls WHERE ad_phone IS NOT NULL`) == 0 ||
		queryInt(t, st, `SELECT count(*) FROM advertising_settings`) == 0 ||
		queryInt(t, st, `SELECT count(*) FROM dnc_numbers`) < migrateToRegister ||
		queryInt(t, st, `SELECT count(*) FROM contact_counts WHERE n = 0`) == 0 {
		t.Fatal("the fill lacks advertising calls or settings, do-not-call numbers, or a count SQLite keeps at 0")
	}
	if queryInt(t, st, `SELECT count(*) FROM webhook_attempts WHERE status_code IS NULL`) == 0 ||
		queryInt(t, st, `SELECT count(*) FROM webhook_messages WHERE state = 'dead'`) == 0 ||
		queryInt(t, st, `SELECT count(*) FROM skipped_contacts`) < 2 {
		t.Fatal("the fill lacks failed attempts, dead messages or skipped contacts")
	}
	return db
}

// migrateToRegister is how many numbers the fill's national register holds.
const migrateToRegister = 5000

// migrateTo runs the command as the binary does.
func migrateTo(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(context.Background(), append([]string{"migrate-to"}, args...), &out, nil)
	t.Logf("dialbox migrate-to: %v\n%s", err, out.String())
	return out.String(), err
}

// migrateToReads collects the answers of every admin and public read of
// the server's tenants, by path.
func migrateToReads(t *testing.T, s *testServer) map[string]string {
	t.Helper()
	reads := map[string]string{}
	get := func(path, auth string) []byte {
		t.Helper()
		status, b := s.do(t, "GET", path, auth, "")
		if status != 200 {
			t.Fatalf("GET %s: HTTP %d %s", path, status, b)
		}
		reads[path] = string(b)
		return b
	}
	ids := func(body []byte, list string) []string {
		var env struct {
			Result map[string]json.RawMessage
		}
		var items []struct{ ID string }
		if err := json.Unmarshal(body, &env); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(env.Result[list], &items); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, item := range items {
			out = append(out, item.ID)
		}
		if len(out) == 0 {
			t.Fatalf("no %s in %s", list, body)
		}
		return out
	}
	get("/admin/v1/apps", adminAuth)
	get("/admin/v1/dnc", adminAuth)
	for _, n := range []string{"+84913000001", "+84913004999", "0912000007", "0912000009"} {
		get("/admin/v1/dnc/numbers/"+n, adminAuth)
		get("/admin/v1/apps/qa-key/dnc/numbers/"+n, adminAuth)
	}
	for _, key := range []string{"qa-key", "other-key", "third-key", "ad-key"} {
		app := "/admin/v1/apps/" + key
		for _, r := range []string{"", "/wallet", "/pools", "/scenarios", "/campaigns", "/webhooks", "/advertising", "/dnc"} {
			get(app+r, adminAuth)
		}
		if key == "third-key" {
			continue
		}
		for _, id := range ids(get(app+"/contacts?limit=500", adminAuth), "contacts") {
			get(app+"/contacts/"+id, adminAuth)
		}
		get(app+"/contacts?state=queued&limit=2", adminAuth)
		for _, id := range ids(get(app+"/imports", adminAuth), "imports") {
			get(app+"/imports/"+id, adminAuth)
		}
	}
	for _, id := range ids(get("/admin/v1/apps/qa-key/webhook-messages?limit=500", adminAuth), "messages") {
		get("/admin/v1/apps/qa-key/webhook-messages/"+id, adminAuth)
	}
	get(pathB, bearer(t, "qa-key", "qa-secret"))
	get(pathB, bearer(t, "other-key", "other-secret"))
	return reads
}

// migrateToServe starts a server without engine on database and reads.
func migrateToServe(t *testing.T, database string) (*testServer, map[string]string) {
	t.Helper()
	m := startMain(t, io.Discard, []string{"--database", database},
		[]string{"DIALBOX_ADMIN_TOKEN=" + testAdminToken, "DIALBOX_ENGINE_ENABLED=false", "DIALBOX_LIMITS_RATE_PER_SECOND=0",
			"DIALBOX_RECORDINGS_DIR=" + filepath.Join(t.TempDir(), "recordings")}, nil)
	t.Cleanup(func() { m.Close() })
	s := &testServer{m: m, url: m.URL(), db: database}
	return s, migrateToReads(t, s)
}

func migrateToPool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// migrateToSchema is pgSchema with the names of constraints and whether
// each trigger is on.
func migrateToSchema(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT 'constraint ' || conname || ' ' || conrelid::regclass || ' ' || pg_get_constraintdef(oid)
			FROM pg_constraint WHERE connamespace = 'public'::regnamespace
		UNION ALL SELECT 'trigger ' || tgname || ' ' || tgenabled::text FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return pgSchema(t, pool) + "\n" + strings.Join(lines, "\n")
}

// verifiedTables reads the verification table's lines: table -> result.
func verifiedTables(t *testing.T, out string) map[string]string {
	t.Helper()
	res := map[string]string{}
	in := false
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == "TABLE" {
			in = true
			continue
		}
		if len(f) < 6 {
			in = false
			continue
		}
		if _, err := strconv.Atoi(f[1]); in && err == nil {
			res[f[0]] = strings.Join(f[5:], " ")
		}
	}
	return res
}

func TestMigrateTo(t *testing.T) {
	target := pgtest.Database(t)
	source := migrateToFill(t)

	out, err := migrateTo(t, target, "--database", source)
	if err != nil {
		t.Fatal(err)
	}
	tables := verifiedTables(t, out)
	// Every table of the SQLite file, SQLite's own left out: its internal
	// tables and the phone index it keeps behind the imports, which
	// PostgreSQL keeps as an index (docs/postgres.md#moving-from-sqlite).
	liteTables, _ := func() ([]string, error) {
		db, err := store.OpenPlain(source)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		return sqldb.Collect(context.Background(), sqldb.SQL(db), func(r sqldb.Row) (string, error) {
			var name string
			return name, r.Scan(&name)
		}, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'
			AND name NOT IN ('contact_phones', 'contact_phones_indexed')`)
	}()
	if len(liteTables) < 13 || len(tables) != len(liteTables) {
		t.Fatalf("verified %v, SQLite has %v", tables, liteTables)
	}
	for _, name := range liteTables {
		if !strings.HasPrefix(tables[name], "ok") {
			t.Errorf("table %s: %q", name, tables[name])
		}
	}
	for _, derived := range []string{"queued_contacts", "contact_counts", "webhook_counts"} {
		if tables[derived] != "ok, recount ok" {
			t.Errorf("%s: %q", derived, tables[derived])
		}
	}

	// The copy has the schema of a new database: every index, key and
	// trigger made again, under its own name, triggers on.
	fresh := pgtest.Database(t)
	freshPool, copyPool := migrateToPool(t, fresh), migrateToPool(t, target)
	if err := store.MigratePostgres(context.Background(), freshPool, postgresMigrations(), len(postgresMigrations())); err != nil {
		t.Fatal(err)
	}
	if got, want := migrateToSchema(t, copyPool), migrateToSchema(t, freshPool); got != want {
		t.Errorf("the copy's schema\n%s\nwant\n%s", got, want)
	}

	// The copy answers as the original.
	lite, want := migrateToServe(t, source)
	lite.m.Close()
	pg, got := migrateToServe(t, target)
	for path, body := range want {
		if got[path] != body {
			t.Errorf("GET %s\n  SQLite:     %s\n  PostgreSQL: %s", path, body, got[path])
		}
	}
	if len(got) != len(want) || len(want) < 40 {
		t.Errorf("%d reads on PostgreSQL, %d on SQLite", len(got), len(want))
	}

	// The console's counts are the rows' on the copy: copied once, not
	// appended again as changes.
	st := pg.m.store
	migrateToCheckCounts(t, st, "on the copy")

	// Identity columns go on past the copied ids: new rows are stored.
	migrateToCheckIdentities(t, st)
	pg.admin(t, "POST", "/apps", `{"name":"After the move","api_key":"after-key","api_secret":"after-secret-0123"}`, nil)
	pg.admin(t, "POST", "/apps/after-key/dnc/numbers", `{"numbers":["0912000009"]}`, nil)
	if status, b := pg.do(t, "POST", opA("sc-remind"), bearer(t, "qa-key", "qa-secret"),
		`{"contacts":[{"phone_number":"0912000009"},{"phone_number":"nope"}]}`); status != 200 || !bytes.Contains(b, []byte(`"status":1`)) {
		t.Fatalf("import on the copy: HTTP %d %s", status, b)
	}
	var importSeq, maxCopied int64
	queryRow(t, st, `SELECT max(seq) FILTER (WHERE id IN (SELECT import_id FROM contacts WHERE phone = '+84912000009')),
			max(seq) FILTER (WHERE id NOT IN (SELECT import_id FROM contacts WHERE phone = '+84912000009')) FROM imports`, nil,
		&importSeq, &maxCopied)
	if importSeq <= maxCopied {
		t.Errorf("the new import's seq %d is not after the copied ones' (%d)", importSeq, maxCopied)
	}

	// The call the crash left up is settled by the first PostgreSQL node,
	// as SQLite's next start would have.
	if n, err := pg.m.store.SettleInterrupted(context.Background(), time.Now(), time.Now()); err != nil || n != 1 {
		t.Errorf("settled %d calls left up, want 1: %v", n, err)
	}
	// The import and the settle are counted as changes on top of the
	// copied counts, and folded into them.
	migrateToCheckCounts(t, st, "after an import and a settle on the copy")
	// The node folds them every few seconds (internal/store/postgres_console.go).
	waitFor(t, "the changes folded into the counts", func() bool {
		return queryInt(t, st, `SELECT count(*) FROM contact_count_changes`) == 0
	})
	migrateToCheckCounts(t, st, "after a fold")
}

// migrateToCheckCounts compares the console's counts with count(*) of
// the rows: each scenario's and campaign's contacts by state and outcome,
// each endpoint's messages by state.
func migrateToCheckCounts(t *testing.T, s Store, when string) {
	t.Helper()
	ctx := context.Background()
	type progressKey struct {
		app                int64
		scenario, campaign string
	}
	want := map[progressKey]map[string]int64{}
	rows, err := outside(t, s).pg.Query(ctx, `SELECT app_id, scenario_id, c, state, coalesce(outcome, ''), count(*)
		FROM contacts, LATERAL (VALUES (''), (campaign_id)) AS v(c) WHERE c IS NOT NULL
		GROUP BY 1, 2, 3, 4, 5`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k progressKey
		var state, outcome string
		var n int64
		if err := rows.Scan(&k.app, &k.scenario, &k.campaign, &state, &outcome, &n); err != nil {
			t.Fatal(err)
		}
		if want[k] == nil {
			want[k] = map[string]int64{}
		}
		if state == domain.ContactQueued || state == domain.ContactDialing {
			want[k][state] += n
		} else {
			want[k]["done "+outcome] += n
		}
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if len(want) < 6 {
		t.Fatalf("%s: counts of only %d scenarios and campaigns to compare", when, len(want))
	}
	for k, w := range want {
		p, err := s.ContactProgress(ctx, k.app, k.scenario, k.campaign)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{domain.ContactQueued: p.Queued, domain.ContactDialing: p.Dialing}
		var done int64
		for _, o := range p.Outcomes {
			got["done "+o.Outcome] += o.N
			done += o.N
		}
		maps.DeleteFunc(got, func(_ string, n int64) bool { return n == 0 })
		if !maps.Equal(got, w) || done != p.Done {
			t.Errorf("%s: the console's counts of %+v are %v (done %d), the rows' %v", when, k, got, p.Done, w)
		}
	}

	wantStates := map[string]map[string]int64{}
	rows, err = outside(t, s).pg.Query(ctx, `SELECT e.id, m.state, count(m.seq) FROM webhook_endpoints e
		LEFT JOIN webhook_messages m ON m.endpoint_id = e.id GROUP BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var endpoint string
		var state *string
		var n int64
		if err := rows.Scan(&endpoint, &state, &n); err != nil {
			t.Fatal(err)
		}
		if wantStates[endpoint] == nil {
			wantStates[endpoint] = map[string]int64{}
		}
		if state != nil {
			wantStates[endpoint][*state] = n
		}
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	for endpoint, w := range wantStates {
		got, err := s.MessageStates(ctx, endpoint)
		if err != nil {
			t.Fatal(err)
		}
		maps.DeleteFunc(got, func(_ string, n int64) bool { return n == 0 })
		if !maps.Equal(got, w) {
			t.Errorf("%s: the console's counts of endpoint %s's messages are %v, the rows' %v", when, endpoint, got, w)
		}
	}
}

// migrateToCheckIdentities checks that every identity column's next value
// is past the column's copied values.
func migrateToCheckIdentities(t *testing.T, s Store) {
	t.Helper()
	ctx := context.Background()
	rows, err := outside(t, s).pg.Query(ctx, `SELECT table_name::text, column_name::text FROM information_schema.columns
		WHERE table_schema = current_schema() AND is_identity = 'YES'`)
	if err != nil {
		t.Fatal(err)
	}
	type column struct{ Table, Name string }
	cols, err := pgx.CollectRows(rows, pgx.RowToStructByPos[column])
	if err != nil {
		t.Fatal(err)
	}
	copied := 0
	for _, c := range cols {
		table, col := pgx.Identifier{c.Table}.Sanitize(), pgx.Identifier{c.Name}.Sanitize()
		var maxCopied, next int64
		if err := outside(t, s).pg.QueryRow(ctx, `SELECT coalesce(max(`+col+`), 0) FROM `+table).Scan(&maxCopied); err != nil {
			t.Fatal(err)
		}
		if maxCopied == 0 {
			continue
		}
		copied++
		if err := outside(t, s).pg.QueryRow(ctx, `SELECT nextval(pg_get_serial_sequence($1, $2))`, table, c.Name).Scan(&next); err != nil {
			t.Fatal(err)
		}
		if next <= maxCopied {
			t.Errorf("%s.%s's next value is %d, not past the copied %d", c.Table, c.Name, next, maxCopied)
		}
	}
	if copied < 5 {
		t.Errorf("only %d identity columns hold copied values", copied)
	}
}

// What migrate-to refuses, each with a message that says why, and a
// target it refuses is left as it was.
func TestMigrateToRefuses(t *testing.T) {
	target := pgtest.Database(t)
	dir := t.TempDir()
	source := filepath.Join(dir, "dialbox.db")
	fx := writeFile(t, "fixtures.toml", adminFixtures)
	m := startMain(t, io.Discard, []string{"--database", source, "--fixtures", fx}, []string{"DIALBOX_ENGINE_ENABLED=false"}, nil)

	check := func(what string, err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error saying %q", what, err, want)
		}
	}
	_, err := migrateTo(t, target, "--database", source)
	check("a server running", err, "in use by a running dialbox")
	m.Close()

	for _, bad := range []string{"mysql://u@h/db", "postgres://u@127.0.0.1:notaport/db", "/tmp/other.db"} {
		_, err := migrateTo(t, bad, "--database", source)
		check(bad, err, "migrate-to: ")
	}
	_, err = migrateTo(t, "postgres://dialbox@127.0.0.1:1/dialbox?connect_timeout=5", "--database", source)
	check("a target that does not answer", err, "migrate-to: postgres://dialbox@127.0.0.1:1/dialbox")
	_, err = migrateTo(t, target, "--database", filepath.Join(dir, "missing.db"))
	check("a missing SQLite file", err, "no such file")
	_, err = migrateTo(t, target, "--database", writeFile(t, "empty.db", ""))
	check("an empty file", err, "is not a dialbox database")
	_, err = migrateTo(t, target, target)
	check("two targets", err, "give one postgres:// URL")

	// A SQLite table PostgreSQL's schema lacks (another branch's, say).
	db, err := store.OpenPlain(source)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE sms_outbox (phone TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	_, err = migrateTo(t, target, "--database", source)
	check("a table missing in PostgreSQL", err, "table sms_outbox of")
	if _, err := db.Exec(`DROP TABLE sms_outbox`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	conn, err := pgx.Connect(context.Background(), target)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var apps int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM applications`).Scan(&apps); err != nil || apps != 0 {
		t.Fatalf("the refused copy left %d applications (%v)", apps, err)
	}

	// A target that holds data, and --replace.
	if _, err := migrateTo(t, target, "--database", source); err != nil {
		t.Fatal(err)
	}
	_, err = migrateTo(t, target, "--database", source)
	check("a target holding data", err, "already holds data (table")
	if _, err := migrateTo(t, target, "--database", source, "--replace"); err != nil {
		t.Errorf("--replace: %v", err)
	}
}

// A copy that differs from the original fails verification, which names
// the table.
func TestMigrateToDetectsMismatch(t *testing.T) {
	target := pgtest.Database(t)
	source := filepath.Join(t.TempDir(), "dialbox.db")
	fx := writeFile(t, "fixtures.toml", adminFixtures)
	m := startMain(t, io.Discard, []string{"--database", source, "--fixtures", fx}, []string{"DIALBOX_ENGINE_ENABLED=false"}, nil)
	s := &testServer{m: m, url: m.URL(), db: source}
	for range 3 {
		if status, b := s.do(t, "POST", opA("sc-remind"), bearer(t, "qa-key", "qa-secret"),
			`{"contacts":[{"phone_number":"0912000001"},{"phone_number":"0912000002"}]}`); status != 200 {
			t.Fatalf("HTTP %d %s", status, b)
		}
	}
	m.Close()
	if _, err := migrateTo(t, target, "--database", source); err != nil {
		t.Fatal(err)
	}
	out, err := migrateTo(t, target, "--database", source, "--verify-only")
	if err != nil || !strings.Contains(out, "is a verified copy") {
		t.Fatalf("verify an intact copy: %v", err)
	}

	conn, err := pgx.Connect(context.Background(), target)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, c := range []struct{ table, change, result string }{
		{"contacts", `UPDATE contacts SET fields = '{"ho_ten":"x"}' WHERE seq = (SELECT max(seq) FROM contacts)`, "CHECKSUMS DIFFER"},
		{"skipped_contacts", `INSERT INTO skipped_contacts SELECT id, 99, '{}', 'x' FROM imports LIMIT 1`, "ROW COUNTS DIFFER"},
		{"queued_contacts", `UPDATE queued_contacts SET n = n + 1`, "CHECKSUMS DIFFER"},
		// A count copied and also appended as a change: doubled.
		{"contact_counts", `INSERT INTO contact_count_changes SELECT * FROM contact_counts`, "RECOUNT DIFFERS (1 rows)"},
	} {
		if _, err := conn.Exec(context.Background(), c.change); err != nil {
			t.Fatal(err)
		}
		out, err := migrateTo(t, target, "--database", source, "--verify-only")
		if err == nil || !strings.Contains(err.Error(), "verification failed for "+c.table) {
			t.Errorf("%s changed: %v", c.table, err)
		}
		if got := verifiedTables(t, out)[c.table]; got != c.result {
			t.Errorf("%s changed: result %q, want %q", c.table, got, c.result)
		}
		if _, err := migrateTo(t, target, "--database", source, "--replace"); err != nil {
			t.Fatal(err)
		}
	}

	// A count SQLite got wrong is copied as it is, and the recount on
	// PostgreSQL catches it: the run commits nothing, so the copy already
	// there stays (--replace emptied it in the transaction rolled back).
	db, err := store.OpenPlain(source)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE queued_contacts SET n = n + 1 WHERE app_id = (SELECT min(app_id) FROM queued_contacts)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	out, err = migrateTo(t, target, "--database", source, "--replace")
	if err == nil || !strings.Contains(err.Error(), "verification failed for queued_contacts: nothing was committed") {
		t.Errorf("a wrong count copied: %v", err)
	}
	if got := verifiedTables(t, out)["queued_contacts"]; got != "RECOUNT DIFFERS (1 rows)" {
		t.Errorf("a wrong count copied: result %q", got)
	}
	var contacts int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM contacts`).Scan(&contacts); err != nil || contacts != 6 {
		t.Errorf("the copy there before holds %d contacts, want 6 (%v)", contacts, err)
	}
}

// A SQLite file an older dialbox left is brought to this one's schema
// first, as a start would, and then copied.
func TestMigrateToOlderSQLite(t *testing.T) {
	target := pgtest.Database(t)
	source := filepath.Join(t.TempDir(), "old.db")
	old, err := store.OpenSQLite(source, sqliteMigrations()[:5], store.NewMetrics(false), recordings.Files{})
	if err != nil {
		t.Fatal(err)
	}
	opened(t, old, source)
	// As that older dialbox wrote it: CreateApp now writes columns of later
	// migrations.
	storeExec(t, old, `INSERT INTO applications (name, api_key, api_secret, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`,
		"Old tenant", "old-key", "old-secret", store.Millis(time.Now()), store.Millis(time.Now()))
	old.Close()
	out, err := migrateTo(t, target, "--database", source)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("(schema version %d)", len(sqliteMigrations())); !strings.Contains(out, want) {
		t.Errorf("the output does not say %s", want)
	}
	if got := verifiedTables(t, out)["applications"]; got != "ok" {
		t.Errorf("applications: %q", got)
	}
}
