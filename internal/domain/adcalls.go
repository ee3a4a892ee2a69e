package domain

import (
	"fmt"
	"time"
)

// Advertising calls (docs/compliance.md#advertising-calls): a scenario's
// purpose, the decree's bounds, a tenant's settings within them, and the one
// function (dialRules.wait) that says whether a contact may be dialled now
// and, if not, why and until when. The engine acts on it and the admin API
// shows it, so the two cannot drift.

// A scenario's purpose (call_config.purpose). Care is the default and is
// stored and shown as no purpose at all, so scenarios read as before.
const (
	PurposeCare        = "care"
	PurposeAdvertising = "advertising"
)

// The decree's bounds (Decree 91/2020/ND-CP): at most this many advertising
// calls to one number in 24 hours, only between these hours in Vietnam's
// time. A tenant may be stricter, never looser; they are not configurable.
const (
	legalMaxCallsPerNumberPerDay = 1
	legalAdStart                 = "08:00"
	legalAdEnd                   = "17:00"
	AdTimezone                   = "Asia/Ho_Chi_Minh"
)

// Why a contact waits: the reasons of the admin API's explanation, and (the
// two advertising rules) of the call_blocks rows of delayed attempts.
const (
	ReasonDailyLimit       = "daily_limit"       // the number had its advertising calls of the last 24 hours
	ReasonAdvertisingHours = "advertising_hours" // outside the tenant's advertising hours
	ReasonCallWindow       = "call_window"       // outside the scenario's own call window
	ReasonReCall           = "re_call"           // its next attempt is not due yet
	// The admin API's explanation also names these, which have no end time.
	ReasonScenarioNotActive = "scenario_not_active"
	ReasonCampaignPaused    = "campaign_paused"
	// The call_blocks reason of a contact a stopped campaign ended
	// (docs/admin.md#campaigns).
	ReasonCampaignStopped = "campaign_stopped"
)

// AdSettings are a tenant's rules for its advertising scenarios.
type AdSettings struct {
	MaxCallsPerNumberPerDay int    `json:"max_calls_per_number_per_day"`
	Start                   string `json:"start"`
	End                     string `json:"end"`
	Timezone                string `json:"timezone"` // always adTimezone: shown, not set
}

// legalAdSettings are a tenant's settings until it sets stricter ones.
func LegalAdSettings() AdSettings {
	return AdSettings{MaxCallsPerNumberPerDay: legalMaxCallsPerNumberPerDay, Start: legalAdStart, End: legalAdEnd, Timezone: AdTimezone}
}

// check refuses settings looser than the decree, naming the field.
func (s AdSettings) Check() *FieldError {
	bad := func(field, reason string) *FieldError { return &FieldError{Field: field, Reason: reason} }
	if s.MaxCallsPerNumberPerDay < 1 || s.MaxCallsPerNumberPerDay > legalMaxCallsPerNumberPerDay {
		return bad("max_calls_per_number_per_day", fmt.Sprintf(
			"must be from 1 to %d: Decree 91/2020/ND-CP allows at most %d advertising call(s) to a number in 24 hours",
			legalMaxCallsPerNumberPerDay, legalMaxCallsPerNumberPerDay))
	}
	lo, _ := parseClock(legalAdStart)
	hi, _ := parseClock(legalAdEnd)
	within := fmt.Sprintf("must be a time like \"09:00\" within %s-%s (Decree 91/2020/ND-CP)", legalAdStart, legalAdEnd)
	start, err := parseClock(s.Start)
	if err != nil || start < lo || start >= hi {
		return bad("start", within)
	}
	end, err := parseClock(s.End)
	if err != nil || end <= lo || end > hi {
		return bad("end", within)
	}
	if end <= start {
		return bad("end", "must be after start")
	}
	return nil
}

// window is the tenant's advertising hours as a call window, every day.
func (s AdSettings) Window() CallWindow {
	return CallWindow{Start: s.Start, End: s.End, Timezone: AdTimezone}
}

// checkPurpose checks call_config.purpose. An advertising scenario's window
// must meet the decree's hours within a week, or its contacts could never
// be dialled.
func (cc CallConfig) CheckPurpose(now time.Time) *FieldError {
	switch cc.Purpose {
	case "", PurposeCare:
		return nil
	case PurposeAdvertising:
	default:
		return &FieldError{Field: "call_config.purpose", Reason: "must be advertising or care"}
	}
	own, err := ParseCallWindow(cc.CallWindow)
	if err != nil {
		return nil // reported as call_config.call_window
	}
	legal, _ := ParseCallWindow(LegalAdSettings().Window())
	if _, ok := (DialWindow{own, legal}).Next(now); !ok {
		return &FieldError{Field: "call_config.call_window", Reason: fmt.Sprintf(
			"never meets the advertising hours %s-%s %s (Decree 91/2020/ND-CP); an advertising scenario could never call",
			legalAdStart, legalAdEnd, AdTimezone)}
	}
	return nil
}

// dialWindow is when a scenario's calls may start: its own call window,
// intersected with the advertising hours (ad) for an advertising scenario.
type DialWindow struct {
	Own, Ad *ParsedCallWindow
}

func (w DialWindow) Contains(t time.Time) bool {
	return w.Own.Contains(t) && (w.Ad == nil || w.Ad.Contains(t))
}

