package main

import (
	"context"
	"dialbox/internal/admin"
	"dialbox/internal/config"
	"dialbox/internal/dialer"
	"dialbox/internal/domain"
	"dialbox/internal/engine"
	"dialbox/internal/ops"
	"dialbox/internal/store"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Advertising calls (docs/compliance.md#advertising-calls): the window
// intersected with the decree's hours, the per-number daily limit, and the
// explanation of a contact's wait. Engine tests move the engine's clock by
// hand and wait on conditions.

var (
	hcm, _   = time.LoadLocation("Asia/Ho_Chi_Minh")
	tokyo, _ = time.LoadLocation("Asia/Tokyo") // UTC+9, two hours ahead of Ho Chi Minh City
)

func mustWindow(t *testing.T, cw domain.CallWindow) *domain.ParsedCallWindow {
	t.Helper()
	w, err := domain.ParseCallWindow(cw)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func legalWindow(t *testing.T) *domain.ParsedCallWindow {
	return mustWindow(t, domain.LegalAdSettings().Window())
}

func TestAdWindowIntersection(t *testing.T) {
	at := func(loc *time.Location, day, h, m int) time.Time { return testDate(2026, 11, day, h, m, 0, 0, loc) } // 30: a Monday
	for _, tc := range []struct {
		name string
		own  domain.CallWindow
		// Inside and outside the intersection, and from when to when the
		// next opening is.
		in, out   []time.Time
		from, opn time.Time
	}{{
		// 06:00-12:00 in Tokyo is 04:00-10:00 in Ho Chi Minh City: the
		// intersection is 08:00-10:00 there, 10:00-12:00 in Tokyo.
		name: "06:00-12:00 Asia/Tokyo",
		own:  domain.CallWindow{Start: "06:00", End: "12:00", Timezone: "Asia/Tokyo"},
		in:   []time.Time{at(tokyo, 30, 10, 0), at(tokyo, 30, 11, 59)},
		out:  []time.Time{at(tokyo, 30, 6, 0), at(tokyo, 30, 9, 59), at(tokyo, 30, 12, 0), at(hcm, 30, 16, 0)},
		from: at(tokyo, 30, 6, 30), opn: at(tokyo, 30, 10, 0),
	}, {
		// Over midnight in Tokyo: 22:00-11:00 is 20:00-09:00 in Ho Chi
		// Minh City, meeting the hours 08:00-09:00 there.
		name: "22:00-11:00 Asia/Tokyo, over midnight",
		own:  domain.CallWindow{Start: "22:00", End: "11:00", Timezone: "Asia/Tokyo"},
		in:   []time.Time{at(hcm, 30, 8, 0), at(hcm, 30, 8, 59)},
		out:  []time.Time{at(hcm, 30, 7, 59), at(hcm, 30, 9, 0), at(hcm, 30, 20, 30)},
		from: at(hcm, 30, 9, 0), opn: at(hcm, 31, 8, 0),
	}, {
		// Across the hours' end: 16:00-20:00 there keeps 16:00-17:00.
		name: "16:00-20:00 Asia/Ho_Chi_Minh, past 17:00",
		own:  domain.CallWindow{Start: "16:00", End: "20:00", Timezone: "Asia/Ho_Chi_Minh"},
		in:   []time.Time{at(hcm, 30, 16, 0), at(hcm, 30, 16, 59)},
		out:  []time.Time{at(hcm, 30, 17, 0), at(hcm, 30, 19, 0), at(hcm, 30, 15, 59)},
		from: at(hcm, 30, 17, 0), opn: at(hcm, 31, 16, 0),
	}, {
		// Weekdays only in UTC: Friday 23:00 UTC is Saturday 06:00 there;
		// the next opening is Monday 08:00 in Ho Chi Minh City (01:00 UTC).
		name: "00:00-24:00 UTC, MON-FRI",
		own:  domain.CallWindow{Start: "00:00", End: "24:00", Timezone: "UTC", Days: []string{"MON", "TUE", "WED", "THU", "FRI"}},
		in:   []time.Time{at(hcm, 30, 8, 0)},
		out:  []time.Time{at(hcm, 29, 10, 0)},
		from: testDate(2026, 11, 27, 23, 0, 0, 0, time.UTC), opn: at(hcm, 30, 8, 0),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			w := domain.DialWindow{Own: mustWindow(t, tc.own), Ad: legalWindow(t)}
			for _, x := range tc.in {
				if !w.Contains(x) {
					t.Errorf("%s: not inside", x)
				}
			}
			for _, x := range tc.out {
				if w.Contains(x) {
					t.Errorf("%s: inside", x)
				}
			}
			if got, ok := w.Next(tc.from); !ok || !got.Equal(tc.opn) {
				t.Errorf("next opening from %s: %s %v, want %s", tc.from, got, ok, tc.opn)
			}
		})
	}
	// A window that never meets the hours has no opening.
	never := domain.DialWindow{Own: mustWindow(t, domain.CallWindow{Start: "18:00", End: "23:00", Timezone: "Asia/Ho_Chi_Minh"}), Ad: legalWindow(t)}
	if got, ok := never.Next(at(hcm, 30, 12, 0)); ok {
		t.Errorf("18:00-23:00 meets 08:00-17:00 at %s", got)
	}
}

func TestAdLimitAndWaitReasons(t *testing.T) {
	now := testDate(2026, 11, 30, 12, 0, 0, 0, hcm)
	own := mustWindow(t, domain.CallWindow{Start: "07:00", End: "20:00", Timezone: "Asia/Ho_Chi_Minh"})
	ad := domain.DialRules{Window: domain.DialWindow{Own: own, Ad: legalWindow(t)}, Limit: 1}
	until := func(t time.Time) *time.Time { u := t.UTC(); return &u }
	h := time.Hour
	for _, tc := range []struct {
		name  string
		rules domain.DialRules
		now   time.Time
		c     domain.ContactTiming
		want  *domain.Wait
	}{
		{"due, nothing answered", ad, now, domain.ContactTiming{}, nil},
		{"answered 2 h ago: 22 h more", ad, now, domain.ContactTiming{Answered: []time.Time{now.Add(-2 * h)}},
			&domain.Wait{Reason: domain.ReasonDailyLimit, Until: until(now.Add(22 * h))}},
		{"answered 24 h ago: free", ad, now, domain.ContactTiming{Answered: []time.Time{now.Add(-24 * h)}}, nil},
		{"a call up", ad, now, domain.ContactTiming{Up: 1}, &domain.Wait{Reason: domain.ReasonDailyLimit, Until: nil}},
		{"limit 2: one answered is fine", domain.DialRules{Window: ad.Window, Limit: 2}, now,
			domain.ContactTiming{Answered: []time.Time{now.Add(-h)}}, nil},
		{"limit 2: two answered, free when the first is 24 h old", domain.DialRules{Window: ad.Window, Limit: 2}, now,
			domain.ContactTiming{Answered: []time.Time{now.Add(-h), now.Add(-3 * h)}}, &domain.Wait{Reason: domain.ReasonDailyLimit, Until: until(now.Add(21 * h))}},
		// Answered at 19:00: free at 19:00 tomorrow, outside the hours;
		// the limit still names the wait, until 08:00 the day after.
		{"limit then hours", ad, now, domain.ContactTiming{Answered: []time.Time{now.Add(7*h - 24*h)}},
			&domain.Wait{Reason: domain.ReasonDailyLimit, Until: until(testDate(2026, 12, 1, 8, 0, 0, 0, hcm))}},
		{"after 17:00, own window open", ad, now.Add(6 * h), domain.ContactTiming{},
			&domain.Wait{Reason: domain.ReasonAdvertisingHours, Until: until(testDate(2026, 12, 1, 8, 0, 0, 0, hcm))}},
		// 21:00: the scenario's own window is shut too, and opens first.
		{"after 20:00", ad, now.Add(9 * h), domain.ContactTiming{},
			&domain.Wait{Reason: domain.ReasonAdvertisingHours, Until: until(testDate(2026, 12, 1, 8, 0, 0, 0, hcm))}},
		{"a re_call delay ending after 17:00", ad, now.Add(4*h + 59*time.Minute), domain.ContactTiming{NextAttempt: now.Add(5*h + 5*time.Minute)},
			&domain.Wait{Reason: domain.ReasonAdvertisingHours, Until: until(testDate(2026, 12, 1, 8, 0, 0, 0, hcm))}},
		{"a re_call delay", ad, now, domain.ContactTiming{NextAttempt: now.Add(h)}, &domain.Wait{Reason: domain.ReasonReCall, Until: until(now.Add(h))}},
		{"a delay the engine recorded", ad, now.Add(8 * h), domain.ContactTiming{NextAttempt: now.Add(20 * h),
			Delay: &domain.Wait{Reason: domain.ReasonAdvertisingHours, Until: until(now.Add(20 * h))}}, &domain.Wait{Reason: domain.ReasonAdvertisingHours, Until: until(now.Add(20 * h))}},
		{"care: after 17:00 is fine", domain.DialRules{Window: domain.DialWindow{Own: own}}, now.Add(6 * h),
			domain.ContactTiming{Answered: []time.Time{now}}, nil},
		{"care: before 07:00", domain.DialRules{Window: domain.DialWindow{Own: own}}, now.Add(-6 * h), domain.ContactTiming{},
			&domain.Wait{Reason: domain.ReasonCallWindow, Until: until(testDate(2026, 11, 30, 7, 0, 0, 0, hcm))}},
	} {
		got := tc.rules.Wait(tc.now, tc.c)
		switch {
		case (got == nil) != (tc.want == nil):
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		case got == nil:
		case got.Reason != tc.want.Reason || (got.Until == nil) != (tc.want.Until == nil) ||
			(got.Until != nil && !got.Until.Equal(*tc.want.Until)):
			t.Errorf("%s: %s until %v, want %s until %v", tc.name, got.Reason, got.Until, tc.want.Reason, tc.want.Until)
		}
	}
}

// adTenant is engTenant with its scenario "sc" for advertising and a care
// scenario "care", both dialling all day (so only the decree's hours
// limit them), and a second advertising scenario "ad2".
func adTenant(key string) *store.FixtureApp {
	a := dncTenant(key)
	sc := a.Scenarios[0]
	sc.CallConfig.Purpose = domain.PurposeAdvertising
	ad2, care := *sc, *sc
	ad2.ID, ad2.Name = "ad2", "ad2"
	care.ID, care.Name, care.CallConfig.Purpose = "care", "care", ""
	a.Scenarios = append(a.Scenarios, &ad2, &care)
	return a
}

// adContact reads what the engine decided for a contact.
func adContact(t *testing.T, s Store, id string) (state string, next time.Time, calls []engCall) {
	t.Helper()
	var nextMS int64
	queryRows(t, s, `SELECT state, next_attempt_at FROM contacts WHERE id = ?`, []any{id},
		func(scan func(...any) error) error { return scan(&state, &nextMS) })
	return state, store.FromMillis(nextMS), engCalls(t, s, id)
}

func adBlocks(t *testing.T, s Store, reason string) int {
	return queryInt(t, s, `SELECT count(*) FROM call_blocks WHERE reason = ?`, reason)
}

func adWait(t *testing.T, s Store, appID int64, id string, now time.Time) *domain.Wait {
	t.Helper()
	c, _, err := s.Contact(context.Background(), appID, id)
	if err != nil {
		t.Fatal(err)
	}
	w, err := admin.ContactWait(context.Background(), s, appID, c, now)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestAdDailyLimitAcrossScenarios(t *testing.T) { eachBackend(t, testAdDailyLimitAcrossScenarios) }

func testAdDailyLimitAcrossScenarios(t *testing.T, backend string) {
	s, ids := fixtureStoreOn(t, backend, adTenant("ad-a"), adTenant("ad-b"))
	a, b := ids[0], ids[1]
	const (
		answers = "+84900000001" // ANSWERED after 5 s of ringing
		busy    = "+84900000002" // BUSY: never answered
	)
	clock := &engClock{}
	clock.Set(testDate(2026, 11, 30, 9, 0, 0, 0, hcm))
	dialer := newRecordingDialer()
	e := engStart(t, s, dialer, nil, func(p *engine.Parts) { p.Now = clock.Now })
	dialled := func(n string) int {
		return len(slices.DeleteFunc(dialer.numbers(), func(p string) bool { return p != n }))
	}

	first := engImport(t, s, a, "sc", "", answers, busy)
	engWaitAllDone(t, s, a, 2)
	_, _, calls := adContact(t, s, first[0])
	if len(calls) != 1 || calls[0].Outcome != domain.OutcomeAnswered || calls[0].Answered == nil {
		t.Fatalf("first advertising call: %+v", calls)
	}
	answeredAt := store.FromMillis(*calls[0].Answered)
	free := answeredAt.Add(24 * time.Hour)

	// The same numbers in the tenant's second advertising scenario: the
	// answered one waits until 24 hours after that answer; the busy one is
	// dialled (unanswered attempts do not count). In the care scenario and
	// in the other tenant, both are dialled at once.
	second := engImport(t, s, a, "ad2", "", answers, busy)
	care := engImport(t, s, a, "care", "", answers)
	engImport(t, s, b, "sc", "", answers)
	waitFor(t, "the second advertising contact delayed", func() bool {
		state, next, _ := adContact(t, s, second[0])
		return state == domain.ContactQueued && next.Equal(free)
	})
	engWaitAllDone(t, s, b, 1)
	waitFor(t, "the care contact and the busy number dialled", func() bool {
		return queryInt(t, s, `SELECT count(*) FROM contacts WHERE app_id = ? AND state = 'done'`, a) == 4
	})
	for _, id := range []string{care[0], second[1]} {
		if state, _, calls := adContact(t, s, id); state != domain.ContactDone || len(calls) != 1 {
			t.Errorf("contact %s: %s after %d calls, want dialled", id, state, len(calls))
		}
	}
	if n := dialled(answers); n != 3 {
		t.Errorf("%s dialled %d times before the 24 hours passed, want 3 (first, care, other tenant)", answers, n)
	}
	if until := queryInt(t, s, `SELECT until FROM call_blocks WHERE reason = 'daily_limit' AND contact_id = ?`, second[0]); !store.FromMillis(int64(until)).Equal(free) {
		t.Errorf("audit row of the delay: until %v, want %s", store.FromMillis(int64(until)), free)
	}
	if n := adBlocks(t, s, domain.ReasonDailyLimit); n != 1 {
		t.Errorf("%d daily_limit audit rows, want 1", n)
	}
	if w := adWait(t, s, a, second[0], clock.Now()); w == nil || w.Reason != domain.ReasonDailyLimit || w.Until == nil || !w.Until.Equal(free) {
		t.Errorf("explanation of the delayed contact: %+v, want daily_limit until %s", w, free)
	}
	if w := adWait(t, s, a, care[0], clock.Now()); w != nil {
		t.Errorf("explanation of a done care contact: %+v", w)
	}

	// A minute before the 24 hours are over it still waits; then it is dialled.
	clock.Set(free.Add(-time.Minute))
	e.Notify(a)
	if w := adWait(t, s, a, second[0], clock.Now()); w == nil || w.Reason != domain.ReasonDailyLimit {
		t.Errorf("a minute before: %+v", w)
	}
	clock.Set(free)
	e.Notify(a)
	engWaitAllDone(t, s, a, 5)
	if _, _, calls := adContact(t, s, second[0]); len(calls) != 1 || calls[0].Started < store.Millis(free) {
		t.Errorf("the delayed contact's calls: %+v, want one from %s", calls, free)
	}
}

func TestAdSameNumberClaimedInOneTick(t *testing.T) { eachBackend(t, testAdSameNumberClaimedInOneTick) }

func testAdSameNumberClaimedInOneTick(t *testing.T, backend string) {
	app := adTenant("ad-tick")
	s, ids := fixtureStoreOn(t, backend, app)
	a := ids[0]
	const number = "+84900000001"
	clock := &engClock{}
	clock.Set(testDate(2026, 11, 30, 7, 0, 0, 0, hcm)) // before the hours: both wait for 08:00
	dialer := newRecordingDialer()
	e := engStart(t, s, dialer, nil, func(p *engine.Parts) { p.Now = clock.Now })
	ad := engImport(t, s, a, "sc", "", number)
	ad = append(ad, engImport(t, s, a, "ad2", "", number)...)
	care := engImport(t, s, a, "care", "", number)
	// The care contact is dialled at 07:00; the advertising ones wait.
	waitFor(t, "both advertising contacts delayed to 08:00", func() bool {
		return adBlocks(t, s, domain.ReasonAdvertisingHours) == 2
	})
	engWaitAllDone(t, s, a, 1)
	if state, _, _ := adContact(t, s, care[0]); state != domain.ContactDone {
		t.Errorf("care contact %s at 07:00", state)
	}
	open := testDate(2026, 11, 30, 8, 0, 0, 0, hcm)
	for _, id := range ad {
		if state, next, calls := adContact(t, s, id); state != domain.ContactQueued || !next.Equal(open) || len(calls) != 0 {
			t.Errorf("advertising contact at 07:00: %s next %s, %d calls", state, next, len(calls))
		}
	}
	// At 08:00 both are due in the same tick: one is dialled, the other
	// waits for it and, once it is answered, 24 hours more.
	clock.Set(open)
	e.Notify(a)
	engWaitAllDone(t, s, a, 2)
	waitFor(t, "the other advertising contact delayed by the daily limit", func() bool {
		return adBlocks(t, s, domain.ReasonDailyLimit) == 1
	})
	if n := len(dialer.numbers()); n != 2 {
		t.Errorf("%d calls placed, want 2 (care, then one advertising)", n)
	}
	if n := adBlocks(t, s, domain.ReasonAdvertisingHours); n != 2 {
		t.Errorf("%d advertising_hours audit rows, want one per contact", n)
	}
	rec := httptest.NewRecorder()
	ops.MetricsHandler(prometheus.NewRegistry(), s, discardLog()).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{`dialbox_calls_blocked_total{reason="daily_limit"} 1`, `dialbox_calls_blocked_total{reason="advertising_hours"} 2`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestAdHoursInAnotherTimezone(t *testing.T) { eachBackend(t, testAdHoursInAnotherTimezone) }

func testAdHoursInAnotherTimezone(t *testing.T, backend string) {
	app := adTenant("ad-tokyo")
	app.Scenarios[0].CallConfig.CallWindow = domain.CallWindow{Start: "06:00", End: "12:00", Timezone: "Asia/Tokyo"}
	s, ids := fixtureStoreOn(t, backend, app)
	a := ids[0]
	clock := &engClock{}
	clock.Set(testDate(2026, 11, 30, 6, 30, 0, 0, tokyo)) // 04:30 in Ho Chi Minh City
	e := engStart(t, s, newRecordingDialer(), nil, func(p *engine.Parts) { p.Now = clock.Now })
	open := testDate(2026, 11, 30, 10, 0, 0, 0, tokyo)

	contacts := engImport(t, s, a, "sc", "", engPhones(3, 0)...)
	waitFor(t, "contacts delayed to 10:00 Tokyo", func() bool { return adBlocks(t, s, domain.ReasonAdvertisingHours) == 3 })
	if w := adWait(t, s, a, contacts[0], clock.Now()); w == nil || w.Reason != domain.ReasonAdvertisingHours || !w.Until.Equal(open) {
		t.Errorf("explanation at 06:30 Tokyo: %+v, want advertising_hours until %s", w, open)
	}
	// More contacts later in the wait: each delayed once, the first three
	// not again however many ticks ran meanwhile.
	clock.Set(testDate(2026, 11, 30, 9, 59, 0, 0, tokyo))
	contacts = append(contacts, engImport(t, s, a, "sc", "", engPhones(2, 3)...)...)
	waitFor(t, "the new contacts delayed", func() bool {
		return queryInt(t, s, `SELECT count(*) FROM contacts WHERE state = 'queued' AND next_attempt_at = ?`, store.Millis(open)) == 5
	})
	if n := adBlocks(t, s, domain.ReasonAdvertisingHours); n != 5 {
		t.Errorf("%d advertising_hours audit rows for 5 contacts", n)
	}
	if n := queryInt(t, s, `SELECT count(*) FROM calls`); n != 0 {
		t.Fatalf("%d calls before the intersection opened", n)
	}
	clock.Set(open)
	e.Notify(a)
	engWaitAllDone(t, s, a, len(contacts))
	for _, id := range contacts {
		if _, _, calls := adContact(t, s, id); len(calls) != 1 || !store.FromMillis(calls[0].Started).Equal(open) {
			t.Errorf("contact %s: calls %+v, want one at %s", id, calls, open)
		}
	}
	// 12:00 Tokyo: the scenario's own window has shut (10:00 there).
	clock.Set(testDate(2026, 11, 30, 12, 0, 0, 0, tokyo))
	late := engImport(t, s, a, "sc", "", engPhones(1, 10)...)
	if w := adWait(t, s, a, late[0], clock.Now()); w == nil || w.Reason != domain.ReasonAdvertisingHours ||
		!w.Until.Equal(open.AddDate(0, 0, 1)) {
		t.Errorf("explanation at 12:00 Tokyo: %+v, want advertising_hours until %s", w, open.AddDate(0, 0, 1))
	}
}

func TestAdValidation(t *testing.T) {
	cc := domain.DefaultCallConfig()
	cc.Purpose = "spam"
	if fe := domain.CheckScenarioFields("x", "", nil, cc); fe == nil || fe.Field != "call_config.purpose" {
		t.Errorf("purpose spam: %+v", fe)
	}
	cc.Purpose, cc.CallWindow.Start, cc.CallWindow.End = domain.PurposeAdvertising, "18:00", "23:00"
	if fe := domain.CheckScenarioFields("x", "", nil, cc); fe == nil || fe.Field != "call_config.call_window" ||
		!strings.Contains(fe.Reason, "08:00-17:00") {
		t.Errorf("advertising 18:00-23:00: %+v", fe)
	}
	for _, tc := range []struct {
		s     domain.AdSettings
		field string
	}{
		{domain.LegalAdSettings(), ""},
		{domain.AdSettings{MaxCallsPerNumberPerDay: 1, Start: "09:00", End: "16:30"}, ""},
		{domain.AdSettings{MaxCallsPerNumberPerDay: 2, Start: "08:00", End: "17:00"}, "max_calls_per_number_per_day"},
		{domain.AdSettings{MaxCallsPerNumberPerDay: 0, Start: "08:00", End: "17:00"}, "max_calls_per_number_per_day"},
		{domain.AdSettings{MaxCallsPerNumberPerDay: 1, Start: "07:59", End: "17:00"}, "start"},
		{domain.AdSettings{MaxCallsPerNumberPerDay: 1, Start: "08:00", End: "17:01"}, "end"},
		{domain.AdSettings{MaxCallsPerNumberPerDay: 1, Start: "12:00", End: "10:00"}, "end"},
		{domain.AdSettings{MaxCallsPerNumberPerDay: 1, Start: "9", End: "10:00"}, "start"},
	} {
		fe := tc.s.Check()
		if (fe == nil) != (tc.field == "") || (fe != nil && fe.Field != tc.field) {
			t.Errorf("%+v: %+v, want an error on %q", tc.s, fe, tc.field)
		}
	}
}

// TestAdSettingsAndPurpose: purpose through the admin API (absent from JSON
// for care, so existing scenarios read as before) and fixtures, the
// tenant's settings within the decree's bounds, each refusal naming its
// field, and narrower hours in the explanation.
func TestAdSettingsAndPurpose(t *testing.T) { eachBackend(t, testAdSettingsAndPurpose) }

func testAdSettingsAndPurpose(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	for _, tc := range []struct{ id, config, want string }{
		{"p-default", `{}`, ""},
		{"p-care", `{"purpose":"care"}`, ""},
		{"p-ad", `{"purpose":"advertising"}`, `"purpose":"advertising"`},
	} {
		var raw json.RawMessage
		s.admin(t, "POST", "/apps/qa-key/scenarios", `{"id":"`+tc.id+`","content":"x","call_config":`+tc.config+`}`, &raw)
		if got := strings.Contains(string(raw), `"purpose"`); got != (tc.want != "") || !strings.Contains(string(raw), tc.want) {
			t.Errorf("%s: %s, want %q", tc.id, raw, tc.want)
		}
	}
	wantField(t, s.adminFail(t, "PATCH", "/apps/qa-key/scenarios/p-ad", `{"call_config":{"purpose":"spam"}}`, 400), "call_config.purpose")
	wantField(t, s.adminFail(t, "PATCH", "/apps/qa-key/scenarios/p-ad",
		`{"call_config":{"call_window":{"start":"18:00","end":"23:00"}}}`, 400), "call_config.call_window")

	var got domain.AdSettings
	s.admin(t, "GET", "/apps/qa-key/advertising", "", &got)
	if got != domain.LegalAdSettings() {
		t.Errorf("settings of a tenant that set none: %+v", got)
	}
	s.admin(t, "PATCH", "/apps/qa-key/advertising", `{"end":"16:00"}`, &got)
	s.admin(t, "GET", "/apps/qa-key/advertising", "", &got)
	if want := (domain.AdSettings{MaxCallsPerNumberPerDay: 1, Start: "08:00", End: "16:00", Timezone: domain.AdTimezone}); got != want {
		t.Errorf("after PATCH end 16:00: %+v, want %+v", got, want)
	}
	for body, field := range map[string]string{
		`{"max_calls_per_number_per_day":2}`: "max_calls_per_number_per_day",
		`{"max_calls_per_number_per_day":0}`: "max_calls_per_number_per_day",
		`{"start":"07:00"}`:                  "start",
		`{"end":"17:30"}`:                    "end",
		`{"timezone":"UTC"}`:                 "timezone",
	} {
		wantField(t, s.adminFail(t, "PATCH", "/apps/qa-key/advertising", body, 400), field)
	}

	// Fixtures: the same checks, with the file's key.
	const app = "[[applications]]\napi_key = \"k\"\napi_secret = \"s\"\n"
	for text, key := range map[string]string{
		app + "  [applications.advertising]\n  max_calls_per_number_per_day = 2\n":                                              "applications[0].advertising.max_calls_per_number_per_day",
		app + "  [applications.advertising]\n  start = \"06:00\"\n":                                                             "applications[0].advertising.start",
		app + "  [[applications.scenarios]]\n  id = \"sc\"\n    [applications.scenarios.call_config]\n    purpose = \"spam\"\n": "applications[0].scenarios[0].call_config.purpose",
	} {
		_, err := store.LoadFixtures(writeFile(t, "f.toml", text))
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: %v, want an error on %s", text, err, key)
		}
	}
	f, err := store.LoadFixtures(writeFile(t, "f.toml", app+"  [applications.advertising]\n  start = \"09:00\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	fa := adTenant("k")
	fa.Advertising = f.Applications[0].Advertising
	st, ids := fixtureStoreOn(t, backend, fa)
	if got, err := st.AdSettings(context.Background(), ids[0]); err != nil || got != (domain.AdSettings{MaxCallsPerNumberPerDay: 1, Start: "09:00", End: "17:00", Timezone: domain.AdTimezone}) {
		t.Errorf("settings from fixtures: %+v %v", got, err)
	}
	contact := engImport(t, st, ids[0], "sc", "", engPhones(1, 0)...)
	at := testDate(2026, 11, 30, 8, 30, 0, 0, hcm)
	if w := adWait(t, st, ids[0], contact[0], at); w == nil || w.Reason != domain.ReasonAdvertisingHours ||
		!w.Until.Equal(testDate(2026, 11, 30, 9, 0, 0, 0, hcm)) {
		t.Errorf("explanation at 08:30 with hours from 09:00: %+v", w)
	}
	// Applied again without the section: left as they were.
	fa.Advertising = nil
	if err := st.ApplyFixtures(context.Background(), []*store.FixtureApp{fa}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.AdSettings(context.Background(), ids[0]); got.Start != "09:00" {
		t.Errorf("settings after the section was removed: %+v", got)
	}
}

// TestAdLimitQueryUsesItsIndex: the daily limit's read, made for every
// due contact of an advertising scenario, is one range of
// calls_ad_answered a number, not a scan of the calls.
func TestAdLimitQueryUsesItsIndex(t *testing.T) {
	s, _ := fixtureStore(t)
	// The queries of AnsweredAdCalls and ContactWait, parameters and all.
	for q, args := range map[string][]any{
		`SELECT ad_phone, answered_at FROM calls WHERE app_id = ? AND answered_at > ? AND ad_phone IS NOT NULL AND answered_at IS NOT NULL AND ad_phone IN (?, ?)`: {"calls_ad_answered", 1, 0, "+84900000001", "+84900000002"},
		`SELECT count(*) FROM calls WHERE state = 'dialing' AND app_id = ? AND ad_phone = ?`:                                                                       {"calls_dialing", 1, "+84900000001"},
	} {
		index, args := args[0].(string), args[1:]
		rows, err := sqliteDB(t, s).Query(`EXPLAIN QUERY PLAN `+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		if p := strings.Join(plan, "; "); !strings.Contains(p, "INDEX "+index+" ") {
			t.Errorf("%s\nplan: %s, want a search of %s", q, p, index)
		}
	}
}

// BenchmarkEngineAdvertisingCalls is BenchmarkEngineCalls with the
// scenario for advertising, inside the hours: the cost of the daily
// limit's reads and bookkeeping on every dial (no number repeats, so none
// is delayed).
func BenchmarkEngineAdvertisingCalls(b *testing.B) {
	app := engTenant()
	app.HotlinePools[0].Numbers = nil
	for i := range 1000 {
		app.HotlinePools[0].Numbers = append(app.HotlinePools[0].Numbers, fmt.Sprintf("0287%07d", i))
	}
	app.Scenarios[0].CallConfig.MaxConcurrent = 1000
	app.Scenarios[0].CallConfig.Purpose = domain.PurposeAdvertising
	app.Webhooks = []store.FixtureWebhook{{URL: "http://127.0.0.1:9/unused", Secret: whSecret}}
	s, ids := fixtureStore(b, app)
	for start := 0; start < b.N; start += 5000 {
		engImport(b, s, ids[0], "sc", "", engPhones(min(5000, b.N-start), start)...)
	}
	clock := &engClock{}
	clock.Set(testDate(2026, 11, 30, 10, 0, 0, 0, hcm))
	b.ResetTimer()
	begin := time.Now()
	engStart(b, s, dialer.NewSim(config.SimulatorConfig{Seed: 1, TimeScale: 1e12}), nil, func(p *engine.Parts) { p.Now = clock.Now })
	for queryInt(b, s, `SELECT count(*) FROM contacts WHERE state = 'done'`) < b.N {
		time.Sleep(20 * time.Millisecond)
	}
	elapsed := time.Since(begin)
	b.StopTimer()
	if n := queryInt(b, s, `SELECT count(*) FROM calls WHERE ad_phone IS NOT NULL`); n != b.N {
		b.Fatalf("%d advertising calls recorded, want %d", n, b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
}
