package main

// The sandbox clock's "now" (docs/sandbox.md#the-clock): set through the
// admin API, read by the rules of calling, shown in the console, undone by
// a reset.

import (
	"dialbox/internal/admin"
	"dialbox/internal/domain"
	"dialbox/internal/testtool"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
)

// adClockFixtures: one tenant with an advertising scenario dialable at any
// hour of its own window, so only the advertising hours (08:00-17:00 in
// Ho Chi Minh City) hold its contacts; results go to the sink.
const adClockFixtures = `
[[applications]]
api_key = "ad-key"
api_secret = "ad-secret"
  [applications.wallet]
  prepaid = true
  balance = 1000000
  expires_at = 2099-01-01T00:00:00Z
  price_per_call = 1000
  price_per_minute = 800
  [[applications.hotline_pools]]
  key = "POOL_SYSTEM"
  numbers = ["02873000001"]
  [[applications.scenarios]]
  id = "sc-ad"
  status = "ACTIVE"
  content = "Khuyến mãi"
    [applications.scenarios.call_config]
    purpose = "advertising"
    [applications.scenarios.call_config.call_window]
    start = "00:00"
    end = "24:00"
  [[applications.webhooks]]
  url = "/sink/ad"
  secret = "whsec_ZGlhbGJveC1zYW5kYm94LXNpbmstc2VjcmV0"
`

type clockAnswer struct {
	TimeScale     float64   `json:"time_scale"`
	Now           time.Time `json:"now"`
	OffsetSeconds int64     `json:"offset_seconds"`
}

func TestSandboxClockNow(t *testing.T) { eachBackend(t, testSandboxClockNow) }

func testSandboxClockNow(t *testing.T, backend string) {
	s := startServerOn(t, backend, adClockFixtures, "DIALBOX_ENGINE_ENABLED=true", "DIALBOX_SIMULATOR_TIME_SCALE=1000",
		"DIALBOX_ADMIN_TOKEN="+testAdminToken)
	hcm, err := time.LoadLocation(domain.AdTimezone)
	if err != nil {
		t.Fatal(err)
	}
	// Tomorrow in Ho Chi Minh City, whatever the real hour: 22:00 is
	// outside the advertising hours, 10:00 the day after inside them.
	y, m, d := time.Now().In(hcm).AddDate(0, 0, 1).Date()
	night := time.Date(y, m, d, 22, 0, 0, 0, hcm)
	opens := time.Date(y, m, d+1, 8, 0, 0, 0, hcm)
	morning := time.Date(y, m, d+1, 10, 0, 0, 0, hcm)

	var clock clockAnswer
	s.admin(t, "PUT", "/clock", `{"now":"`+night.Format(time.RFC3339)+`"}`, &clock)
	if clock.Now.Before(night) || clock.Now.After(night.Add(time.Minute)) || clock.OffsetSeconds == 0 || clock.TimeScale != 1000 {
		t.Fatalf("clock set to %s answered %+v", night, clock)
	}
	var added struct {
		Result []struct {
			ContactID string `json:"contact_id"`
		}
	}
	status, b := s.do(t, "POST", "/api/v1/public-api/scenarios/sc-ad/calls", bearer(t, "ad-key", "ad-secret"),
		`{"contacts":[{"phone_number":"0912345678"}]}`)
	if status != 200 || json.Unmarshal(b, &added) != nil || len(added.Result) != 1 {
		t.Fatalf("operation A: %d %s", status, b)
	}
	var contact admin.ContactWithCalls
	s.admin(t, "GET", "/apps/ad-key/contacts/"+added.Result[0].ContactID, "", &contact)
	if w := contact.Waiting; w == nil || w.Reason != domain.ReasonAdvertisingHours || w.Until == nil || !w.Until.Equal(opens) {
		t.Fatalf("at %s the contact waits %+v, want advertising_hours until %s", night, w, opens)
	}

	// The console shows the sandbox's time on its clock page and in its header.
	c := signedIn(t, s)
	if _, body := c.get("/console/clock"); !strings.Contains(body, night.UTC().Format("2006-01-02 15:04")) {
		t.Errorf("the clock page does not show the set time %s:\n%s", night.UTC(), body)
	}
	if _, body := c.get("/console/"); !strings.Contains(body, "Sandbox time") {
		t.Errorf("the header does not say the clock is moved:\n%s", body)
	}
	// The clock page's forms: back to the real time, and a time set.
	c.post("/console/clock", url.Values{"csrf": {c.csrf("/console/clock")}, "real": {"1"}})
	if s.m.sandboxNow.Offset() != 0 {
		t.Errorf("the console's button left the clock moved by %s", s.m.sandboxNow.Offset())
	}
	if _, body := c.get("/console/"); strings.Contains(body, "Sandbox time") {
		t.Errorf("the header says the clock is moved on the real time")
	}
	c.post("/console/clock", url.Values{"csrf": {c.csrf("/console/clock")}, "now": {night.Format(time.RFC3339)}})
	if now := s.m.sandboxNow.Now(); now.Before(night) || now.After(night.Add(time.Minute)) {
		t.Errorf("the console set the time to %s, want %s", now, night)
	}

	s.admin(t, "PUT", "/clock", `{"now":"`+morning.Format(time.RFC3339)+`"}`, &clock)
	testtool.WaitFor(t, fmt.Sprintf("the contact dialled at %s", morning), time.Minute, func() bool {
		var sink struct{ Count int }
		s.admin(t, "GET", "/sink?name=ad&event_type=contact.completed", "", &sink)
		return sink.Count == 1
	})
	s.admin(t, "GET", "/apps/ad-key/contacts/"+added.Result[0].ContactID, "", &contact)
	if len(contact.Calls) != 1 || contact.Calls[0].StartedAt.Before(morning) {
		t.Errorf("the call %+v did not start on the sandbox's clock (from %s)", contact.Calls, morning)
	}

	// A reset brings the real time back; the time scale stays.
	s.admin(t, "PUT", "/clock", `{"time_scale":50}`, nil)
	s.admin(t, "POST", "/reset", "", nil)
	s.admin(t, "GET", "/clock", "", &clock)
	if clock.OffsetSeconds != 0 || time.Since(clock.Now).Abs() > time.Hour || clock.TimeScale != 50 {
		t.Errorf("after a reset the clock is %+v", clock)
	}
}

