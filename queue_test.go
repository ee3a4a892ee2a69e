package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// queueContacts is a body of n contacts with phones from+0 .. from+n-1.
func queueContacts(n, from int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`{"phone_number":"09120%05d"}`, from+i)
	}
	return `{"contacts":[` + strings.Join(parts, ",") + `]}`
}

// Over limits.max_queued_contacts, operations A and C answer 429 with a
// reason and add nothing; contacts that finish make room again; each
// application has its own bound.
func TestMaxQueuedContacts(t *testing.T) { eachBackend(t, testMaxQueuedContacts) }

func testMaxQueuedContacts(t *testing.T, backend string) {
	s := startServerOn(t, backend, testFixtures, "DIALBOX_LIMITS_MAX_QUEUED_CONTACTS=3")
	qa, other := bearer(t, "qa-key", "qa-secret"), bearer(t, "other-key", "other-secret")
	campaign := func(n, from int) string {
		return `{"campaign_id":"camp-1",` + strings.TrimPrefix(queueContacts(n, from), "{")
	}
	post := func(path, auth, body string) (int, http.Header, []byte) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, s.url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", auth)
		req.Header.Set("Content-Type", "application/json")
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		checkContract(t, http.MethodPost, s.url+path, resp.StatusCode, resp.Header, got)
		return resp.StatusCode, resp.Header, got
	}
	ok := func(code int, _ http.Header, body []byte) {
		t.Helper()
		if code != http.StatusOK {
			t.Fatalf("%d %s, want 200", code, body)
		}
	}
	shed := func(code int, h http.Header, body []byte) {
		t.Helper()
		var e errorBody
		if err := json.Unmarshal(body, &e); err != nil || code != http.StatusTooManyRequests || e.Code != 429 ||
			e.Message != "Too many requests" || len(e.Details) != 1 || e.Details[0].Field != "contacts" ||
			!strings.Contains(e.Details[0].Reason, "at most 3") || h.Get("Retry-After") == "" {
			t.Fatalf("%d %v %s, want 429 Too many requests with Retry-After and a reason", code, h, body)
		}
	}
	queued := func() int {
		return queryInt(t, s.m.store, `SELECT count(*) FROM contacts c JOIN applications a ON a.id = c.app_id
			WHERE a.api_key = 'qa-key' AND c.state <> 'done'`)
	}

	ok(post(opA("sc-remind"), qa, queueContacts(2, 0)))
	shed(post(opA("sc-remind"), qa, queueContacts(2, 10)))
	shed(post(pathC, qa, campaign(2, 20)))
	if n := queued(); n != 2 {
		t.Fatalf("%d contacts queued after the refusals, want 2", n)
	}
	ok(post(pathC, qa, campaign(1, 30)))
	shed(post(opA("sc-remind"), qa, queueContacts(1, 40)))
	// Another tenant has a bound of its own.
	ok(post(opA("sc-other"), other, queueContacts(3, 0)))

	// Finished contacts no longer count.
	s.exec(t, `UPDATE contacts SET state = 'done', outcome = 'ANSWERED'
		WHERE app_id = (SELECT id FROM applications WHERE api_key = 'qa-key') AND phone = '+84912000000'`)
	ok(post(opA("sc-remind"), qa, queueContacts(1, 50)))
	if n := queued(); n != 3 {
		t.Errorf("%d contacts queued, want 3", n)
	}
}

// queueCountsExact checks the kept counts against counting the rows.
func queueCountsExact(t *testing.T, s Store, when string) {
	t.Helper()
	if n := queryInt(t, s, `SELECT count(*) FROM applications a JOIN queued_contacts q ON q.app_id = a.id
		WHERE q.n <> (SELECT count(*) FROM contacts c WHERE c.app_id = a.id AND c.state <> 'done')`); n != 0 {
		t.Errorf("%s: %d applications with a wrong count of queued contacts", when, n)
	}
	if n := queryInt(t, s, `SELECT count(*) FROM applications WHERE id NOT IN (SELECT app_id FROM queued_contacts)`); n != 0 {
		t.Errorf("%s: %d applications without a count", when, n)
	}
}

// The count the limit reads stays exact through every way contacts change:
// imports, calls that finish them or retry them, deletes, a reset, and the
// migration that adds it to a database holding contacts.
func TestQueuedContactsCount(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	old, err := openStoreAt(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	// Half the numbers are busy and called again: their contacts go queued
	// -> dialing -> queued -> dialing -> done.
	tenant := engTenant()
	tenant.Scenarios[0].CallConfig.ReCall = ReCall{Times: 1, IsBusy: true}
	// Its pool and scenario come after the migrations: today's fixtures
	// write columns (hotline_pools.trunk, scenarios.script) a version 3
	// database does not have, so the scenario is written as it was then.
	before := *tenant
	before.HotlinePools, before.Scenarios = nil, nil
	if err := old.ApplyFixtures(context.Background(), []*FixtureApp{&before}, time.Now()); err != nil {
		t.Fatal(err)
	}
	var app int64
	if err := old.read.QueryRow(`SELECT id FROM applications`).Scan(&app); err != nil {
		t.Fatal(err)
	}
	storeExec(t, old, `INSERT INTO scenarios (app_id, id, name, status, content, personalized_fields, call_config, created_at, updated_at)
		VALUES (?, 'sc', 'sc', 'ACTIVE', 'hello', '["ho_ten"]', '{"pool_hotline_key":"P"}', 1000, 1000)`, app)
	engImport(t, old, app, "sc", "", engPhones(5, 0)...)
	storeExec(t, old, `UPDATE contacts SET state = 'done' WHERE seq IN (SELECT seq FROM contacts LIMIT 2)`)
	old.Close()

	other := engTenant()
	other.APIKey, other.Name = "eng-other", "other"
	s, ids := fixtureStoreAt(t, path, other, tenant)
	queueCountsExact(t, s, "after the migration")

	engImport(t, s, app, "sc", "", engPhones(20, 100)...)
	engImport(t, s, ids[0], "sc", "", engPhones(7, 200)...)
	queueCountsExact(t, s, "after imports")

	dialer := NewSimDialer(SimulatorConfig{Seed: 1, TimeScale: 5000,
		Rules: []SimulatorRule{{Suffix: "1", Outcome: "BUSY"}, {Suffix: "3", Outcome: "BUSY"}}})
	e := engStart(t, s, dialer, nil, nil)
	engWaitAllDone(t, s, app, 25)
	engWaitAllDone(t, s, ids[0], 7)
	e.Stop()
	if n := queryInt(t, s, `SELECT count(*) FROM contacts WHERE attempts = 2`); n == 0 {
		t.Error("no contact was called again")
	}
	queueCountsExact(t, s, "after the calls")
	if n := queryInt(t, s, `SELECT n FROM queued_contacts WHERE app_id = ?`, app); n != 0 {
		t.Errorf("%d queued once every contact is done", n)
	}

	engImport(t, s, app, "sc", "", engPhones(4, 300)...)
	storeExec(t, s, `DELETE FROM scenarios WHERE app_id = ?`, ids[0])
	queueCountsExact(t, s, "after a scenario's delete")
	fresh := engTenant()
	if err := s.Reset(context.Background(), []*FixtureApp{fresh}, time.Now()); err != nil {
		t.Fatal(err)
	}
	engImport(t, s, fresh.id, "sc", "", engPhones(2, 400)...)
	queueCountsExact(t, s, "after a reset")
}
