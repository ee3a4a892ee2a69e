package main

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"dialbox/internal/config"
	"dialbox/internal/destinations"
	"dialbox/internal/domain"
	"dialbox/internal/engine"
	"dialbox/internal/ops"
	"dialbox/internal/store"

	"github.com/prometheus/client_golang/prometheus"
)

// The destination policy against toll fraud (docs/compliance.md#destinations),
// enforced by the engine before the dial: the dialer is asked which
// numbers it dialled, so a held number that reached it fails the test
// whatever outcome was recorded.

// Only the home region's fixed lines and mobiles are dialled by default:
// premium-rate, toll-free, foreign and satellite numbers are accepted by
// the import as today, then held: DO_NOT_CALL, free, final, audited with
// their reason and counted on /metrics.
func TestDestinationsHeldByDefault(t *testing.T) { eachBackend(t, testDestinationsHeldByDefault) }

func testDestinationsHeldByDefault(t *testing.T, backend string) {
	s, ids := fixtureStoreOn(t, backend, dncTenant("dest-a"))
	app := ids[0]
	const (
		mobile    = "+84913000011"  // the home region's mobile: dialled
		fixed     = "+842873000011" // the home region's fixed line: dialled
		vn1900    = "+841900123456" // VN premium rate
		vn1900s   = "+8419001234"   // VN premium rate, the short form
		vn1800    = "+841800123456" // VN toll-free: not an ordinary number
		us900     = "+19002345678"  // US premium rate
		uk09      = "+449098790000" // UK premium rate
		iridium   = "+881612345678" // satellite
		inmarsat  = "+870773111632" // satellite
		singapore = "+6591234567"   // another country's mobile
	)
	want := map[string]string{
		vn1900: "destination_premium", vn1900s: "destination_premium", vn1800: "destination_special",
		us900: "destination_foreign", uk09: "destination_foreign", iridium: "destination_foreign",
		inmarsat: "destination_foreign", singapore: "destination_foreign",
	}
	dialer := newRecordingDialer()
	engStart(t, s, dialer, nil, nil)
	contacts := engImport(t, s, app, "sc", "", mobile, fixed, vn1900, vn1900s, vn1800, us900, uk09, iridium, inmarsat, singapore)
	engWaitAllDone(t, s, app, len(contacts))

	if dialed := dialer.numbers(); !slices.Equal(slices.Sorted(slices.Values(dialed)), []string{fixed, mobile}) {
		t.Errorf("the dialer was asked to dial %v; want only %s and %s", dialed, mobile, fixed)
	}
	for _, id := range contacts {
		var phone string
		queryRow(t, s, `SELECT phone FROM contacts WHERE id = ?`, []any{id}, &phone)
		state, outcome, attempts := engContact(t, s, id)
		if want[phone] == "" {
			if outcome == domain.OutcomeDoNotCall {
				t.Errorf("%s (ordinary) ended DO_NOT_CALL", phone)
			}
			continue
		}
		calls := engCalls(t, s, id)
		if state != "done" || outcome != domain.OutcomeDoNotCall || attempts != 1 || len(calls) != 1 || calls[0].Hotline != "" ||
			calls[0].Cause != 403 || calls[0].Cost != 0 || calls[0].Answered != nil {
			t.Errorf("%s: state %s outcome %s attempts %d calls %+v", phone, state, outcome, attempts, calls)
		}
	}
	reasons := map[string]string{}
	queryRows(t, s, `SELECT phone, reason FROM call_blocks WHERE until IS NULL`, nil, func(scan func(...any) error) error {
		var phone, reason string
		err := scan(&phone, &reason)
		reasons[phone] = reason
		return err
	})
	if !mapsEqual(reasons, want) {
		t.Errorf("call_blocks %v, want %v", reasons, want)
	}
	completed, callEvents := dncEvents(t, s, app, domain.EventContactCompleted), dncEvents(t, s, app, domain.EventCallCompleted)
	for phone := range want {
		if len(callEvents[phone]) != 0 || len(completed[phone]) != 1 ||
			!strings.Contains(completed[phone][0], `"outcome":"DO_NOT_CALL"`) {
			t.Errorf("%s: %d call.completed, contact.completed %.300v", phone, len(callEvents[phone]), completed[phone])
		}
	}

	rec := httptest.NewRecorder()
	ops.MetricsHandler(prometheus.NewRegistry(), s, discardLog()).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, line := range []string{`dialbox_calls_blocked_total{reason="destination_premium"} 2`,
		`dialbox_calls_blocked_total{reason="destination_special"} 1`,
		`dialbox_calls_blocked_total{reason="destination_foreign"} 5`} {
		if !strings.Contains(rec.Body.String(), line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}
}

// testPolicy is the destination policy cfg gives the engine.
func testPolicy(t testing.TB, cfg config.Config) *destinations.Policy {
	t.Helper()
	p, err := destinations.New(cfg.Phone.DefaultRegion, cfg.Destinations)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The operator's prefixes apply to every tenant, a tenant's (set in its
// fixtures, as the admin API sets them) to that tenant alone, and a deny
// wins over every allow.
func TestDestinationRulesOfOperatorAndTenant(t *testing.T) {
	eachBackend(t, testDestinationRulesOfOperatorAndTenant)
}

func testDestinationRulesOfOperatorAndTenant(t *testing.T, backend string) {
	const (
		sgMobile   = "+6591234567"   // the operator opens Singapore's ordinary numbers
		sgDenied   = "+6598765432"   // ...which tenant A denies in part
		vnDenied   = "+84913000031"  // the operator denies: A's allow of +8491 does not open it
		vn1900     = "+841900123456" // premium rate: A opens this one number
		vn1900More = "+841900123457" // premium rate, opened by nobody
	)
	a := dncTenant("dest-a")
	a.Destinations = &destinations.Rules{Allow: []string{vn1900, "+8491"}, Deny: []string{"+6598"}}
	s, ids := fixtureStoreOn(t, backend, a, dncTenant("dest-b"))
	cfg := config.DefaultConfig()
	cfg.Destinations = destinations.Rules{Allow: []string{"+65"}, Deny: []string{vnDenied}}
	dialer := newRecordingDialer()
	engStart(t, s, dialer, nil, func(p *engine.Parts) { p.Destinations = testPolicy(t, cfg) })
	phones := []string{sgMobile, sgDenied, vnDenied, vn1900, vn1900More}
	engImport(t, s, ids[0], "sc", "", phones...)
	engImport(t, s, ids[1], "sc", "", phones...)
	engWaitAllDone(t, s, ids[0], len(phones))
	engWaitAllDone(t, s, ids[1], len(phones))

	got := map[string]string{}
	queryRows(t, s, `SELECT a.api_key, b.phone, b.reason FROM call_blocks b JOIN applications a ON a.id = b.app_id`, nil,
		func(scan func(...any) error) error {
			var app, phone, reason string
			err := scan(&app, &phone, &reason)
			got[app+" "+phone] = reason
			return err
		})
	want := map[string]string{
		"dest-a " + sgDenied: "destination_denied", "dest-a " + vnDenied: "destination_denied",
		"dest-a " + vn1900More: "destination_premium",
		"dest-b " + vnDenied:   "destination_denied", "dest-b " + vn1900: "destination_premium",
		"dest-b " + vn1900More: "destination_premium",
	}
	if !mapsEqual(got, want) {
		t.Errorf("call_blocks %v, want %v", got, want)
	}
	dialed := slices.Sorted(slices.Values(dialer.numbers()))
	if wantDialed := slices.Sorted(slices.Values([]string{sgMobile, sgMobile, sgDenied, vn1900})); !slices.Equal(dialed, wantDialed) {
		t.Errorf("the dialer was asked to dial %v, want %v", dialed, wantDialed)
	}
}

// A tenant's prefixes through the admin API: shown on its application,
// set on create and by a PATCH, kept by a PATCH that does not name them,
// read by the engine at once; bad ones are a 400 naming the list.
func TestAdminDestinationRules(t *testing.T) { eachBackend(t, testAdminDestinationRules) }

func testAdminDestinationRules(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	var app domain.Application
	s.admin(t, "GET", "/apps/qa-key", "", &app)
	if len(app.Destinations.Allow) != 0 || len(app.Destinations.Deny) != 0 {
		t.Errorf("a tenant's rules before any were set: %+v", app.Destinations)
	}
	_, raw := s.do(t, "GET", "/admin/v1/apps/qa-key", adminAuth, "")
	if !strings.Contains(string(raw), `"destinations":{"allow":[],"deny":[]}`) {
		t.Errorf("no rules are not shown as empty lists: %s", raw)
	}

	rules := destinations.Rules{Allow: []string{"+65", "+841900123456"}, Deny: []string{"+8491300004"}}
	s.admin(t, "PATCH", "/apps/qa-key", `{"destinations":{"allow":["+65","+841900123456"],"deny":["+8491300004"]}}`, &app)
	if !slices.Equal(app.Destinations.Allow, rules.Allow) || !slices.Equal(app.Destinations.Deny, rules.Deny) {
		t.Errorf("PATCH answered %+v", app.Destinations)
	}
	got, err := s.m.store.AppDestinations(context.Background(), app.ID)
	if err != nil || !slices.Equal(got.Allow, rules.Allow) || !slices.Equal(got.Deny, rules.Deny) {
		t.Errorf("the engine reads %+v, %v; want %+v", got, err, rules)
	}
	s.admin(t, "PATCH", "/apps/qa-key", `{"name":"renamed"}`, &app)
	if !slices.Equal(app.Destinations.Allow, rules.Allow) || !slices.Equal(app.Destinations.Deny, rules.Deny) {
		t.Errorf("a rename changed the rules: %+v", app.Destinations)
	}
	s.admin(t, "PATCH", "/apps/qa-key", `{"destinations":{"deny":["+84"]}}`, &app)
	if len(app.Destinations.Allow) != 0 || !slices.Equal(app.Destinations.Deny, []string{"+84"}) {
		t.Errorf("destinations replaces both lists; got %+v", app.Destinations)
	}

	var created struct {
		domain.Application
		APISecret string `json:"api_secret"`
	}
	s.admin(t, "POST", "/apps", `{"api_key":"dest-new","destinations":{"allow":["+65"]}}`, &created)
	if !slices.Equal(created.Destinations.Allow, []string{"+65"}) || created.Destinations.Deny == nil {
		t.Errorf("created with %+v", created.Destinations)
	}

	many := `"+1"` + strings.Repeat(`,"+1"`, destinations.MaxPrefixes)
	for body, field := range map[string]string{
		`{"destinations":{"allow":["65"]}}`:           "destinations.allow",
		`{"destinations":{"deny":["+84 91"]}}`:        "destinations.deny",
		`{"destinations":{"deny":["+"]}}`:             "destinations.deny",
		`{"destinations":{"allow":[` + many + `]}}`:   "destinations.allow",
		`{"destinations":{"allow":"+65"}}`:            "destinations.allow",
		`{"destinations":{"allow":["+65"],"x":true}}`: "",
	} {
		e := s.adminFail(t, "PATCH", "/apps/qa-key", body, 400)
		if field != "" {
			wantField(t, e, field)
		}
		s.adminFail(t, "POST", "/apps", strings.Replace(body, "{", `{"api_key":"dest-bad",`, 1), 400)
	}
	s.admin(t, "GET", "/apps/qa-key", "", &app)
	if len(app.Destinations.Allow) != 0 || !slices.Equal(app.Destinations.Deny, []string{"+84"}) {
		t.Errorf("a refused PATCH changed the rules: %+v", app.Destinations)
	}
}

// A fixtures file sets a tenant's prefixes, checked as the admin API
// checks them; applied again without them, they stay as they are.
func TestFixtureDestinations(t *testing.T) { eachBackend(t, testFixtureDestinations) }

func testFixtureDestinations(t *testing.T, backend string) {
	const app = "[[applications]]\napi_key = \"k\"\napi_secret = \"s\"\n"
	for text, key := range map[string]string{
		app + "  [applications.destinations]\n  allow = [\"65\"]\n":         "applications[0].destinations.allow",
		app + "  [applications.destinations]\n  deny = [\"+84\", \"+x\"]\n": "applications[0].destinations.deny",
	} {
		_, err := store.LoadFixtures(writeFile(t, "f.toml", text))
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: %v, want an error on %s", text, err, key)
		}
	}
	f, err := store.LoadFixtures(writeFile(t, "f.toml", app+"  [applications.destinations]\n  allow = [\"+65\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	fa := dncTenant("k")
	fa.Destinations = f.Applications[0].Destinations
	s, ids := fixtureStoreOn(t, backend, fa)
	read := func() destinations.Rules {
		t.Helper()
		r, err := s.AppDestinations(context.Background(), ids[0])
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := read(); !slices.Equal(r.Allow, []string{"+65"}) || len(r.Deny) != 0 {
		t.Errorf("from fixtures: %+v", r)
	}
	fa.Destinations = nil
	if err := s.ApplyFixtures(context.Background(), []*store.FixtureApp{fa}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if r := read(); !slices.Equal(r.Allow, []string{"+65"}) {
		t.Errorf("after the section was removed: %+v", r)
	}
	fa.Destinations = &destinations.Rules{Deny: []string{"+8491"}}
	if err := s.ApplyFixtures(context.Background(), []*store.FixtureApp{fa}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if r := read(); len(r.Allow) != 0 || !slices.Equal(r.Deny, []string{"+8491"}) {
		t.Errorf("after a changed section: %+v", r)
	}
}
