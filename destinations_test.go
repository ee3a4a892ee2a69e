package main

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"dialbox/internal/destinations"
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
			if outcome == OutcomeDoNotCall {
				t.Errorf("%s (ordinary) ended DO_NOT_CALL", phone)
			}
			continue
		}
		calls := engCalls(t, s, id)
		if state != "done" || outcome != OutcomeDoNotCall || attempts != 1 || len(calls) != 1 || calls[0].Hotline != "" ||
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
	completed, callEvents := dncEvents(t, s, app, EventContactCompleted), dncEvents(t, s, app, EventCallCompleted)
	for phone := range want {
		if len(callEvents[phone]) != 0 || len(completed[phone]) != 1 ||
			!strings.Contains(completed[phone][0], `"outcome":"DO_NOT_CALL"`) {
			t.Errorf("%s: %d call.completed, contact.completed %.300v", phone, len(callEvents[phone]), completed[phone])
		}
	}

	rec := httptest.NewRecorder()
	metricsHandler(s, discardLog()).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, line := range []string{`dialbox_calls_blocked_total{reason="destination_premium"} 2`,
		`dialbox_calls_blocked_total{reason="destination_special"} 1`,
		`dialbox_calls_blocked_total{reason="destination_foreign"} 5`} {
		if !strings.Contains(rec.Body.String(), line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}
}

// testPolicy is the destination policy cfg gives the engine.
func testPolicy(t testing.TB, cfg Config) *destinations.Policy {
	t.Helper()
	p, err := destinations.New(cfg.Phone.DefaultRegion, cfg.Destinations)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
