package main

import (
	"dialbox/internal/domain"
	"dialbox/internal/store"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCallWindowContainsAndNext: calls start only inside the window's local
// hours on its days (start inclusive, end exclusive); a window over
// midnight belongs to the day it opens; Next is the next opening.
// 2026-11-23 is a Monday.
func TestCallWindowContainsAndNext(t *testing.T) {
	hcm, err := time.LoadLocation("Asia/Ho_Chi_Minh")
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time {
		tm, err := time.ParseInLocation("2006-01-02 15:04", s, hcm)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	weekdays := domain.CallWindow{Start: "08:00", End: "20:00", Timezone: "Asia/Ho_Chi_Minh", Days: []string{"MON", "TUE", "WED", "THU", "FRI"}}
	overnight := domain.CallWindow{Start: "22:00", End: "06:00", Timezone: "Asia/Ho_Chi_Minh", Days: []string{"mon"}}
	allDay := domain.CallWindow{Start: "00:00", End: "24:00", Timezone: "Asia/Ho_Chi_Minh"} // no days: every day
	utc := domain.CallWindow{Start: "08:00", End: "20:00", Timezone: "UTC"}
	for _, c := range []struct {
		name   string
		window domain.CallWindow
		at     time.Time
		inside bool
		next   time.Time // when not inside
	}{
		{"before opening", weekdays, at("2026-11-23 07:59"), false, at("2026-11-23 08:00")},
		{"at opening", weekdays, at("2026-11-23 08:00"), true, time.Time{}},
		{"last minute", weekdays, at("2026-11-23 19:59"), true, time.Time{}},
		{"at closing", weekdays, at("2026-11-23 20:00"), false, at("2026-11-24 08:00")},
		{"friday evening", weekdays, at("2026-11-27 20:00"), false, at("2026-11-30 08:00")},
		{"saturday", weekdays, at("2026-11-28 12:00"), false, at("2026-11-30 08:00")},
		{"instant in UTC, local 08:30", weekdays, time.Date(2026, 11, 23, 1, 30, 0, 0, time.UTC), true, time.Time{}},
		{"same instant, UTC window", utc, time.Date(2026, 11, 23, 1, 30, 0, 0, time.UTC), false, time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)},
		{"overnight, evening of its day", overnight, at("2026-11-23 23:59"), true, time.Time{}},
		{"overnight, after midnight", overnight, at("2026-11-24 00:00"), true, time.Time{}},
		{"overnight, last minute", overnight, at("2026-11-24 05:59"), true, time.Time{}},
		{"overnight, at closing", overnight, at("2026-11-24 06:00"), false, at("2026-11-30 22:00")},
		{"overnight, morning of its day", overnight, at("2026-11-23 05:00"), false, at("2026-11-23 22:00")},
		{"overnight, before opening", overnight, at("2026-11-23 21:59"), false, at("2026-11-23 22:00")},
		{"all day, midnight", allDay, at("2026-11-29 00:00"), true, time.Time{}},
		{"all day, last minute", allDay, at("2026-11-29 23:59"), true, time.Time{}},
	} {
		w, err := domain.ParseCallWindow(c.window)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := w.Contains(c.at); got != c.inside {
			t.Errorf("%s: Contains(%v) = %v, want %v", c.name, c.at, got, c.inside)
		}
		want := c.at
		if !c.inside {
			want = c.next
		}
		if got := w.Next(c.at); !got.Equal(want) {
			t.Errorf("%s: Next(%v) = %v, want %v", c.name, c.at, got.In(hcm), want.In(hcm))
		}
	}
}

// TestParseCallWindowErrors: a window that cannot be read says which part
// is wrong, so the scenario's owner can fix it.
func TestParseCallWindowErrors(t *testing.T) {
	good := domain.CallWindow{Start: "08:00", End: "20:00", Timezone: "Asia/Ho_Chi_Minh", Days: []string{"MON"}}
	for _, c := range []struct {
		name   string
		change func(*domain.CallWindow)
		want   string
	}{
		{"one-digit hour", func(w *domain.CallWindow) { w.Start = "8:00" }, `start: "8:00" is not a time`},
		{"minutes over 59", func(w *domain.CallWindow) { w.Start = "08:60" }, `start: "08:60" is not a time`},
		{"after 24:00", func(w *domain.CallWindow) { w.End = "24:01" }, `end: "24:01" is not a time`},
		{"no such hour", func(w *domain.CallWindow) { w.End = "25:00" }, `end: "25:00" is not a time`},
		{"not a time", func(w *domain.CallWindow) { w.End = "noon" }, `end: "noon" is not a time`},
		{"empty window", func(w *domain.CallWindow) { w.End = "08:00" }, "start and end are equal"},
		{"no time zone", func(w *domain.CallWindow) { w.Timezone = "" }, `timezone "" is not an IANA time zone`},
		{"unknown time zone", func(w *domain.CallWindow) { w.Timezone = "Mars/Base" }, `timezone "Mars/Base"`},
		{"unknown day", func(w *domain.CallWindow) { w.Days = []string{"MON", "FUN"} }, `day "FUN" is not one of`},
	} {
		w := good
		c.change(&w)
		if _, err := domain.ParseCallWindow(w); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	if _, err := domain.ParseCallWindow(good); err != nil {
		t.Errorf("the good window: %v", err)
	}
}

// TestCallWindowDaysUpperCased: days are read in any case and stored and
// echoed as the contract spells them, from the admin API and fixtures alike.
func TestCallWindowDaysUpperCased(t *testing.T) { eachBackend(t, testCallWindowDaysUpperCased) }

func testCallWindowDaysUpperCased(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	var sc struct {
		CallConfig domain.CallConfig `json:"call_config"`
	}
	s.admin(t, "POST", "/apps/qa-key/scenarios", `{"id":"sc-days","content":"x","call_config":{"call_window":{"start":"08:00","end":"17:00","timezone":"Asia/Ho_Chi_Minh","days":["mon","Tue"]}}}`, &sc)
	if got := sc.CallConfig.CallWindow.Days; !slices.Equal(got, []string{"MON", "TUE"}) {
		t.Errorf("admin API echoed days %q; want [MON TUE]", got)
	}
	f, err := store.LoadFixtures(writeFile(t, "days.toml", `
[[applications]]
api_key = "days-key"
api_secret = "days-secret"
  [[applications.scenarios]]
  id = "sc-days"
  content = "x"
    [applications.scenarios.call_config.call_window]
    days = ["sat", "Sun"]
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Applications[0].Scenarios[0].CallConfig.CallWindow.Days; !slices.Equal(got, []string{"SAT", "SUN"}) {
		t.Errorf("fixtures days %q; want [SAT SUN]", got)
	}
}
