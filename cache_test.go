package main

import (
	"context"
	"database/sql"
	"dialbox/internal/domain"
	"dialbox/internal/recordings"
	"dialbox/internal/store"
	"path/filepath"
	"testing"
	"time"
)

// TestCatalogCache: cached configuration reads see every committed change,
// survive imports, and cannot be corrupted by a caller editing its copy.
func TestCatalogCache(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenSQLite(filepath.Join(t.TempDir(), "cache.db"), sqliteMigrations(), store.NewMetrics(false), recordings.Files{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := newCachedStore(st)
	fa := &store.FixtureApp{Name: "before", APIKey: "k", APISecret: "s",
		HotlinePools: []store.FixturePool{{Key: "POOL_SYSTEM", Numbers: []string{"02873000001"}}},
		Scenarios: []*store.FixtureScenario{{ID: "sc", Status: domain.StatusActive, Content: "x",
			PersonalizedFields: []string{"ho_ten"}, CallConfig: domain.DefaultCallConfig()}}}
	if err := s.ApplyFixtures(ctx, []*store.FixtureApp{fa}, time.Now()); err != nil {
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
	version := st.ConfigChanges.Load()
	req := domain.ImportRequest{AppID: app.ID, ScenarioID: "sc", Contacts: []domain.NewContact{{ID: "c1", Phone: "+84912345678", Fields: []byte("{}")}}}
	if _, err := s.Import(ctx, req, time.Now()); err != nil {
		t.Fatal(err)
	}
	if st.ConfigChanges.Load() != version {
		t.Error("an import invalidated the configuration cache")
	}
	if err := st.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`UPDATE applications SET name = 'after'; INSERT INTO scenarios (app_id, id, created_at, updated_at) VALUES (?, 'sc2', 0, 0)`, app.ID)
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
	if err := st.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`UPDATE wallets SET prepaid = 1, expires_at = 1; UPDATE hotlines SET enabled = 0`)
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
	st.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO scenarios (app_id, id, created_at, updated_at) VALUES (?, 'sc3', 0, 0)`, app.ID)
		return err
	})
	if _, err := s.Scenario(ctx, app.ID, "sc3"); err != nil {
		t.Errorf("scenario created after a cached miss: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }
