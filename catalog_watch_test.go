package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"dialbox/internal/domain"
	"dialbox/internal/httpx"
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
