package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"dialbox/internal/config"
	"dialbox/internal/dialer"
	"dialbox/internal/domain"
	"dialbox/internal/engine"
	"dialbox/internal/ops"
	"dialbox/internal/script"
	"dialbox/internal/store"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/prometheus/client_golang/prometheus"
)

// Do-not-call lists enforced by the engine (docs/compliance.md): the
// dialer itself is asked which numbers it dialled, so a listed number that
// got as far as the dialer fails the test whatever outcome it recorded.

// recordingDialer is the simulator, noting every number it is asked to dial.
type recordingDialer struct {
	*dialer.Sim
	mu     sync.Mutex
	dialed []string
}

func newRecordingDialer() *recordingDialer {
	return &recordingDialer{Sim: dialer.NewSim(config.SimulatorConfig{Seed: 1, TimeScale: 5000})}
}

func (d *recordingDialer) Dial(ctx context.Context, req domain.DialRequest) domain.DialResult {
	d.mu.Lock()
	d.dialed = append(d.dialed, req.To)
	d.mu.Unlock()
	return d.Sim.Dial(ctx, req)
}

func (d *recordingDialer) numbers() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.dialed)
}

// dncTenant is engTenant under another key, with a webhook endpoint so its
// events are queued (never delivered: no delivery runs in these tests).
func dncTenant(key string) *store.FixtureApp {
	a := engTenant()
	a.Name, a.APIKey, a.APISecret = key, key, key+"-secret"
	a.Webhooks = []store.FixtureWebhook{{URL: "http://127.0.0.1:1/hook", Secret: whSecret}}
	return a
}

