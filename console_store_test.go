package main

import (
	"context"
	"dialbox/internal/domain"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// The counts the console reads (kept by triggers: migration 8 on SQLite,
// 10 on PostgreSQL) equal count(*) after imports, calls ending, a pause
// and deletes; on PostgreSQL before and after the changes are folded.
func TestConsoleCountsMatchRows(t *testing.T) { eachBackend(t, testConsoleCountsMatchRows) }

func testConsoleCountsMatchRows(t *testing.T, backend string) {
	s := startSandboxOn(t, backend, "DIALBOX_ENGINE_ENABLED=true", "DIALBOX_SIMULATOR_TIME_SCALE=1000")
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer hook.Close()
	s.admin(t, "POST", "/apps/qa-key/webhooks", `{"url":"`+hook.URL+`"}`, nil)
	auth := bearer(t, "qa-key", "qa-secret")
	var contacts []string
	for _, p := range []string{"0900000001", "0900000002", "0900000003", "0900000009", "0912345678"} {
		contacts = append(contacts, `{"phone_number":"`+p+`","ho_ten":"A"}`)
	}
	if status, b := s.do(t, "POST", "/api/v1/public-api/scenarios/sc-remind/calls", auth, `{"contacts":[`+strings.Join(contacts, ",")+`]}`); status != 200 {
		t.Fatalf("A answered %d %s", status, b)
	}
	if status, b := s.do(t, "POST", "/api/v1/public-api/campaign", auth, `{"campaign_id":"camp-1","contacts":[{"phone_number":"0900000004","ho_ten":"B"}]}`); status != 200 {
		t.Fatalf("C answered %d %s", status, b)
	}
	waitFor(t, "every contact done", func() bool {
		return queryInt(t, s.m.store, `SELECT count(*) FROM contacts WHERE state <> 'done'`) == 0 &&
			queryInt(t, s.m.store, `SELECT count(*) FROM webhook_messages WHERE state = 'pending'`) == 0
	})
	ctx := context.Background()
	type key struct {
		app                int64
		scenario, campaign string
	}
	seen := map[key]bool{}
	endpoints := map[string]bool{}
	var check func(when string)
	check = func(when string) {
		t.Helper()
		// What the rows say, by scenario (campaign "") and by campaign.
		want := map[key]map[[2]string]int64{}
		queryRows(t, s.m.store, `SELECT app_id, scenario_id, coalesce(campaign_id, ''), state, coalesce(outcome, ''), count(*)
			FROM contacts GROUP BY 1, 2, 3, 4, 5`, nil, func(scan func(...any) error) error {
			var k key
			var state, outcome string
			var n int64
			if err := scan(&k.app, &k.scenario, &k.campaign, &state, &outcome, &n); err != nil {
				return err
			}
			keys := []key{k}
			if k.campaign != "" {
				keys = append(keys, key{k.app, k.scenario, ""})
			}
			for _, k := range keys {
				if want[k] == nil {
					want[k] = map[[2]string]int64{}
				}
				want[k][[2]string{state, outcome}] += n
				seen[k] = true
			}
			return nil
		})
		for k := range seen {
			p, err := s.m.store.ContactProgress(ctx, k.app, k.scenario, k.campaign)
			if err != nil {
				t.Fatal(err)
			}
			got := map[[2]string]int64{}
			if p.Queued != 0 {
				got[[2]string{domain.ContactQueued, ""}] = p.Queued
			}
			if p.Dialing != 0 {
				got[[2]string{domain.ContactDialing, ""}] = p.Dialing
			}
			for _, o := range p.Outcomes {
				got[[2]string{domain.ContactDone, o.Outcome}] = o.N
			}
			if !maps.Equal(got, want[k]) {
				t.Errorf("%s: counts of %+v %v, rows say %v", when, k, got, want[k])
			}
		}
		wantStates := map[string]map[string]int64{}
		queryRows(t, s.m.store, `SELECT endpoint_id, state, count(*) FROM webhook_messages GROUP BY 1, 2`, nil,
			func(scan func(...any) error) error {
				var ep, state string
				var n int64
				if err := scan(&ep, &state, &n); err != nil {
					return err
				}
				if wantStates[ep] == nil {
					wantStates[ep] = map[string]int64{}
				}
				wantStates[ep][state] = n
				endpoints[ep] = true
				return nil
			})
		for ep := range endpoints {
			got, err := s.m.store.MessageStates(ctx, ep)
			if err != nil {
				t.Fatal(err)
			}
			maps.DeleteFunc(got, func(_ string, n int64) bool { return n == 0 })
			if !maps.Equal(got, wantStates[ep]) && (len(got) != 0 || len(wantStates[ep]) != 0) {
				t.Errorf("%s: message counts of %s %v, rows say %v", when, ep, got, wantStates[ep])
			}
		}
		if backend == "postgres" && !strings.HasSuffix(when, "folded") {
			// The node folds the changes into the counts every few seconds
			// (internal/store/postgres_console.go).
			waitFor(t, "the changes folded into the counts", func() bool {
				return queryInt(t, s.m.store, `SELECT (SELECT count(*) FROM contact_count_changes) + (SELECT count(*) FROM webhook_count_changes)`) == 0
			})
			check(when + ", folded")
		}
	}
	check("after the calls")
	if len(endpoints) == 0 {
		t.Fatal("no webhook messages to count")
	}
	p, err := s.m.store.ContactProgress(ctx, 1, "sc-remind", "")
	if err != nil || p.Done != 6 || len(p.Outcomes) < 3 {
		t.Errorf("progress of sc-remind: %+v %v", p, err)
	}
	s.exec(t, `DELETE FROM scenarios WHERE id = 'sc-remind'`)
	check("after a delete")
	if p, err := s.m.store.ContactProgress(ctx, 1, "sc-remind", ""); err != nil || p.Total() != 0 {
		t.Errorf("progress of the deleted sc-remind: %+v %v", p, err)
	}
}

// The console's queries use indexes: the pages and the counts never scan
// the contacts table (the phone search's plan, with the store's own query:
// internal/store's TestPhoneSearchBehindTheIndex).
func TestConsoleQueriesUseIndexes(t *testing.T) {
	s := startSandbox(t)
	plan := func(query string, args ...any) string {
		rows, err := sqliteAt(t, s.m.Config.Database).Query(`EXPLAIN QUERY PLAN `+query, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			rows.Scan(&id, &parent, &notused, &detail)
			out = append(out, detail)
		}
		return strings.Join(out, "; ")
	}
	for query, want := range map[string]string{
		`SELECT seq FROM contacts WHERE app_id = 1 AND seq < 100 ORDER BY seq DESC LIMIT 20000`: "contacts_by_app",
		// ContactProgress and MessageStates, as SQLite runs them (countRows).
		`SELECT state, outcome, CAST(sum(n) AS BIGINT) FROM (SELECT state, outcome, n FROM contact_counts
			WHERE app_id = 1 AND scenario_id = 'x' AND ('' = '' OR campaign_id = '')) AS c
			GROUP BY state, outcome HAVING sum(n) <> 0`: "PRIMARY KEY",
		`SELECT state, CAST(sum(n) AS BIGINT) FROM (SELECT state, n FROM webhook_counts WHERE endpoint_id = 'x') AS c GROUP BY state`: "PRIMARY KEY",
		// CallCounts (the charts, docs/console.md#charts): the window's rows
		// of the counts by minute, never the calls.
		`SELECT minute, ended, outcome, CAST(sum(n) AS BIGINT) FROM call_minutes
			WHERE app_id = 1 AND minute >= 5 AND ('x' = '' OR scenario_id = 'x') AND ('' = '' OR campaign_id = '')
			GROUP BY minute, ended, outcome`: "call_minutes_by_app (app_id=? AND minute>?)",
	} {
		if got := plan(query); !strings.Contains(got, want) || strings.Contains(got, "SCAN contacts") {
			t.Errorf("%s\nplans %q, want %q and no scan of the contacts", query, got, want)
		}
	}
}

// Every page of a tenant's data answers on each store, from the figures of
// the rows: the overview, a scenario and a campaign, the contacts (a
// filter, a phone search, one contact), the webhooks' counts and a
// message.
func TestConsolePagesOnEveryStore(t *testing.T) { eachBackend(t, testConsolePagesOnEveryStore) }

func testConsolePagesOnEveryStore(t *testing.T, backend string) {
	s := startSandboxOn(t, backend, "DIALBOX_ENGINE_ENABLED=true", "DIALBOX_SIMULATOR_TIME_SCALE=1000")
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer hook.Close()
	s.admin(t, "POST", "/apps/qa-key/webhooks", `{"url":"`+hook.URL+`"}`, nil)
	auth := bearer(t, "qa-key", "qa-secret")
	if status, b := s.do(t, "POST", "/api/v1/public-api/campaign", auth,
		`{"campaign_id":"camp-1","contacts":[{"phone_number":"0900000001","ho_ten":"A"},{"phone_number":"0900000002","ho_ten":"B"}]}`); status != 200 {
		t.Fatalf("C answered %d %s", status, b)
	}
	waitFor(t, "every contact done and its events delivered", func() bool {
		return queryInt(t, s.m.store, `SELECT count(*) FROM contacts WHERE state <> 'done'`) == 0 &&
			queryInt(t, s.m.store, `SELECT count(*) FROM webhook_messages WHERE state <> 'delivered'`) == 0
	})
	var contact, message string
	queryRows(t, s.m.store, `SELECT id FROM contacts WHERE phone = '+84900000001'`, nil,
		func(scan func(...any) error) error { return scan(&contact) })
	queryRows(t, s.m.store, `SELECT id FROM webhook_messages ORDER BY seq LIMIT 1`, nil,
		func(scan func(...any) error) error { return scan(&message) })
	delivered := queryInt(t, s.m.store, `SELECT count(*) FROM webhook_messages`)
	c := signedIn(t, s)
	for path, wants := range map[string][]string{
		"/console/": {"sc-remind"},
		"/console/apps/qa-key/scenarios/sc-remind":         {"ANSWERED"},
		"/console/apps/qa-key/campaigns/camp-1":            {"ANSWERED"},
		"/console/apps/qa-key/contacts?state=done":         {"&#43;84900000001", "&#43;84900000002"},
		"/console/apps/qa-key/contacts?phone=0900000001":   {"&#43;84900000001"},
		"/console/apps/qa-key/contacts/" + contact:         {"&#43;84900000001", "Attempt 1: ANSWERED"},
		"/console/apps/qa-key/webhooks":                    {">" + strconv.Itoa(delivered) + "</a>"},
		"/console/apps/qa-key/webhook-messages/" + message: {message},
	} {
		resp, body := c.get(path)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s answered %d", path, resp.StatusCode)
			continue
		}
		for _, want := range wants {
			if !strings.Contains(body, want) {
				t.Errorf("%s lacks %q", path, want)
			}
		}
	}
	if _, body := c.get("/console/apps/qa-key/contacts?state=queued"); strings.Contains(body, "&#43;84900000001") {
		t.Error("a done contact listed among the queued")
	}
	if _, body := c.get("/console/apps/qa-key/contacts?phone=0900000002"); strings.Contains(body, "&#43;84900000001") {
		t.Error("the phone search listed another number")
	}
}
