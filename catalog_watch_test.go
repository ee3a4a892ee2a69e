package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"dialbox/internal/destinations"
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"dialbox/internal/recordings"
	"dialbox/internal/store"
)

// discardResponse is a ResponseWriter that keeps nothing, so a benchmark
// measures the server's work, not a recorder's.
type discardResponse struct {
	h    http.Header
	code int
}

func (d *discardResponse) Header() http.Header         { return d.h }
func (d *discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardResponse) WriteHeader(code int)        { d.code = code }

// BenchmarkCachedListScenarios is operation B answered from the
// configuration cache, through the server's whole handler (access log,
// auth from the token cache, the cached page): what the per-request check
// for other processes' commits must stay cheap against.
//
//	go test -run '^$' -bench 'BenchmarkCached' -count 6 .
func BenchmarkCachedListScenarios(b *testing.B) {
	s := startServer(b, benchFixtures)
	h := s.m.server.Handler
	req := httptest.NewRequest(http.MethodGet, pathB+"?limit=10&offset=0", nil)
	req.Header.Set("Authorization", bearer(b, "bench-key", "bench-secret"))
	w := &discardResponse{h: http.Header{}}
	h.ServeHTTP(w, req)
	if w.code != http.StatusOK {
		b.Fatalf("HTTP %d", w.code)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		clear(w.h)
		h.ServeHTTP(w, req)
	}
}

// BenchmarkCachedAppByKey is one cached configuration read.
func BenchmarkCachedAppByKey(b *testing.B) {
	s := startServer(b, benchFixtures)
	ctx := context.Background()
	if _, err := s.m.catalog.AppByKey(ctx, "bench-key"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		s.m.catalog.AppByKey(ctx, "bench-key")
	}
}

// TestOtherConnectionsCommitsAreSeen: two stores on one database file, as a
// server and `dialbox app create` are. What one commits, the other's cached
// reads see at once, misses included; its own imports still leave its
// cache alone.
func TestOtherConnectionsCommitsAreSeen(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "two.db")
	serverStore, err := store.OpenSQLite(db, sqliteMigrations(), store.NewMetrics(false), recordings.Files{})
	if err != nil {
		t.Fatal(err)
	}
	defer serverStore.Close()
	server := newCachedStore(serverStore)
	other, err := store.OpenSQLite(db, sqliteMigrations(), store.NewMetrics(false), recordings.Files{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	fa := &store.FixtureApp{Name: "a", APIKey: "k", APISecret: "s",
		Scenarios: []*store.FixtureScenario{{ID: "sc", Status: domain.StatusReviewing, Content: "x", CallConfig: domain.DefaultCallConfig()}}}
	if err := server.ApplyFixtures(ctx, []*store.FixtureApp{fa}, time.Now()); err != nil {
		t.Fatal(err)
	}
	app, err := server.AppByKey(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := server.AppByKey(ctx, "new"); err != domain.ErrNotFound {
		t.Fatalf("unknown application: %v", err)
	}
	if sc, _ := server.Scenario(ctx, app.ID, "sc"); sc.Status != domain.StatusReviewing {
		t.Fatalf("scenario %s", sc.Status)
	}

	if _, err := other.CreateApp(ctx, "New", "new", "secret", destinations.Rules{}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := other.TransitionScenario(ctx, app.ID, "sc", []string{domain.StatusReviewing}, domain.StatusActive, time.Now()); err != nil {
		t.Fatal(err)
	}
	if a, err := server.AppByKey(ctx, "new"); err != nil || a.Name != "New" {
		t.Errorf("application created by another store: %v %v", a, err)
	}
	if sc, _ := server.Scenario(ctx, app.ID, "sc"); sc.Status != domain.StatusActive {
		t.Errorf("scenario approved by another store still %s", sc.Status)
	}
	if _, err := other.UpdateApp(ctx, "k", domain.AppPatch{Disabled: ptr(true)}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if a, _ := server.AppByKey(ctx, "k"); !a.Disabled {
		t.Error("application disabled by another store still enabled")
	}

	// The server's own imports keep its cache, though they move the same
	// counter. (The first one's writer learns of the other store's commits
	// too, and drops the cache once more.)
	var version uint64
	for i := range 4 {
		if i == 1 {
			version = serverStore.ConfigChanges.Load()
		}
		req := domain.ImportRequest{AppID: app.ID, ScenarioID: "sc",
			Contacts: []domain.NewContact{{ID: fmt.Sprint("c", i), Phone: fmt.Sprint("+8491234567", i), Fields: []byte("{}")}}}
		if _, err := server.Import(ctx, req, time.Now()); err != nil {
			t.Fatal(err)
		}
		server.AppByKey(ctx, "k")
	}
	if serverStore.ConfigChanges.Load() != version {
		t.Error("the store's own imports invalidated its configuration cache")
	}
}

// TestServerSeesTheCLI: an application created with `dialbox app create`
// beside a running server is known to the server's next request, though it
// had looked the key up (and remembered the miss) before.
func TestServerSeesTheCLI(t *testing.T) { eachBackend(t, testServerSeesTheCLI) }

func testServerSeesTheCLI(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	token := bearer(t, "cli-key", "cli-secret-012345")
	s.adminFail(t, "GET", "/apps/cli-key", "", 404)
	if status, e := s.public(t, "cli-key", "cli-secret-012345", "GET", pathB, ""); status != 401 || e.Code != httpx.ErrAppNotFound.Code {
		t.Fatalf("unknown application: HTTP %d %+v", status, e)
	}
	if err := run(context.Background(), []string{"app", "create", "--name", "From CLI", "--api-key", "cli-key",
		"--api-secret", "cli-secret-012345", "--database", s.db}, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	seenAfter(t, backend, "the application the CLI created (operation B answers)", func() bool {
		status, _ := s.do(t, "GET", pathB, token, "")
		return status == 200
	})
	var app domain.Application
	s.admin(t, "GET", "/apps/cli-key", "", &app)
	if app.Name != "From CLI" {
		t.Errorf("GET /admin/v1/apps/cli-key: %+v", app)
	}
}
