package main

import (
	"context"
	"dialbox/internal/config"
	"dialbox/internal/dialer"
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"dialbox/internal/recordings"
	"dialbox/internal/store"
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
		var e httpx.ErrorBody
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
	old, err := store.OpenSQLite(path, sqliteMigrations()[:3], store.NewMetrics(false), recordings.Files{})
	if err != nil {
		t.Fatal(err)
	}
	opened(t, old, path)
	// Half the numbers are busy and called again: their contacts go queued
	// -> dialing -> queued -> dialing -> done.
	tenant := engTenant()
	tenant.Scenarios[0].CallConfig.ReCall = domain.ReCall{Times: 1, IsBusy: true}
	// Its pool and scenario come after the migrations: today's fixtures
	// write columns (hotline_pools.trunk, scenarios.script) a version 3
	// database does not have, so the scenario is written as it was then.
	before := *tenant
	before.HotlinePools, before.Scenarios = nil, nil
	if err := old.ApplyFixtures(context.Background(), []*store.FixtureApp{&before}, time.Now()); err != nil {
		t.Fatal(err)
	}
	var app int64
	if err := sqliteDB(t, old).QueryRow(`SELECT id FROM applications`).Scan(&app); err != nil {
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

	dialer := dialer.NewSim(config.SimulatorConfig{Seed: 1, TimeScale: 5000,
		Rules: []config.SimulatorRule{{Suffix: "1", Outcome: "BUSY"}, {Suffix: "3", Outcome: "BUSY"}}})
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
	if err := s.Reset(context.Background(), []*store.FixtureApp{fresh}, time.Now()); err != nil {
		t.Fatal(err)
	}
	engImport(t, s, fresh.ID, "sc", "", engPhones(2, 400)...)
	queueCountsExact(t, s, "after a reset")
}

// A contact's fields are bounded (limits.max_contact_field_bytes, default
// 1 KB, and limits.max_contact_bytes, default 8 KB): one over either is
// refused whole with 400 naming it, and nothing of the request is stored,
// not even as a skipped contact; at the limits a contact is added.
func TestContactSizeLimits(t *testing.T) { eachBackend(t, testContactSizeLimits) }

func testContactSizeLimits(t *testing.T, backend string) {
	s := startServerOn(t, backend, testFixtures)
	qa := bearer(t, "qa-key", "qa-secret")
	stored := func() int {
		return queryInt(t, s.m.store, `SELECT (SELECT count(*) FROM contacts) + (SELECT count(*) FROM skipped_contacts)`)
	}
	body := func(contacts ...string) string { return `{"contacts":[` + strings.Join(contacts, ",") + `]}` }
	campaign := func(contacts ...string) string {
		return `{"campaign_id":"camp-1","contacts":[` + strings.Join(contacts, ",") + `]}`
	}
	refused := func(path, body, field, reason string) {
		t.Helper()
		before := stored()
		code, got := s.do(t, http.MethodPost, path, qa, body)
		var e httpx.ErrorBody
		if err := json.Unmarshal(got, &e); err != nil || code != http.StatusBadRequest || e.Code != 400 ||
			e.Message != "Validation Failed" || len(e.Details) != 1 || e.Details[0].Field != field ||
			!strings.Contains(e.Details[0].Reason, reason) {
			t.Fatalf("%d %.300s, want 400 Validation Failed naming %s (%q)", code, got, field, reason)
		}
		if n := stored(); n != before {
			t.Errorf("a refused request stored %d rows", n-before)
		}
	}
	fill := func(n int) string { return strings.Repeat("x", n) }
	valid := `{"phone_number":"0912000001"}`

	// One field one byte over: refused, the valid contact beside it too.
	refused(opA("sc-remind"), body(valid, `{"phone_number":"0912000002","ghi_chu":"`+fill(1025)+`"}`),
		"contacts[1].ghi_chu", "limits.max_contact_field_bytes")
	refused(pathC, campaign(`{"phone_number":"0912000002","ghi_chu":"`+fill(1025)+`"}`),
		"contacts[0].ghi_chu", "limits.max_contact_field_bytes")
	// A quote counts as its escape, as stored: 513 of them are 1026 bytes.
	refused(opA("sc-remind"), body(`{"phone_number":"0912000002","ghi_chu":"`+strings.Repeat(`\"`, 513)+`"}`),
		"contacts[0].ghi_chu", "1026 bytes")
	// Ten fields of 1000 bytes each: within the field limit, over the contact's.
	var ten []string
	for i := range 10 {
		ten = append(ten, fmt.Sprintf(`"f%d":"%s"`, i, fill(1000)))
	}
	refused(opA("sc-remind"), body(`{"phone_number":"0912000003",`+strings.Join(ten, ",")+`}`),
		"contacts[0]", "limits.max_contact_bytes")
	// A contact that would be skipped (bad phone, a value of the wrong type,
	// not an object) is refused too rather than stored as skipped.
	refused(opA("sc-remind"), body(valid, `{"phone_number":"bad","ghi_chu":"`+fill(2000)+`"}`),
		"contacts[1].ghi_chu", "limits.max_contact_field_bytes")
	refused(opA("sc-remind"), body(valid, `{"phone_number":"0912000004","nested":{"x":"`+fill(2000)+`"}}`),
		"contacts[1].nested", "limits.max_contact_field_bytes")
	refused(opA("sc-remind"), body(valid, `"`+fill(9000)+`"`), "contacts[1]", "limits.max_contact_bytes")
	// A field name is bounded as a value is; the answer does not repeat it.
	refused(opA("sc-remind"), body(`{"phone_number":"0912000005","`+fill(1025)+`":"x"}`),
		"contacts[0]", "a field name")
	if n := stored(); n != 0 {
		t.Fatalf("%d rows stored after refusals only", n)
	}

	// At the limits: a 1024-byte field, and a contact of 8192 bytes.
	code, got := s.do(t, http.MethodPost, opA("sc-remind"), qa, body(`{"phone_number":"0912000006","ghi_chu":"`+fill(1024)+`"}`))
	if code != http.StatusOK {
		t.Fatalf("a field at the limit: %d %.300s", code, got)
	}
	contact := `{"phone_number":"0912000007","a":"` + fill(1024) + `"`
	for i := 0; ; i++ {
		next := fmt.Sprintf(`,"b%d":"%s"`, i, fill(1000))
		if len(contact)+len(next)+1 > 8192 {
			contact += fmt.Sprintf(`,"c":"%s"}`, fill(8192-len(contact)-len(`,"c":""}`)))
			break
		}
		contact += next
	}
	if len(contact) != 8192 {
		t.Fatalf("test contact is %d bytes", len(contact))
	}
	code, got = s.do(t, http.MethodPost, opA("sc-remind"), qa, body(contact))
	if code != http.StatusOK {
		t.Fatalf("a contact at the limit: %d %.300s", code, got)
	}
	refused(opA("sc-remind"), body(strings.Replace(contact, `"c":"`, `"c":"x`, 1)), "contacts[0]", "8193 bytes")
}
