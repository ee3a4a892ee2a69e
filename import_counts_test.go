package main

import (
	"context"
	"dialbox/internal/domain"
	"dialbox/internal/store"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"
)

// The counts an import keeps (on SQLite the writer's, schema.sql's
// migration 14; on PostgreSQL statement triggers) equal the rows, after
// concurrent imports the writer commits together, mixing scenarios,
// campaigns and duplicates it skips; after an import refused and rolled
// back; after state changes and a delete.
func TestImportCountsExact(t *testing.T) { eachBackend(t, testImportCountsExact) }

func testImportCountsExact(t *testing.T, backend string) {
	tenant := engTenant()
	second := *tenant.Scenarios[0]
	second.ID, second.Name = "sc2", "sc2"
	tenant.Scenarios = append(tenant.Scenarios, &second)
	tenant.Campaigns = []store.FixtureCampaign{{ID: "camp", Name: "camp", ScenarioID: "sc"}}
	s, ids := fixtureStoreOn(t, backend, tenant)
	app := ids[0]
	ctx := context.Background()

	type target struct{ scenario, campaign string }
	targets := []target{{"sc", ""}, {"sc2", ""}, {"sc", "camp"}}
	check := func(when string) {
		t.Helper()
		queueCountsExact(t, s, when)
		for _, tg := range append(targets, target{"sc", "nobody's"}) {
			want := map[string]int64{}
			queryRows(t, s, `SELECT state || '/' || coalesce(outcome, ''), count(*) FROM contacts
				WHERE app_id = ? AND scenario_id = ? AND (? = '' OR campaign_id = ?) GROUP BY 1`,
				[]any{app, tg.scenario, tg.campaign, tg.campaign}, func(scan func(...any) error) error {
					var k string
					var n int64
					err := scan(&k, &n)
					want[k] = n
					return err
				})
			p, err := s.ContactProgress(ctx, app, tg.scenario, tg.campaign)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int64{}
			for state, n := range map[string]int64{"queued/": p.Queued, "dialing/": p.Dialing} {
				if n != 0 {
					got[state] = n
				}
			}
			for _, o := range p.Outcomes {
				got["done/"+o.Outcome] = o.N
			}
			if !maps.Equal(got, want) {
				t.Errorf("%s: counts of %v: %v, rows say %v", when, tg, got, want)
			}
		}
	}

	// 8 clients send 6 requests each, to every target in turn, each of 12
	// numbers drawn from 30: the scenarios forbid duplicates, so many are
	// skipped, within a request and across the requests of one commit.
	var wg sync.WaitGroup
	added := make([]int, 8)
	for c := range 8 {
		wg.Go(func() {
			for r := range 6 {
				tg := targets[(c+r)%len(targets)]
				req := domain.ImportRequest{AppID: app, ScenarioID: tg.scenario, CampaignID: tg.campaign, UniquePhone: true}
				for i := range 12 {
					p := fmt.Sprintf("+84913%06d", (c*7+r*5+i*3)%30)
					req.Contacts = append(req.Contacts, domain.NewContact{Position: i, Input: map[string]any{"phone_number": p},
						ID: domain.NewV7(), Fields: []byte(`{}`), Phone: p})
				}
				res, err := s.Import(ctx, req, time.Now())
				if err != nil && err != domain.ErrAllInvalid {
					t.Error(err)
					return
				}
				added[c] += len(res.Added)
			}
		})
	}
	wg.Wait()
	total := 0
	for _, n := range added {
		total += n
	}
	if n := queryInt(t, s, `SELECT count(*) FROM contacts`); n != total || total == 0 || total == 8*6*12 {
		t.Fatalf("%d contacts stored, %d acknowledged, of %d sent: want some duplicates skipped", n, total, 8*6*12)
	}
	check("after concurrent imports")

	// Refused for the queue's bound after its contacts were inserted: the
	// counts go back with them.
	req := domain.ImportRequest{AppID: app, ScenarioID: "sc2", MaxQueued: int64(total), Contacts: []domain.NewContact{
		{ID: domain.NewV7(), Fields: []byte(`{}`), Phone: "+84914000001"}}}
	if _, err := s.Import(ctx, req, time.Now()); err == nil {
		t.Fatal("an import over limits.max_queued_contacts was accepted")
	}
	check("after a refused import")

	// Calls ending (row triggers), then an import that reuses their
	// numbers, a contact removed, and a scenario deleted with its contacts.
	storeExec(t, s, `UPDATE contacts SET state = 'done', outcome = 'ANSWERED' WHERE phone LIKE '%1' OR phone LIKE '%4'`)
	storeExec(t, s, `UPDATE contacts SET state = 'dialing' WHERE phone LIKE '%2'`)
	check("after state changes")
	engImport(t, s, app, "sc", "camp", "+84913000001", "+84913000011", "+84913000004")
	storeExec(t, s, `DELETE FROM contacts WHERE phone = '+84913000003'`)
	check("after an import and a delete")
	storeExec(t, s, `DELETE FROM scenarios WHERE id = 'sc2'`)
	check("after a scenario's delete")
}