func dncAdd(t testing.TB, s Store, list int64, phones ...string) {
	t.Helper()
	if _, err := s.AddDNC(context.Background(), list, phones, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// dncEvents returns the payloads of the outbox's events of one type, by phone.
func dncEvents(t testing.TB, s Store, appID int64, typ string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	queryRows(t, s, `SELECT payload FROM webhook_messages WHERE app_id = ? AND event_type = ?`, []any{appID, typ},
		func(scan func(...any) error) error {
			var payload string
			if err := scan(&payload); err != nil {
				return err
			}
			var ev struct{ Data domain.EventData }
			if err := json.Unmarshal([]byte(payload), &ev); err != nil {
				return err
			}
			out[ev.Data.Phone] = append(out[ev.Data.Phone], payload)
			return nil
		})
	return out
}

// dncAdClock is an engine clock inside the advertising hours: 09:00
// tomorrow in Ho Chi Minh City, after the contacts' imports (made at the
// real time), so they are due at once.
func dncAdClock() func(*engine.Parts) {
	y, m, d := time.Now().In(hcm).Date()
	clock := &engClock{}
	clock.Set(time.Date(y, m, d+1, 9, 0, 0, 0, hcm))
	return func(p *engine.Parts) { p.Now = clock.Now }
}

// The national register screens advertising scenarios (adTenant's "sc");
// a tenant's list screens all its scenarios.
func TestDNCListedNumbersAreNeverDialled(t *testing.T) {
	eachBackend(t, testDNCListedNumbersAreNeverDialled)
}

func testDNCListedNumbersAreNeverDialled(t *testing.T, backend string) {
	doc := loadContract(t)
	s, ids := fixtureStoreOn(t, backend, adTenant("dnc-a"), adTenant("dnc-b"))
	a, b := ids[0], ids[1]
	const (
		national = "+84913000001" // on the national register: no tenant's advertising call
		tenantA  = "+84913000002" // on tenant A's list only
		both     = "+84913000003" // on both: the national register is the reason
		free     = "+84913000004" // on no list
	)
	dncAdd(t, s, domain.NationalList, national, both)
	dncAdd(t, s, a, tenantA, both)
	dialer := newRecordingDialer()
	engStart(t, s, dialer, nil, dncAdClock())
	contactsA := engImport(t, s, a, "sc", "", national, tenantA, both, free)
	contactsB := engImport(t, s, b, "sc", "", national, tenantA, both, free)
	engWaitAllDone(t, s, a, 4)
	engWaitAllDone(t, s, b, 4)

	dialed := dialer.numbers()
	slices.Sort(dialed)
	if want := []string{tenantA, free, free}; !slices.Equal(dialed, slices.Sorted(slices.Values(want))) {
		t.Errorf("the dialer was asked to dial %v; want only %v (B's %s, both tenants' %s)", dialed, want, tenantA, free)
	}
	wantOutcome := map[string]map[string]string{
		"a": {national: domain.OutcomeDoNotCall, tenantA: domain.OutcomeDoNotCall, both: domain.OutcomeDoNotCall},
		"b": {national: domain.OutcomeDoNotCall, both: domain.OutcomeDoNotCall},
	}
	for name, contacts := range map[string][]string{"a": contactsA, "b": contactsB} {
		for _, id := range contacts {
			var phone string
			queryRows(t, s, `SELECT phone FROM contacts WHERE id = ?`, []any{id},
				func(scan func(...any) error) error { return scan(&phone) })
			state, outcome, attempts := engContact(t, s, id)
			want := wantOutcome[name][phone]
			if want == "" {
				if outcome == domain.OutcomeDoNotCall {
					t.Errorf("tenant %s: unlisted %s ended DO_NOT_CALL", name, phone)
				}
				continue
			}
			calls := engCalls(t, s, id)
			if state != "done" || outcome != want || attempts != 1 || len(calls) != 1 || calls[0].Hotline != "" ||
				calls[0].Cause != 403 || calls[0].Cost != 0 || calls[0].Answered != nil || calls[0].Outcome != domain.OutcomeDoNotCall {
				t.Errorf("tenant %s %s: state %s outcome %s attempts %d calls %+v", name, phone, state, outcome, attempts, calls)
			}
		}
	}

	// The audit, with the reason each was held.
	reasons := map[string]string{}
	queryRows(t, s, `SELECT a.api_key, b.phone, b.reason, coalesce(b.until, 0) FROM call_blocks b
		JOIN applications a ON a.id = b.app_id`, nil, func(scan func(...any) error) error {
		var app, phone, reason string
		var until int64
		if err := scan(&app, &phone, &reason, &until); err != nil {
			return err
		}
		if until != 0 {
			t.Errorf("%s %s: a block has an until", app, phone)
		}
		reasons[app+" "+phone] = reason
		return nil
	})
	wantReasons := map[string]string{
		"dnc-a " + national: domain.ReasonDNCNational, "dnc-a " + tenantA: domain.ReasonDNCTenant, "dnc-a " + both: domain.ReasonDNCNational,
		"dnc-b " + national: domain.ReasonDNCNational, "dnc-b " + both: domain.ReasonDNCNational,
	}
	if !mapsEqual(reasons, wantReasons) {
		t.Errorf("call_blocks %v, want %v", reasons, wantReasons)
	}

	// contact.completed alone for a held contact, valid against the contract.
	schema := doc.Webhooks[domain.EventContactCompleted].Post.RequestBody.Value.Content.Get("application/json").Schema.Value
	completed, callEvents := dncEvents(t, s, a, domain.EventContactCompleted), dncEvents(t, s, a, domain.EventCallCompleted)
	for _, phone := range []string{national, tenantA, both} {
		if len(callEvents[phone]) != 0 {
			t.Errorf("%s: a call.completed for a call never made: %v", phone, callEvents[phone])
		}
		if len(completed[phone]) != 1 {
			t.Fatalf("%s: %d contact.completed events", phone, len(completed[phone]))
		}
		payload := completed[phone][0]
		var v any
		json.Unmarshal([]byte(payload), &v)
		if err := schema.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors()); err != nil {
			t.Errorf("contact.completed refused by the contract: %.1500v\n%s", err, payload)
		}
		for _, want := range []string{`"outcome":"DO_NOT_CALL"`, `"cause":403`, `"hotline":""`, `"cost":0`,
			`"will_retry":false`, `"attempts":1`, `"total_cost":0`, `"answered_at":null`, `"steps":[]`} {
			if !strings.Contains(payload, want) {
				t.Errorf("%s: contact.completed lacks %s: %s", phone, want, payload)
			}
		}
	}
	if len(callEvents[free]) != 1 || len(completed[free]) != 1 {
		t.Errorf("the unlisted number's events: %d call.completed, %d contact.completed", len(callEvents[free]), len(completed[free]))
	}

	// Counted on /metrics.
	rec := httptest.NewRecorder()
	ops.MetricsHandler(prometheus.NewRegistry(), s, discardLog()).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{`dialbox_calls_blocked_total{reason="dnc_national"} 4`, `dialbox_calls_blocked_total{reason="dnc_tenant"} 1`,
		`dialbox_calls_total{outcome="DO_NOT_CALL"} 5`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// A care scenario is outside the national register's reach (it restricts
// advertising calls: docs/compliance.md#how-dialbox-enforces-it) and within
// its tenant's list: a nationally registered number is dialled, one on the
// tenant's list is not, the tenant's list being the reason even when the
// register holds the number too.
func TestDNCCareScenarioDialsTheNationalRegister(t *testing.T) {
	eachBackend(t, testDNCCareScenarioDialsTheNationalRegister)
}

func testDNCCareScenarioDialsTheNationalRegister(t *testing.T, backend string) {
	s, ids := fixtureStoreOn(t, backend, adTenant("dnc-a"))
	a := ids[0]
	const (
		national = "+84913000001"
		tenantA  = "+84913000002"
		both     = "+84913000003"
		free     = "+84913000004"
	)
	dncAdd(t, s, domain.NationalList, national, both)
	dncAdd(t, s, a, tenantA, both)
	dialer := newRecordingDialer()
	engStart(t, s, dialer, nil, nil)
	contacts := engImport(t, s, a, "care", "", national, tenantA, both, free)
	engWaitAllDone(t, s, a, 4)

	if dialed := slices.Sorted(slices.Values(dialer.numbers())); !slices.Equal(dialed, []string{national, free}) {
		t.Errorf("the care scenario dialled %v, want %v", dialed, []string{national, free})
	}
	for i, want := range []string{"", domain.OutcomeDoNotCall, domain.OutcomeDoNotCall, ""} {
		if _, outcome, _ := engContact(t, s, contacts[i]); (outcome == domain.OutcomeDoNotCall) != (want != "") {
			t.Errorf("contact %d ended %s", i, outcome)
		}
	}
	reasons := map[string]string{}
	queryRows(t, s, `SELECT phone, reason FROM call_blocks`, nil, func(scan func(...any) error) error {
		var phone, reason string
		err := scan(&phone, &reason)
		reasons[phone] = reason
		return err
	})
	if want := map[string]string{tenantA: domain.ReasonDNCTenant, both: domain.ReasonDNCTenant}; !mapsEqual(reasons, want) {
		t.Errorf("call_blocks %v, want %v", reasons, want)
	}
}

// A number listed after its contact was added, before the engine reached
// it, is not dialled: the lists are read at dial time.
func TestDNCListedAfterImportIsNotDialled(t *testing.T) {
	eachBackend(t, testDNCListedAfterImportIsNotDialled)
}

func testDNCListedAfterImportIsNotDialled(t *testing.T, backend string) {
	s, ids := fixtureStoreOn(t, backend, dncTenant("dnc-a"))
	a := ids[0]
	contacts := engImport(t, s, a, "sc", "", "+84913000011", "+84913000012")
	dncAdd(t, s, a, "+84913000011")
	dialer := newRecordingDialer()
	engStart(t, s, dialer, nil, nil)
	engWaitAllDone(t, s, a, 2)
	if got := dialer.numbers(); !slices.Equal(got, []string{"+84913000012"}) {
		t.Errorf("dialled %v, want only +84913000012", got)
	}
	if _, outcome, _ := engContact(t, s, contacts[0]); outcome != domain.OutcomeDoNotCall {
		t.Errorf("the contact listed after import ended %s", outcome)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A tenant's list goes with its tenant (and a reset); the national register
// is not tenant data and stays.
func TestDNCTenantListGoesWithItsTenant(t *testing.T) {
	eachBackend(t, testDNCTenantListGoesWithItsTenant)
}

func testDNCTenantListGoesWithItsTenant(t *testing.T, backend string) {
	s, ids := fixtureStoreOn(t, backend, dncTenant("dnc-a"), dncTenant("dnc-b"))
	dncAdd(t, s, domain.NationalList, "+84913000001")
	dncAdd(t, s, ids[0], "+84913000002", "+84913000003")
	dncAdd(t, s, ids[1], "+84913000004")
	if err := s.DeleteApp(context.Background(), "dnc-a"); err != nil {
		t.Fatal(err)
	}
	if n := queryInt(t, s, `SELECT count(*) FROM dnc_numbers`); n != 2 {
		t.Errorf("%d numbers left after deleting a tenant with 2, want 2", n)
	}
	if err := s.Reset(context.Background(), nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	if n := queryInt(t, s, `SELECT count(*) FROM dnc_numbers n JOIN dnc_lists l ON l.id = n.list_id
		WHERE l.app_id IS NULL AND l.state = 'current'`); n != 1 || queryInt(t, s, `SELECT count(*) FROM dnc_numbers`) != 1 {
		t.Errorf("after a reset: %d national numbers, want the 1", n)
	}
}

// Opt-out by key press on a simulated call: the number goes on the
// tenant's list during the call, the call's result is opted_out, and the
// next contact with that number, in another scenario of the tenant, ends
// DO_NOT_CALL without being dialled; another tenant still calls it.
func TestDNCOptOutByKeyPress(t *testing.T) { eachBackend(t, testDNCOptOutByKeyPress) }

func testDNCOptOutByKeyPress(t *testing.T, backend string) {
	a, b := dncTenant("dnc-a"), dncTenant("dnc-b")
	bot := *a.Scenarios[0]
	bot.ID, bot.Name, bot.Content = "bot", "bot", ""
	bot.Script = &script.Script{Steps: []script.Step{
		{Name: "menu", Gather: &script.Gather{Prompt: &script.Prompt{Say: "Nhấn 9 để không nhận cuộc gọi nữa."},
			MaxDigits: 1, Timeout: "5s", Branches: map[string]string{"9": "stop"}}},
		{Name: "stop", OptOut: &script.OptOut{Say: "Cảm ơn, chúng tôi sẽ không gọi lại."}}}}
	a.Scenarios = append(a.Scenarios, &bot)
	s, ids := fixtureStoreOn(t, backend, a, b)
	const phone = "+84913000021"
	dialer := &recordingDialer{Sim: dialer.NewSim(config.SimulatorConfig{Seed: 1, TimeScale: 5000,
		Rules: []config.SimulatorRule{{Number: phone, Outcome: domain.OutcomeAnswered, Digits: "9"}}})}
	engStart(t, s, dialer, nil, nil)
	first := engImport(t, s, ids[0], "bot", "", phone)
	engWaitAllDone(t, s, ids[0], 1)
	var result string
	queryRows(t, s, `SELECT c.result FROM calls c JOIN contacts k ON k.seq = c.contact_seq WHERE k.id = ?`, []any{first[0]},
		func(scan func(...any) error) error { return scan(&result) })
	if _, outcome, _ := engContact(t, s, first[0]); outcome != domain.OutcomeAnswered || result != script.OptedOut {
		t.Fatalf("the opting-out call ended %s with result %q", outcome, result)
	}
	if listed, _ := s.DNCListings(context.Background(), ids[0], []string{phone}, true); listed[phone] != domain.ReasonDNCTenant {
		t.Fatalf("after the opt-out the number is listed %q", listed[phone])
	}
	second := engImport(t, s, ids[0], "sc", "", phone)
	other := engImport(t, s, ids[1], "sc", "", phone)
	engWaitAllDone(t, s, ids[0], 2)
	engWaitAllDone(t, s, ids[1], 1)
	if _, outcome, _ := engContact(t, s, second[0]); outcome != domain.OutcomeDoNotCall {
		t.Errorf("the tenant's next contact with the number ended %s", outcome)
	}
	if _, outcome, _ := engContact(t, s, other[0]); outcome == domain.OutcomeDoNotCall {
		t.Errorf("another tenant's contact with the number ended %s", outcome)
	}
	if got := dialer.numbers(); len(got) != 2 {
		t.Errorf("the dialer dialled %v: want the opting-out call and the other tenant's", got)
	}
}
