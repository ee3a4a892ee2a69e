package main

// Helpers every test file shares: starting a dialbox, sending requests,
// minting tokens, opening stores, waiting for what runs on its own
// goroutines. Tests wait on conditions, never on durations; the deadlines
// only bound a hung test.

import (
	"dialbox/internal/auth"
	"dialbox/internal/config"
	"dialbox/internal/domain"
	"dialbox/internal/recordings"
	"dialbox/internal/store"
	"dialbox/internal/testtool"
	"fmt"
	"sync"

	"bytes"
	"context"
	"database/sql"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dialbox/internal/pgtest"
	"dialbox/internal/sqldb"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ---- a running dialbox ----

// testServer is a dialbox started by Main exactly as `dialbox serve` starts.
type testServer struct {
	m   *Main
	url string
	db  string
	// lastContentType is the Content-Type of the last answer to do.
	lastContentType string
}

// testBackends are the stores the tests that run on every backend use,
// from one table: each gives a new database of its kind, as `database`
// names it, holding no data. PostgreSQL's skips the test with the reason
// when no server is configured (internal/pgtest), and is a copy of
// migratedPostgres.
var testBackends = []struct {
	name     string
	database func(t testing.TB) string
}{
	{"sqlite", func(t testing.TB) string { return filepath.Join(t.TempDir(), "dialbox.db") }},
	{"postgres", migratedPostgres.Database},
}

// migratedPostgres is a PostgreSQL database migrated once per test run
// and copied for each test: copying it is cheaper than migrating a new
// one (docs/postgres.md#running-the-tests). TestMain drops it.
var migratedPostgres = &pgtest.Template{Prepare: func(ctx context.Context, url string) error {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	return store.MigratePostgres(ctx, pool, postgresMigrations(), len(postgresMigrations()))
}}

// eachBackend runs test once per backend, as a subtest named after it.
func eachBackend(t *testing.T, test func(t *testing.T, backend string)) {
	for _, b := range testBackends {
		t.Run(b.name, func(t *testing.T) { test(t, b.name) })
	}
}

// seenAfter checks cond, what a running server answers after another
// process (the CLI) changed its database, and fails the test with what if
// it never holds. On SQLite the server sees the commit at its next
// request (internal/store/catalog_watch.go), so cond must hold at once; on PostgreSQL it
// sees it once the commit's notification arrives, milliseconds later
// (docs/postgres.md#configuration-changes), so cond is polled there.
func seenAfter(t testing.TB, backend, what string, cond func() bool) {
	t.Helper()
	if backend == "sqlite" {
		if !cond() {
			t.Errorf("the server does not see %s", what)
		}
		return
	}
	testtool.WaitFor(t, "the server to see "+what, 30*time.Second, cond)
}

// configOn is the default configuration with database set.
func configOn(database string) config.Config {
	cfg := config.DefaultConfig()
	cfg.Database = database
	return cfg
}

func backendDatabase(t testing.TB, backend string) string {
	t.Helper()
	for _, b := range testBackends {
		if b.name == backend {
			return b.database(t)
		}
	}
	t.Fatalf("no backend %q", backend)
	return ""
}

// manyWrongTokens lifts the limit on wrong admin tokens for the tests
// that send a wrong token to every admin route on purpose.
var manyWrongTokens = []string{"DIALBOX_ADMIN_WRONG_TOKENS_PER_ADDRESS=1000000", "DIALBOX_ADMIN_WRONG_TOKENS_OVERALL=1000000"}

// startServer writes the fixtures to a temp dir and starts dialbox with
// serve's own flags, on SQLite.
func startServer(t testing.TB, fixtures string, env ...string) *testServer {
	t.Helper()
	return startServerOn(t, "sqlite", fixtures, env...)
}

// startServerOn is startServer on a new database of the backend.
func startServerOn(t testing.TB, backend, fixtures string, env ...string) *testServer {
	t.Helper()
	fx := writeFile(t, "fixtures.toml", fixtures)
	db := filepath.Join(filepath.Dir(fx), "dialbox.db") // the folders "beside the database" are the test's
	if backend != "sqlite" {
		db = backendDatabase(t, backend)
		// "Beside the database" is the working directory on PostgreSQL.
		env = append([]string{"DIALBOX_RECORDINGS_DIR=" + filepath.Join(filepath.Dir(fx), "recordings")}, env...)
	}
	return startServerAt(t, db, fx, env...)
}

func startServerAt(t testing.TB, db, fixtures string, env ...string) *testServer {
	t.Helper()
	// No engine (contacts stay queued, which the duplicate rules rely on) and
	// no rate limit (the tables send many requests with one token).
	env = append([]string{"DIALBOX_ENGINE_ENABLED=false", "DIALBOX_LIMITS_RATE_PER_SECOND=0"}, env...)
	m := startMain(t, io.Discard, []string{"--database", db, "--fixtures", fixtures}, env, nil)
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return &testServer{m: m, url: m.URL(), db: db}
}

// startMain starts a Main on 127.0.0.1:0 exactly as `dialbox serve`
// does, with serve's flags (args) and environment; setup, if set, runs
// between reading them and Run. Its log goes to the test's. The caller
// closes it.
func startMain(t testing.TB, stdout io.Writer, args, env []string, setup func(*Main)) *Main {
	t.Helper()
	m := NewMain(stdout)
	m.Log = testLogger(t)
	if err := m.ParseFlags(append([]string{"--listen", "127.0.0.1:0"}, args...), env); err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(m)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	opened(t, m.store, m.Config.Database)
	return m
}

// exec changes the server's database where the public API cannot
// (disable an application, break a row on purpose): storeExec.
func (s *testServer) exec(t testing.TB, query string, args ...any) {
	t.Helper()
	storeExec(t, s.m.store, query, args...)
}

// ---- requests ----

var httpClient = &http.Client{Timeout: 2 * time.Minute}

// do sends one request; auth is the whole Authorization header ("" sends none).
func (s *testServer) do(t testing.TB, method, path, auth, body string) (int, []byte) {
	t.Helper()
	resp, b, err := request(method, s.url+path, auth, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	s.lastContentType = resp.Header.Get("Content-Type")
	return resp.StatusCode, b
}

// request sends one request and reads the whole answer; auth is the whole
// Authorization header ("" sends none), header more name, value pairs. It
// is usable from any goroutine.
func request(method, url, auth, body string, header ...string) (*http.Response, []byte, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return nil, nil, err
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func opsDo(t *testing.T, method, url, token, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	resp, b, err := opsRequest(method, url, token, body, header...)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// opsRequest is request with a bare ACCESS_TOKEN ("" sends none).
func opsRequest(method, url, token, body string, header ...string) (*http.Response, []byte, error) {
	if token != "" {
		token = "Bearer " + token
	}
	return request(method, url, token, body, header...)
}

// ---- tokens ----

// sign makes an ACCESS_TOKEN the way a customer does (docs/design.md#customers-make-their-own-access-tokens).
func sign(t testing.TB, method jwt.SigningMethod, secret string, claims jwt.MapClaims) string {
	t.Helper()
	var key any = []byte(secret)
	if method == jwt.SigningMethodNone {
		key = jwt.UnsafeAllowNoneSignatureType
	}
	s, err := jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func bearer(t testing.TB, apiKey, secret string) string {
	return "Bearer " + sign(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"apiKey": apiKey})
}

// mustSign signs an HS256 token outside a test (for table literals).
func mustSign(claims jwt.MapClaims, secret string) string {
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(secret))
	if err != nil {
		panic(err)
	}
	return s
}

// mintFor mints an ACCESS_TOKEN for the application of apiKey, as
// `dialbox token` does.
func mintFor(t testing.TB, s *testServer, apiKey string) string {
	t.Helper()
	app, err := s.m.store.AppByKey(context.Background(), apiKey)
	if err != nil {
		t.Fatal(err)
	}
	return mintToken(t, app)
}

// mintToken is MintToken that fails the test instead of returning an error.
func mintToken(t testing.TB, app *domain.Application) string {
	t.Helper()
	tok, err := auth.MintToken(app, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// ---- stores ----

func openTestStore(t testing.TB) (*store.SQLite, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dialbox.db")
	s, err := store.OpenSQLite(path, sqliteMigrations(), store.NewMetrics(false), recordings.Files{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	opened(t, s, path)
	return s, path
}

// fixtureStoreOn opens a fresh database of the backend holding the
// tenants; it returns their ids.
func fixtureStoreOn(t testing.TB, backend string, apps ...*store.FixtureApp) (Store, []int64) {
	t.Helper()
	return fixtureStoreIn(t, backendDatabase(t, backend), apps...)
}

// fixtureStoreIn is fixtureStoreOn on the database `database` names, for
// a test that opens it a second way (the CLI).
func fixtureStoreIn(t testing.TB, database string, apps ...*store.FixtureApp) (Store, []int64) {
	t.Helper()
	s, err := openConfiguredStore(context.Background(), configOn(database), store.NewMetrics(config.IsPostgresURL(database)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	opened(t, s, database)
	if err := s.ApplyFixtures(context.Background(), apps, time.Now()); err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, len(apps))
	for i, a := range apps {
		ids[i] = a.ID
	}
	return s, ids
}

// fixtureStore opens a fresh database holding the tenants; it returns their ids.
func fixtureStore(t testing.TB, apps ...*store.FixtureApp) (*store.SQLite, []int64) {
	t.Helper()
	return fixtureStoreAt(t, filepath.Join(t.TempDir(), "engine.db"), apps...)
}

func fixtureStoreAt(t testing.TB, path string, apps ...*store.FixtureApp) (*store.SQLite, []int64) {
	t.Helper()
	s, err := store.OpenSQLite(path, sqliteMigrations(), store.NewMetrics(false), recordings.Files{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	opened(t, s, path)
	if err := s.ApplyFixtures(context.Background(), apps, time.Now()); err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, len(apps))
	for i, a := range apps {
		ids[i] = a.ID
	}
	return s, ids
}

// ---- the database under a store ----

// Tests read and change a store's database through connections of their
// own, as another process would; the store keeps its own to itself. A
// store commits nothing these helpers wrote for it, so it sees their
// changes as another process's: SQLite's at its next read
// (internal/store/catalog_watch.go), PostgreSQL's once notified
// (docs/postgres.md#configuration-changes).

// storeDatabases is the database each store the helpers opened was opened
// on, as `database` names it.
var storeDatabases sync.Map // Store -> string

// opened records that s is the store of database, for the helpers below.
func opened(t testing.TB, s Store, database string) {
	storeDatabases.Store(s, database)
	t.Cleanup(func() { storeDatabases.Delete(s) })
}

// databaseOf is the database s was opened on.
func databaseOf(t testing.TB, s Store) string {
	t.Helper()
	database, ok := storeDatabases.Load(s)
	if !ok {
		t.Fatalf("the test opened a %T without the helpers (opened), so its database is unknown", s)
	}
	return database.(string)
}

// outsideDB is the test's own connection to a database.
type outsideDB struct {
	sqlite *sql.DB       // a SQLite file's
	pg     *pgxpool.Pool // PostgreSQL's
}

func (o *outsideDB) querier() sqldb.Querier {
	if o.pg != nil {
		return sqldb.PGX(o.pg)
	}
	return sqldb.SQL(o.sqlite)
}

// outsideDBs holds the connections the running tests opened, by database.
var outsideDBs sync.Map // string -> *outsideDB

// outsideAt is the test's connection to database, opened at its first use
// and closed when the test ends. Its SQLite transactions take the write
// lock at BEGIN: one that read first and then wrote while the store's
// writer held the lock would fail SQLITE_BUSY at once, the busy timeout
// not applying to that upgrade.
func outsideAt(t testing.TB, database string) *outsideDB {
	t.Helper()
	if o, ok := outsideDBs.Load(database); ok {
		return o.(*outsideDB)
	}
	o := &outsideDB{}
	var err error
	if config.IsPostgresURL(database) {
		o.pg, err = pgxpool.New(context.Background(), database)
	} else {
		o.sqlite, err = sql.Open("sqlite", "file:"+(&url.URL{Path: database}).EscapedPath()+
			"?_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_txlock=immediate")
	}
	if err != nil {
		t.Fatal(err)
	}
	if prev, loaded := outsideDBs.LoadOrStore(database, o); loaded {
		o.close()
		return prev.(*outsideDB)
	}
	t.Cleanup(func() {
		outsideDBs.Delete(database)
		o.close()
	})
	return o
}

func (o *outsideDB) close() {
	if o.pg != nil {
		o.pg.Close()
	} else {
		o.sqlite.Close()
	}
}

// outside is the test's connection to s's database.
func outside(t testing.TB, s Store) *outsideDB {
	t.Helper()
	return outsideAt(t, databaseOf(t, s))
}

// sqliteAt is the test's connection to the SQLite file at path, for what
// only SQLite says (its query plans, PRAGMAs).
func sqliteAt(t testing.TB, path string) *sql.DB {
	t.Helper()
	if config.IsPostgresURL(path) {
		t.Fatalf("this test reads SQLite's own tables; the database is PostgreSQL")
	}
	return outsideAt(t, path).sqlite
}

// outsideWrite runs fn in one transaction of the test's connection to s's
// database; the SQL both databases speak, with ? placeholders.
func outsideWrite(t testing.TB, s Store, fn func(tx sqldb.Querier) error) {
	t.Helper()
	o := outside(t, s)
	var err error
	if o.pg != nil {
		err = pgx.BeginFunc(context.Background(), o.pg, func(tx pgx.Tx) error { return fn(sqldb.PGX(tx)) })
	} else {
		var tx *sql.Tx
		if tx, err = o.sqlite.Begin(); err != nil {
			t.Fatal(err)
		}
		if err = fn(sqldb.SQL(tx)); err != nil {
			tx.Rollback()
		} else {
			err = tx.Commit()
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

// storeExec changes s's database where no API can (disable an
// application, break a row on purpose), as a configuration change another
// process commits: s has seen it when storeExec returns. The SQL both
// databases speak, with ? placeholders.
func storeExec(t testing.TB, s Store, query string, args ...any) {
	t.Helper()
	before, _ := s.ConfigVersion()
	postgres := false
	outsideWrite(t, s, func(tx sqldb.Querier) error {
		if _, err := tx.Exec(context.Background(), query, args...); err != nil {
			return fmt.Errorf("%s: %w", query, err)
		}
		if postgres = tx.Dialect() == sqldb.Postgres; !postgres {
			return nil // SQLite's store sees the commit at its next read
		}
		_, err := tx.Exec(context.Background(), `SELECT pg_notify('dialbox_config', 'tests')`)
		return err
	})
	if postgres {
		waitFor(t, "the store to hear of the change", func() bool {
			v, listening := s.ConfigVersion()
			return v != before || !listening
		})
	}
}

// queryRows hands each row of a read to row, on either store; the SQL
// both databases speak, with ? placeholders.
func queryRows(t testing.TB, s Store, query string, args []any, row func(scan func(...any) error) error) {
	t.Helper()
	if err := outside(t, s).querier().Query(context.Background(), query, args, row); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// queryRow scans the first row of a read into dest, on either store; the
// SQL both databases speak, with ? placeholders.
func queryRow(t testing.TB, s Store, query string, args []any, dest ...any) {
	t.Helper()
	found := false
	queryRows(t, s, query, args, func(scan func(...any) error) error {
		if found {
			return nil
		}
		found = true
		return scan(dest...)
	})
	if !found {
		t.Fatalf("%s: no row", query)
	}
}

func queryInt(t testing.TB, s Store, query string, args ...any) int {
	t.Helper()
	var n int
	if err := outside(t, s).querier().QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// applyTestFixtures loads a fixtures text through LoadFixtures, as a start does.
func applyTestFixtures(t testing.TB, s Store, text string, now time.Time) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fixtures.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	ff, err := store.LoadFixtures(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ApplyFixtures(context.Background(), ff.Applications, now); err != nil {
		t.Fatal(err)
	}
}

// writeFile writes a test file and returns its path.
func writeFile(t testing.TB, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// ---- waiting and logs ----

// waitFor polls cond until it holds; the bound only ends a hung test.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testtool.WaitFor(t, what, 2*time.Minute, cond)
}

// testLogger shows the server's warnings with a failing test.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// testLogWriter shows the server's warnings and errors with a failing test.
type testLogWriter struct{ t testing.TB }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Logf("server: %s", bytes.TrimSpace(p))
	return len(p), nil
}

func discardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testDate is time.Date moved forward by whole weeks so that it lies after
// the real clock: tests that set the engine's clock to fixed days import
// contacts at the real time, which must not be later than the days they
// set. Whole weeks keep the weekday and the time of day in zones without
// daylight saving (the ones these tests use).
func testDate(year int, month time.Month, day, hour, min, sec, nsec int, loc *time.Location) time.Time {
	return time.Date(year, month, day, hour, min, sec, nsec, loc).AddDate(0, 0, 7*testWeeks)
}

// testWeeks is how many weeks testDate moves its days: enough for the
// week of 2026-11-23 to begin at least two days after now.
var testWeeks = func() int {
	n := 0
	for ref := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC); ref.Before(time.Now().Add(48 * time.Hour)); ref = ref.AddDate(0, 0, 7) {
		n++
	}
	return n
}()

// contactIDs is the id of every stored contact of the application, which
// tests read to see what a write kept.
func contactIDs(t testing.TB, s Store, appID int64) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	queryRows(t, s, `SELECT id FROM contacts WHERE app_id = ?`, []any{appID}, func(scan func(...any) error) error {
		var id string
		err := scan(&id)
		ids[id] = true
		return err
	})
	return ids
}

// sqliteDB is the test's connection to the SQLite file under s.
func sqliteDB(t testing.TB, s Store) *sql.DB {
	t.Helper()
	return sqliteAt(t, databaseOf(t, s))
}
