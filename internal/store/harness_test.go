package store

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/jackc/pgx/v5"
	"os"
	"path/filepath"
	"testing"
	"time"

	"dialbox/internal/config"
	"dialbox/internal/domain"
	"dialbox/internal/pgtest"
	"dialbox/internal/recordings"
	"dialbox/internal/testtool"
)

// The harness of the store's own tests, which look inside it (the writer's
// queue, leases, takeovers, the configuration counter); the root's
// store_test.go holds the contract every store keeps, through its public
// surface (docs/architecture.md#tests).

// schema is a schema file of the repository's root split into its
// migrations, as the root hands them to the store (go:embed cannot reach
// it from here).
func schema(t testing.TB, file string) []string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "..", file))
	if err != nil {
		t.Fatal(err)
	}
	return SplitMigrations(file, string(text))
}

// openSQLiteAt opens the SQLite store at path, closed when t ends.
func openSQLiteAt(t testing.TB, path string) *SQLite {
	t.Helper()
	s, err := OpenSQLite(path, schema(t, "schema.sql"), NewMetrics(false), recordings.Files{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openSQLite opens a new SQLite store holding the tenants.
func openSQLite(t testing.TB, apps ...*FixtureApp) *SQLite {
	t.Helper()
	s := openSQLiteAt(t, filepath.Join(t.TempDir(), "dialbox.db"))
	if err := s.ApplyFixtures(context.Background(), apps, time.Now()); err != nil {
		t.Fatal(err)
	}
	return s
}

// pgNodes opens n PostgreSQL stores on one new database, as n dialbox
// nodes would, with one tenant and a webhook endpoint; it returns the
// tenant's id. Without a PostgreSQL server the test skips (internal/pgtest).
func pgNodes(t *testing.T, n int) ([]*Postgres, int64) {
	t.Helper()
	url := pgtest.Database(t)
	var nodes []*Postgres
	for range n {
		s, err := OpenPostgres(context.Background(), url, schema(t, "schema_postgres.sql"), config.DefaultConfig().Cluster,
			NewMetrics(true), recordings.Files{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		nodes = append(nodes, s)
	}
	app := tenant()
	app.Webhooks = []FixtureWebhook{{URL: "http://127.0.0.1:1/hook", Secret: "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}
	if err := nodes[0].ApplyFixtures(context.Background(), []*FixtureApp{app}, time.Now()); err != nil {
		t.Fatal(err)
	}
	return nodes, app.ID
}

// tenant is a tenant with one active scenario "sc", always inside its
// call window, on pool "P".
func tenant() *FixtureApp {
	cc := domain.DefaultCallConfig()
	cc.PoolHotlineKey = "P"
	cc.MaxConcurrent = 10
	cc.CallWindow.Start, cc.CallWindow.End = "00:00", "24:00"
	return &FixtureApp{
		Name: "engine test", APIKey: "eng-key", APISecret: "eng-secret",
		HotlinePools: []FixturePool{{Key: "P", Numbers: []string{"02873000001", "02873000002", "02873000003"}}},
		Scenarios: []*FixtureScenario{{ID: "sc", Name: "sc", Status: domain.StatusActive, Content: "hello",
			PersonalizedFields: []string{"ho_ten"}, CallConfig: cc}},
	}
}

// phones makes n distinct numbers that no rule matches.
func phones(n, from int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("+84913%06d", from+i)
	}
	return out
}

// importPhones adds contacts with these phones as operation A would.
func importPhones(t testing.TB, s *Postgres, appID int64, scenario string, list ...string) {
	t.Helper()
	req := domain.ImportRequest{AppID: appID, ScenarioID: scenario}
	for i, p := range list {
		fields, _ := json.Marshal(map[string]string{"ho_ten": fmt.Sprint("C", i), "so_dien_thoai": p})
		req.Contacts = append(req.Contacts, domain.NewContact{Position: i, ID: domain.NewV7(), Fields: fields, Phone: p})
	}
	if _, err := s.Import(context.Background(), req, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// countSQLite is a count the SQLite store reads.
func countSQLite(t testing.TB, s *SQLite, query string, args ...any) int {
	t.Helper()
	var n int
	if err := s.read.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// pgCount is a count a PostgreSQL store reads.
func pgCount(t testing.TB, s *Postgres, query string, args ...any) int {
	t.Helper()
	var n int
	if err := s.pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// pgStrings is a column of text a PostgreSQL store reads, in order.
func pgStrings(t testing.TB, s *Postgres, query string, args ...any) []string {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return out
}

// aMondayMorning is 9:00 on a Monday in Ho Chi Minh City, two days from
// now or later: inside the advertising hours, after anything imported now.
func aMondayMorning(t testing.TB) time.Time {
	t.Helper()
	hcm, err := time.LoadLocation("Asia/Ho_Chi_Minh")
	if err != nil {
		t.Fatal(err)
	}
	d := time.Now().In(hcm).AddDate(0, 0, 2)
	for d.Weekday() != time.Monday {
		d = d.AddDate(0, 0, 1)
	}
	return time.Date(d.Year(), d.Month(), d.Day(), 9, 0, 0, 0, hcm)
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testtool.WaitFor(t, what, 2*time.Minute, cond)
}