// TestSandboxClockRefusals: bad clock bodies get the admin API's 400
// naming the field.
func TestSandboxClockRefusals(t *testing.T) {
	s := startSandbox(t)
	for body, field := range map[string]string{
		`{}`:                            "time_scale",
		`{"now":"tomorrow"}`:            "now",
		`{"now":"2026-11-30T10:00:00"}`: "now",
		`{"now":"2026-11-30T10:00:00Z","offset_seconds":5}`: "offset_seconds",
		`{"offset_seconds":999999999999}`:                   "offset_seconds",
		`{"now":"9999-01-01T00:00:00Z"}`:                    "now",
	} {
		wantField(t, s.adminFail(t, "PUT", "/clock", body, 400), field)
	}
	var clock clockAnswer
	s.admin(t, "PUT", "/clock", `{"offset_seconds":-3600}`, &clock)
	if clock.OffsetSeconds != -3600 {
		t.Errorf("offset: %+v", clock)
	}
	s.admin(t, "PUT", "/clock", `{"offset_seconds":0}`, &clock)
	if clock.OffsetSeconds != 0 {
		t.Errorf("offset back to 0: %+v", clock)
	}
}

// TestSandboxClockWalletExpiry: a wallet's expires_at is judged at the
// sandbox's time, so 1104 is tested by moving the clock past it.
func TestSandboxClockWalletExpiry(t *testing.T) { eachBackend(t, testSandboxClockWalletExpiry) }

func testSandboxClockWalletExpiry(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	expires := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	s.admin(t, "PATCH", "/apps/qa-key/wallet", `{"expires_at":"`+expires.Format(time.RFC3339)+`"}`, nil)
	s.admin(t, "PUT", "/clock", `{"offset_seconds":259200}`, nil) // three days on
	if _, e := qaImport(t, s, oneContact); e.Code != 1104 {
		t.Errorf("three days on, past expires_at %s: %+v, want 1104", expires, e)
	}
	s.admin(t, "PUT", "/clock", `{"offset_seconds":0}`, nil)
	if status, e := qaImport(t, s, oneContact); status != 200 {
		t.Errorf("on the real time, before expires_at: %d %+v", status, e)
	}
}
