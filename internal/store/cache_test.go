package store

// The configuration cache (cache.go) over the SQLite store: what it keeps,
// and what makes it let go, this store's commits or another connection's.

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dialbox/internal/destinations"
	"dialbox/internal/domain"
	"dialbox/internal/sqldb"
)

// cachedSQLite is the store with Cached's reads in front, as the root
// wraps it for a server: Cached's methods are one level above the store's.
type cachedSQLite struct {
	*Cached
	uncachedSQLite
}

type uncachedSQLite struct{ *SQLite }

func newCachedSQLite(s *SQLite) cachedSQLite { return cachedSQLite{NewCached(s), uncachedSQLite{s}} }

// TestCatalogCache: cached configuration reads see every committed change,
// survive imports, and cannot be corrupted by a caller editing its copy.
func TestCatalogCache(t *testing.T) {
	ctx := context.Background()
	st := openSQLiteAt(t, filepath.Join(t.TempDir(), "cache.db"))
	s := newCachedSQLite(st)
	fa := &FixtureApp{Name: "before", APIKey: "k", APISecret: "s",
		HotlinePools: []FixturePool{{Key: "POOL_SYSTEM", Numbers: []string{"02873000001"}}},
		Scenarios: []*FixtureScenario{{ID: "sc", Status: domain.StatusActive, Content: "x",
			PersonalizedFields: []string{"ho_ten"}, CallConfig: domain.DefaultCallConfig()}}}
	if err := s.ApplyFixtures(ctx, []*FixtureApp{fa}, time.Now()); err != nil {
		t.Fatal(err)
	}
	app, _ := s.AppByKey(ctx, "k")
	sc, _ := s.Scenario(ctx, app.ID, "sc")
	if _, total, _ := s.ListScenarios(ctx, app.ID, "", 10, 0); total != 1 {
		t.Fatalf("total %d", total)
	}

	// Editing what a read returned changes nothing for the next reader.
	app.Name = "edited"
	sc.PersonalizedFields[0] = "edited"
	sc.CallConfig.CallWindow.Days[0] = "edited"
	again, _ := s.Scenario(ctx, app.ID, "sc")
	if a, _ := s.AppByKey(ctx, "k"); a.Name != "before" || again.PersonalizedFields[0] != "ho_ten" ||
		again.CallConfig.CallWindow.Days[0] != "MON" {
		t.Errorf("a caller's edit reached the cache: %q %v %v", a.Name, again.PersonalizedFields, again.CallConfig.CallWindow.Days)
	}

	// An import keeps the cache; a configuration write is seen at once.
	version := st.configChanges.Load()
	req := domain.ImportRequest{AppID: app.ID, ScenarioID: "sc", Contacts: []domain.NewContact{{ID: "c1", Phone: "+84912345678", Fields: []byte("{}")}}}
	if _, err := s.Import(ctx, req, time.Now()); err != nil {
		t.Fatal(err)
	}
	if st.configChanges.Load() != version {
		t.Error("an import invalidated the configuration cache")
	}
	if err := st.Write(ctx, func(tx sqldb.SQLQueryer) error {
		_, err := tx.ExecContext(ctx, `UPDATE applications SET name = 'after'; INSERT INTO scenarios (app_id, id, created_at, updated_at) VALUES (?, 'sc2', 0, 0)`, app.ID)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if a, _ := s.AppByKey(ctx, "k"); a.Name != "after" {
		t.Errorf("application read after a committed change: %q", a.Name)
	}
	if _, total, _ := s.ListScenarios(ctx, app.ID, "", 10, 0); total != 2 {
		t.Errorf("scenario page after a committed insert: total %d, want 2", total)
	}
	// Wallet expiry and hotline pools are configuration too.
	if expired, _ := s.WalletExpired(ctx, app.ID, time.Now()); expired {
		t.Fatal("a postpaid wallet expired")
	}
	if ok, _ := s.PoolAvailable(ctx, app.ID, "POOL_SYSTEM"); !ok {
		t.Fatal("pool with an enabled hotline unavailable")
	}
	if err := st.Write(ctx, func(tx sqldb.SQLQueryer) error {
		_, err := tx.ExecContext(ctx, `UPDATE wallets SET prepaid = 1, expires_at = 1; UPDATE hotlines SET enabled = 0`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if expired, _ := s.WalletExpired(ctx, app.ID, time.Now()); !expired {
		t.Error("wallet expiry committed but not seen")
	}
	if ok, _ := s.PoolAvailable(ctx, app.ID, "POOL_SYSTEM"); ok {
		t.Error("disabled hotline committed but the pool still available")
	}

	// A miss is remembered as a miss until a write may have made it exist.
	if _, err := s.Scenario(ctx, app.ID, "sc3"); err != domain.ErrNotFound {
		t.Fatalf("missing scenario: %v", err)
	}
	st.Write(ctx, func(tx sqldb.SQLQueryer) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO scenarios (app_id, id, created_at, updated_at) VALUES (?, 'sc3', 0, 0)`, app.ID)
		return err
	})
	if _, err := s.Scenario(ctx, app.ID, "sc3"); err != nil {
		t.Errorf("scenario created after a cached miss: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

// TestOtherConnectionsCommitsAreSeen: two stores on one database file, as a
// server and `dialbox app create` are. What one commits, the other's cached
// reads see at once, misses included; its own imports still leave its
// cache alone.
func TestOtherConnectionsCommitsAreSeen(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "two.db")
	serverStore := openSQLiteAt(t, db)
	server := newCachedSQLite(serverStore)
	other := openSQLiteAt(t, db)
	fa := &FixtureApp{Name: "a", APIKey: "k", APISecret: "s",
		Scenarios: []*FixtureScenario{{ID: "sc", Status: domain.StatusReviewing, Content: "x", CallConfig: domain.DefaultCallConfig()}}}
	if err := server.ApplyFixtures(ctx, []*FixtureApp{fa}, time.Now()); err != nil {
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
			version = serverStore.configChanges.Load()
		}
		req := domain.ImportRequest{AppID: app.ID, ScenarioID: "sc",
			Contacts: []domain.NewContact{{ID: fmt.Sprint("c", i), Phone: fmt.Sprint("+8491234567", i), Fields: []byte("{}")}}}
		if _, err := server.Import(ctx, req, time.Now()); err != nil {
			t.Fatal(err)
		}
		server.AppByKey(ctx, "k")
	}
	if serverStore.configChanges.Load() != version {
		t.Error("the store's own imports invalidated its configuration cache")
	}
}

// TestOwnCommitsUnderReads: requests checking the commit counter while
// the writer commits imports never take its own commits for another
// connection's, and none waits forever for a commit to be accounted for.
func TestOwnCommitsUnderReads(t *testing.T) {
	ctx := context.Background()
	app := tenant()
	app.Scenarios[0].CallConfig.AllowDuplicatePhone = true
	st := openSQLite(t, app)
	version := st.configChanges.Load()
	var stop atomic.Bool
	var readers sync.WaitGroup
	for range 4 {
		readers.Go(func() {
			for !stop.Load() {
				st.ConfigVersion()
			}
		})
	}
	var imports sync.WaitGroup
	for i := range 8 {
		imports.Go(func() {
			for k := range 50 {
				req := contactsRequest(app.ID, "sc", 0, phones(1, i*50+k)...)
				if _, err := st.Import(ctx, req, time.Now()); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	imports.Wait()
	stop.Store(true)
	readers.Wait()
	if got := st.configChanges.Load(); got != version {
		t.Errorf("the store's own imports counted as %d configuration changes", got-version)
	}
}

// A read's key tells applications and ids apart, and costs one allocation
// (reads on every request make one).
func TestCacheKey(t *testing.T) {
	keys := map[string]bool{}
	for _, k := range []string{cacheKey("scenario", 1, "2"), cacheKey("scenario", 12, ""), cacheKey("scenario", 1, "2\x00"),
		cacheKey("pool", 1, "2"), cacheKey("wallet", 1, ""), cacheKey("wallet", -1, "")} {
		if keys[k] {
			t.Errorf("key %q made twice", k)
		}
		keys[k] = true
	}
	if n := testing.AllocsPerRun(100, func() { cacheKey("scenario", 123456, "019ab3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b") }); n > 1 {
		t.Errorf("%v allocations a key", n)
	}
}