// Next is t if a call may start at t, else the next moment one may; ok is
// false when the two windows do not meet within a week (then never). Each
// window jumps to its own next opening while the other is closed, so no
// moment of the intersection is skipped, whatever the two time zones.
func (w DialWindow) Next(t time.Time) (time.Time, bool) {
	if w.Ad == nil {
		return w.Own.Next(t), true
	}
	for horizon := t.Add(8 * 24 * time.Hour); !t.After(horizon); {
		next := t
		switch {
		case !w.Own.Contains(t):
			next = w.Own.Next(t)
		case !w.Ad.Contains(t):
			next = w.Ad.Next(t)
		default:
			return t, true
		}
		if !next.After(t) {
			break // a window with no day at all: parseCallWindow refuses one
		}
		t = next
	}
	return time.Time{}, false
}

// closedReason names the window that keeps a call from starting at t:
// the advertising hours when the scenario's own window opens before the
// intersection does (or is open), else the scenario's own window.
func (w DialWindow) closedReason(t, open time.Time, ok bool) string {
	if w.Ad != nil && (!ok || w.Own.Next(t).Before(open)) {
		return ReasonAdvertisingHours
	}
	return ReasonCallWindow
}

// dialRules are the timing rules of one scenario's contacts: its window
// and, for an advertising scenario, the tenant's per-number limit (0: none).
type DialRules struct {
	Window DialWindow
	Limit  int
}

// Wait is why a queued contact is not dialled now, and when it will be
// (capacity allowing); Until is null when nobody can tell (a call to the
// number is up, or the windows never meet).
type Wait struct {
	Reason string     `json:"reason"`
	Until  *time.Time `json:"until"`
}

// contactTiming is what wait reads of one contact.
type ContactTiming struct {
	NextAttempt time.Time // zero or before now: due
	// Delay is the last delay the engine recorded for the contact: when it
	// set the contact's next attempt, its reason, not re_call, explains it.
	Delay *Wait
	// Answered are the answered advertising calls of the tenant to the
	// number in the 24 hours before now, in any order; Up those up now.
	Answered []time.Time
	Up       int
}

// adDay is the span of the per-number limit: any 24 hours.
const AdDay = 24 * time.Hour

// wait says whether a contact may be dialled at now (nil) and otherwise
// why and until when. Rules apply in order (next attempt, daily limit,
// window), each moving the time on; the reason is the first that holds,
// except that a window only names itself over a mere re_call delay.
func (r DialRules) Wait(now time.Time, c ContactTiming) *Wait {
	t, reason := now, ""
	if c.NextAttempt.After(now) {
		t, reason = c.NextAttempt, ReasonReCall
		if c.Delay != nil && c.Delay.Until != nil && c.Delay.Until.Equal(c.NextAttempt) {
			reason = c.Delay.Reason
		}
	}
	if r.Limit > 0 {
		if t.Equal(now) && c.Up > 0 && answeredSince(c.Answered, now.Add(-AdDay))+c.Up >= r.Limit {
			return &Wait{Reason: ReasonDailyLimit} // until the call up ends, answered or not
		}
		if free := limitFree(c.Answered, r.Limit, t); free.After(t) {
			t, reason = free, ReasonDailyLimit
		}
	}
	open, ok := r.Window.Next(t)
	if !ok {
		return &Wait{Reason: r.Window.closedReason(t, open, false)}
	}
	if open.After(t) {
		if reason == "" || reason == ReasonReCall {
			reason = r.Window.closedReason(t, open, true)
		}
		t = open
	}
	if reason == "" {
		return nil
	}
	t = t.UTC() // as every time the admin API shows
	return &Wait{Reason: reason, Until: &t}
}

// answeredSince counts the calls answered after since.
func answeredSince(answered []time.Time, since time.Time) int {
	n := 0
	for _, a := range answered {
		if a.After(since) {
			n++
		}
	}
	return n
}

// limitFree is the first moment from t on at which fewer than limit of the
// answered calls fall in the 24 hours before it: a call answered at a
// counts until a+24h.
func limitFree(answered []time.Time, limit int, t time.Time) time.Time {
	for answeredSince(answered, t.Add(-AdDay)) >= limit {
		// The earliest call still counted stops counting 24 hours after it.
		var first time.Time
		for _, a := range answered {
			if a.After(t.Add(-AdDay)) && (first.IsZero() || a.Before(first)) {
				first = a
			}
		}
		t = first.Add(AdDay)
	}
	return t
}

// dialRulesOf builds a scenario's rules under its tenant's settings; parse
// reads a call window (the engine's keeps them parsed).
func DialRulesOf(cc CallConfig, ads AdSettings, parse func(CallWindow) (*ParsedCallWindow, error)) (DialRules, error) {
	own, err := parse(cc.CallWindow)
	if err != nil {
		return DialRules{}, err
	}
	r := DialRules{Window: DialWindow{Own: own}}
	if cc.Purpose != PurposeAdvertising {
		return r, nil
	}
	if r.Window.Ad, err = parse(ads.Window()); err != nil {
		return DialRules{}, err
	}
	r.Limit = ads.MaxCallsPerNumberPerDay
	return r, nil
}
