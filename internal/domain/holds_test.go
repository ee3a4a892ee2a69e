package domain

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Each reason a scenario is not dialled, as the scheduler's rule gives it.
func TestDialHoldReasons(t *testing.T) {
	now := time.Date(2026, 3, 2, 20, 0, 0, 0, time.UTC) // a Monday, 20:00 UTC = 03:00 in Ho Chi Minh City
	window := func(start, end string) *ParsedCallWindow {
		w, err := ParseCallWindow(CallWindow{Start: start, End: end, Timezone: "Asia/Ho_Chi_Minh"})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	open := window("00:00", "24:00")
	paid := Wallet{Prepaid: true, Balance: 5000, PricePerCall: 1000}
	expired := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   DialInputs
		kind string
		text string
	}{
		{DialInputs{Status: StatusDraft, Window: open, Wallet: paid, EnabledHotlines: 1}, HoldNotActive, "the scenario is DRAFT, not ACTIVE"},
		{DialInputs{Status: StatusActive, WindowErr: errors.New("bad"), Wallet: paid, EnabledHotlines: 1}, HoldBadWindow, "cannot be read"},
		{DialInputs{Status: StatusActive, Window: window("08:00", "20:00"), Wallet: paid, EnabledHotlines: 1}, HoldOutsideWindow, "outside the call window until Tue 08:00 +07"},
		{DialInputs{Status: StatusActive, Window: open, AdHours: window("08:00", "17:00"), Wallet: paid, EnabledHotlines: 1}, HoldAdHours, "outside the advertising hours until Tue 08:00 +07"},
		// Inside its own window, before the hours open; then one that never meets them.
		{DialInputs{Status: StatusActive, Window: window("02:00", "12:00"), AdHours: window("08:00", "17:00"), Wallet: paid, EnabledHotlines: 1}, HoldAdHours, "until Tue 08:00 +07"},
		{DialInputs{Status: StatusActive, Window: window("18:00", "24:00"), AdHours: window("08:00", "17:00"), Wallet: paid, EnabledHotlines: 1}, HoldOutsideWindow, "outside the call window"},
		{DialInputs{Status: StatusActive, Window: window("02:00", "07:00"), AdHours: window("08:00", "17:00"), Wallet: paid, EnabledHotlines: 1}, HoldAdHours, "never meets the advertising hours"},
		{DialInputs{Status: StatusActive, Window: open, Wallet: Wallet{Prepaid: true, Balance: 999, PricePerCall: 1000}, EnabledHotlines: 1}, HoldWalletEmpty, "wallet is empty"},
		{DialInputs{Status: StatusActive, Window: open, Wallet: Wallet{Prepaid: true, Balance: 5000, ExpiresAt: &expired}, EnabledHotlines: 1}, HoldWalletExpired, "wallet has expired"},
		{DialInputs{Status: StatusActive, Window: open, Wallet: paid, Pool: "POOL_X"}, HoldNoHotline, "no enabled hotline in pool POOL_X"},
		{DialInputs{Status: StatusActive, Window: open, Wallet: Wallet{Prepaid: false, Balance: -5}, EnabledHotlines: 1}, "", ""},
		{DialInputs{Status: StatusActive, Window: open, Wallet: Wallet{Prepaid: true, Balance: -5}, EnabledHotlines: 1}, "", ""}, // free calls
	} {
		h, held := DialHold(tc.in, now)
		if h.Kind != tc.kind || held != (tc.kind != "") || !strings.Contains(h.Text(), tc.text) {
			t.Errorf("%+v: held %v %q (%q), want %q saying %q", tc.in, held, h.Kind, h.Text(), tc.kind, tc.text)
		}
	}
	if got := (Hold{Kind: HoldPaused}).Text(); got != "not dialling: paused" {
		t.Errorf("paused reads %q", got)
	}
}
