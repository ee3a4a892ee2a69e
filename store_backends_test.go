package main

import (
	"bytes"
	"context"
	"dialbox/internal/config"
	"dialbox/internal/domain"
	"dialbox/internal/store"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Tests of the store's contract that run against every backend from one
// table (docs/postgres.md#status says how far the PostgreSQL store is).

// openBackendStore opens a new, empty store of the backend (testBackends).
func openBackendStore(t testing.TB, backend string) Store {
	t.Helper()
	database := backendDatabase(t, backend)
	s, err := openConfiguredStore(context.Background(), configOn(database), store.NewMetrics(config.IsPostgresURL(database)))
	if err != nil {
		t.Fatal(err)
	}
	opened(t, s, database)
	t.Cleanup(func() { s.Close() })
	return s
}

// forEachBackend runs test once per backend, each on a new store holding
// the tenants; it passes their ids.
func forEachBackend(t *testing.T, apps func() []*store.FixtureApp, test func(t *testing.T, s Store, ids []int64)) {
	eachBackend(t, func(t *testing.T, backend string) {
		s := openBackendStore(t, backend)
		list := apps()
		if err := s.ApplyFixtures(context.Background(), list, time.Now()); err != nil {
			t.Fatal(err)
		}
		ids := make([]int64, len(list))
		for i, a := range list {
			ids[i] = a.ID
		}
		test(t, s, ids)
	})
}

// importReq is a request of phones as the importer hands it to the store.
func importReq(appID int64, phones ...string) domain.ImportRequest {
	req := domain.ImportRequest{AppID: appID, ScenarioID: "sc", UniquePhone: true}
	for i, p := range phones {
		echo := map[string]string{"ho_ten": fmt.Sprint("Contact ", i), "so_dien_thoai": p}
		fields, _ := json.Marshal(echo)
		id := domain.NewV7()
		req.Contacts = append(req.Contacts, domain.NewContact{Position: i, Input: map[string]any{"phone_number": p},
			ID: id, Fields: fields, Phone: p, Echo: domain.EchoJSON(echo, id)})
	}
	return req
}

func prepaidTenant(balance, perCall int64) func() []*store.FixtureApp {
	return func() []*store.FixtureApp {
		app := engTenant()
		app.Wallet = &store.FixtureWallet{Balance: balance, PricePerCall: perCall}
		return []*store.FixtureApp{app}
	}
}

func TestBackendImport(t *testing.T) {
	forEachBackend(t, prepaidTenant(1000, 100), func(t *testing.T, s Store, ids []int64) {
		ctx := context.Background()
		res, err := s.Import(ctx, importReq(ids[0], "+84913000001", "+84913000002"), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Added) != 2 || len(res.Skipped) != 0 {
			t.Fatalf("added %d, skipped %d; want 2, 0", len(res.Added), len(res.Skipped))
		}
		// A phone already pending is skipped with its reason; the new one is added.
		res2, err := s.Import(ctx, importReq(ids[0], "+84913000002", "+84913000003"), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if len(res2.Added) != 1 || len(res2.Skipped) != 1 || res2.Skipped[0].Position != 0 {
			t.Fatalf("second import: added %v, skipped %v", res2.Added, res2.Skipped)
		}
		skipped, err := s.SkippedOf(ctx, res2.ImportID)
		if err != nil || len(skipped) != 1 || skipped[0].Reason != "phone_number is already queued for this scenario" {
			t.Fatalf("skipped of the import: %v, %v", skipped, err)
		}
		stored := contactIDs(t, s, ids[0])
		for _, c := range append(res.Added, res2.Added...) {
			if !stored[c.ID] {
				t.Errorf("acknowledged contact %s not stored", c.ID)
			}
		}
		if len(stored) != 3 {
			t.Errorf("%d contacts stored, want 3", len(stored))
		}

		// Eleven contacts at 100 each do not fit the 1000: refused, nothing stored.
		var phones []string
		for i := range 11 {
			phones = append(phones, fmt.Sprintf("+8491400%04d", i))
		}
		req := importReq(ids[0], phones...)
		if _, err := s.Import(ctx, req, time.Now()); !errors.Is(err, domain.ErrWalletEmpty) {
			t.Fatalf("err = %v, want errWalletEmpty", err)
		}
		req = importReq(ids[0], "+84915000001", "+84915000002")
		req.MaxQueued = 4
		var full *domain.Error
		if _, err := s.Import(ctx, req, time.Now()); !errors.As(err, &full) || full.Code != domain.EQUEUEFULL {
			t.Fatalf("err = %v, want a full queue", err)
		}
		if stored := contactIDs(t, s, ids[0]); len(stored) != 3 {
			t.Errorf("refused imports stored contacts: %d, want 3", len(stored))
		}

		// Nothing new to add: errAllInvalid, and the import is still recorded.
		res3, err := s.Import(ctx, importReq(ids[0], "+84913000001"), time.Now())
		if !errors.Is(err, domain.ErrAllInvalid) || res3 == nil {
			t.Fatalf("err = %v, want errAllInvalid with the result", err)
		}
		if skipped, err := s.SkippedOf(ctx, res3.ImportID); err != nil || len(skipped) != 1 {
			t.Fatalf("skipped of the all-invalid import: %v, %v", skipped, err)
		}
	})
}

// Concurrent imports share commits; every one acknowledged is stored, and a
// phone sent by all of them at once is added exactly once.
func TestBackendConcurrentImports(t *testing.T) {
	forEachBackend(t, prepaidTenant(1_000_000, 1), func(t *testing.T, s Store, ids []int64) {
		const requests, each = 16, 50
		var wg sync.WaitGroup
		results := make([]*domain.ImportResult, requests)
		errs := make([]error, requests)
		for r := range requests {
			wg.Go(func() {
				phones := []string{"+84916999999"}
				for i := range each {
					phones = append(phones, fmt.Sprintf("+849160%02d%03d", r, i))
				}
				results[r], errs[r] = s.Import(context.Background(), importReq(ids[0], phones...), time.Now())
			})
		}
		wg.Wait()
		added, shared := 0, 0
		stored := contactIDs(t, s, ids[0])
		for r, res := range results {
			if errs[r] != nil {
				t.Fatalf("request %d: %v", r, errs[r])
			}
			for _, c := range res.Added {
				if !stored[c.ID] {
					t.Fatalf("acknowledged contact %s not stored", c.ID)
				}
				if bytes.Contains(c.Echo, []byte(`"so_dien_thoai":"+84916999999"`)) {
					shared++
				}
			}
			added += len(res.Added)
		}
		if shared != 1 || added != requests*each+1 || len(stored) != added {
			t.Errorf("shared phone added %d times, %d added, %d stored; want 1, %d, %d", shared, added, len(stored), requests*each+1, requests*each+1)
		}
	})
}

// The public API's reads answer the same on every backend.
func TestBackendReads(t *testing.T) {
	apps := func() []*store.FixtureApp {
		app := engTenant()
		past := time.Now().Add(-time.Hour)
		app.Wallet = &store.FixtureWallet{Balance: 5, PricePerCall: 1, ExpiresAt: &past}
		cc := app.Scenarios[0].CallConfig
		for _, id := range []string{"b", "a", "c"} {
			app.Scenarios = append(app.Scenarios, &store.FixtureScenario{ID: id, Name: id, Status: domain.StatusDraft, Content: "x", CallConfig: cc})
		}
		app.Campaigns = []store.FixtureCampaign{{ID: "camp", Name: "camp", ScenarioID: "sc"}}
		return []*store.FixtureApp{app}
	}
	forEachBackend(t, apps, func(t *testing.T, s Store, ids []int64) {
		ctx := context.Background()
		now := time.Now()
		// A second start applies the same fixtures: nothing changes.
		if err := s.ApplyFixtures(ctx, apps(), now); err != nil {
			t.Fatal(err)
		}
		if n, err := s.CountApps(ctx); err != nil || n != 1 {
			t.Fatalf("CountApps = %d, %v", n, err)
		}
		app, err := s.AppByKey(ctx, "eng-key")
		if err != nil || app.ID != ids[0] || app.Disabled || app.Name != "engine test" {
			t.Fatalf("AppByKey = %+v, %v", app, err)
		}
		if _, err := s.AppByKey(ctx, "nobody"); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("unknown key: %v, want errNotFound", err)
		}
		if w, err := s.Wallet(ctx, ids[0]); err != nil || !w.Prepaid || w.Balance != 5 || w.ExpiresAt == nil {
			t.Errorf("Wallet = %+v, %v", w, err)
		}
		if exp, err := s.WalletExpired(ctx, ids[0], now); err != nil || !exp {
			t.Errorf("WalletExpired = %v, %v; want true", exp, err)
		}
		if ok, err := s.PoolAvailable(ctx, ids[0], "P"); err != nil || !ok {
			t.Errorf("PoolAvailable(P) = %v, %v", ok, err)
		}
		if ok, err := s.PoolAvailable(ctx, ids[0], "none"); err != nil || ok {
			t.Errorf("PoolAvailable(none) = %v, %v", ok, err)
		}
		sc, err := s.Scenario(ctx, ids[0], "sc")
		if err != nil || sc.Status != domain.StatusActive || sc.CallConfig.PoolHotlineKey != "P" || len(sc.PersonalizedFields) != 1 {
			t.Fatalf("Scenario = %+v, %v", sc, err)
		}
		if _, err := s.Scenario(ctx, ids[0]+1, "sc"); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("another tenant's scenario: %v, want errNotFound", err)
		}
		list, total, err := s.ListScenarios(ctx, ids[0], domain.StatusDraft, 2, 0)
		if err != nil || total != 3 || len(list) != 2 || list[0].ID != "a" || list[1].ID != "b" {
			t.Errorf("ListScenarios = %v (total %d), %v; want a, b of 3", list, total, err)
		}
		if c, err := s.Campaign(ctx, ids[0], "camp"); err != nil || c.ScenarioID != "sc" || c.Paused {
			t.Errorf("Campaign = %+v, %v", c, err)
		}
		if at, known, err := s.Migrations(ctx); err != nil || at != known {
			t.Errorf("Migrations = %d of %d, %v", at, known, err)
		}
		if err := s.Ping(ctx); err != nil {
			t.Errorf("Ping: %v", err)
		}
	})
}
