package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"dialbox/internal/config"
	"dialbox/internal/domain"
	"dialbox/internal/importer"
)

// rowsReader makes a CSV of n distinct valid contacts as it is read, so
// the test holds no file either.
type rowsReader struct {
	n, next int
	buf     bytes.Buffer
}

func (r *rowsReader) Read(p []byte) (int, error) {
	if r.next == 0 {
		r.buf.WriteString("phone_number,ho_ten,danh_xung\n")
	}
	for r.buf.Len() < len(p) && r.next < r.n {
		fmt.Fprintf(&r.buf, "09%08d,Khach hang so %d,Anh\n", r.next, r.next)
		r.next++
	}
	if r.buf.Len() == 0 {
		return 0, io.EOF
	}
	return r.buf.Read(p)
}

// addAllStore stores nothing: every contact of an import is added, so the
// heap the test measures is the command's own.
type addAllStore struct{ sc *domain.Scenario }

func (addAllStore) WalletExpired(context.Context, int64, time.Time) (bool, error) { return false, nil }
func (addAllStore) PoolAvailable(context.Context, int64, string) (bool, error)    { return true, nil }
func (addAllStore) Import(_ context.Context, req domain.ImportRequest, _ time.Time) (*domain.ImportResult, error) {
	res := &domain.ImportResult{Added: make([]domain.AddedContact, len(req.Contacts)), Skipped: req.Skipped}
	for i, c := range req.Contacts {
		res.Added[i] = domain.AddedContact{ID: c.ID, Echo: c.Echo}
	}
	return res, nil
}
func (s addAllStore) Scenario(context.Context, int64, string) (*domain.Scenario, error) {
	return s.sc, nil
}
func (addAllStore) Campaign(context.Context, int64, string) (*domain.Campaign, error) {
	return nil, domain.ErrNotFound
}

// TestImportMemoryFlat imports 50k rows and checks that the live heap after
// the last chunk is no larger than after the tenth: memory follows the
// chunk, not the file.
func TestImportMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("imports 50k rows")
	}
	store := addAllStore{sc: &domain.Scenario{ID: "sc-unique", Status: domain.StatusActive, Content: "Xin chào {{ho_ten}}",
		PersonalizedFields: []string{"ho_ten", "danh_xung"}}}
	app := &domain.Application{ID: 1, APIKey: "imp-key"}
	imp := &csvImport{importer: importer.New(store, config.DefaultConfig(), slog.New(slog.DiscardHandler), nil), store: store,
		app: app, chunk: 1000, skippedPath: filepath.Join(t.TempDir(), "skipped.csv")}
	if err := imp.target(context.Background(), "sc-unique", ""); err != nil {
		t.Fatal(err)
	}
	var heaps []uint64
	chunks := 0
	imp.onChunk = func() {
		if chunks++; chunks%10 == 0 {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			heaps = append(heaps, ms.HeapAlloc)
		}
	}
	const rows = 50_000
	if err := imp.run(context.Background(), &rowsReader{n: rows}); err != nil {
		t.Fatal(err)
	}
	if imp.added != rows || imp.skipped != 0 {
		t.Fatalf("added %d, skipped %d of %d", imp.added, imp.skipped, rows)
	}
	first, last := heaps[0], heaps[len(heaps)-1]
	t.Logf("live heap after 10k rows %.1f MiB, after %dk rows %.1f MiB", float64(first)/(1<<20), rows/1000, float64(last)/(1<<20))
	if last > first+8<<20 {
		t.Errorf("heap grew from %d to %d bytes over the file: rows are being kept", first, last)
	}
}
