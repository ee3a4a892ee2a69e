package domain

import (
	"fmt"
	"time"
)

// Why a scenario's queued contacts are not being dialled. The scheduler
// (Engine.tick) skips a scenario exactly when dialHold says so, and the
// console shows the same Hold in words, so the two cannot disagree
// (docs/console.md#overview).

// Hold kinds, the words the console and its tests key on.
const (
	HoldNotActive     = "not_active"        // only ACTIVE scenarios are dialled
	HoldBadWindow     = "bad_window"        // the call_window cannot be read
	HoldOutsideWindow = "outside_window"    // until the window opens again
	HoldAdHours       = "advertising_hours" // an advertising scenario outside the decree's hours (docs/compliance.md#advertising-calls)
	HoldWalletExpired = "wallet_expired"    // a prepaid wallet past its expiry
	HoldWalletEmpty   = "wallet_empty"      // a prepaid wallet that cannot pay one more call
	HoldNoHotline     = "no_hotline"        // the pool has no enabled number
	HoldPaused        = "paused"            // a paused campaign (Store.DueContacts leaves its contacts out)
)

// Hold is one reason not to dial now.
type Hold struct {
	Kind   string
	Until  time.Time // HoldOutsideWindow: when the window opens, in the window's time zone
	Detail string    // what the text names: the status, the pool, the error
}

// Text is the hold as the console says it.
func (h Hold) Text() string {
	switch h.Kind {
	case HoldNotActive:
		return fmt.Sprintf("not dialling: the scenario is %s, not ACTIVE", h.Detail)
	case HoldBadWindow:
		return "not dialling: the call window cannot be read (" + h.Detail + ")"
	case HoldOutsideWindow:
		if h.Until.IsZero() {
			return "not dialling: outside the call window"
		}
		return "not dialling: outside the call window until " + h.Until.Format("Mon 15:04 MST")
	case HoldAdHours:
		if h.Until.IsZero() {
			return "not dialling: its call window never meets the advertising hours"
		}
		return "not dialling: outside the advertising hours until " + h.Until.Format("Mon 15:04 MST")
	case HoldWalletExpired:
		return "not dialling: the prepaid wallet has expired"
	case HoldWalletEmpty:
		return "not dialling: the prepaid wallet is empty (it cannot pay one more call)"
	case HoldNoHotline:
		return fmt.Sprintf("not dialling: no enabled hotline in pool %s", h.Detail)
	case HoldPaused:
		return "not dialling: paused"
	}
	return "not dialling: " + h.Kind
}

// dialInputs are what the scheduler knows of a scenario when it decides.
type DialInputs struct {
	Status          string
	Window          *ParsedCallWindow
	WindowErr       error
	AdHours         *ParsedCallWindow // the tenant's advertising hours, for an advertising scenario; nil for care
	Wallet          Wallet
	Pool            string // the pool's key, for the text
	EnabledHotlines int
}

// dialHold is the rule: whether, and why, a scenario is not dialled at now,
// checked in the scheduler's order. A paused campaign is not here: its
// contacts are left out by the query that finds due contacts.
func DialHold(in DialInputs, now time.Time) (Hold, bool) {
	switch {
	case in.Status != StatusActive:
		return Hold{Kind: HoldNotActive, Detail: in.Status}, true
	case in.WindowErr != nil:
		return Hold{Kind: HoldBadWindow, Detail: in.WindowErr.Error()}, true
	case !in.Window.Contains(now):
		return Hold{Kind: HoldOutsideWindow, Until: in.Window.Next(now).In(in.Window.loc)}, true
	case in.AdHours != nil && !in.AdHours.Contains(now):
		h := Hold{Kind: HoldAdHours}
		if open, ok := (DialWindow{Own: in.Window, Ad: in.AdHours}).Next(now); ok {
			h.Until = open.In(in.AdHours.loc)
		}
		return h, true
	}
	if h, held := WalletHold(in.Wallet, now); held {
		return h, true
	}
	if in.EnabledHotlines == 0 {
		return Hold{Kind: HoldNoHotline, Detail: in.Pool}, true
	}
	return Hold{}, false
}

// walletHold says whether a wallet lets no call start: a prepaid one must
// hold the least an answered call costs (the larger of price_per_call and
// price_per_minute) and not be past its expiry.
func WalletHold(w Wallet, now time.Time) (Hold, bool) {
	switch {
	case !w.Prepaid:
		return Hold{}, false
	case w.Expired(now):
		return Hold{Kind: HoldWalletExpired}, true
	case max(w.PricePerCall, w.PricePerMinute) > 0 && w.Balance < max(w.PricePerCall, w.PricePerMinute):
		return Hold{Kind: HoldWalletEmpty}, true
	}
	return Hold{}, false
}
