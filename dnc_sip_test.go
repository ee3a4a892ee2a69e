package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"dialbox/internal/domain"
	"dialbox/internal/sipcall/sipcalltest"
	"dialbox/internal/testtool"

	"github.com/emiago/diago"
)

// optOutSIPScenarios: "bot" asks the callee to press 9 to receive no more
// calls and opts them out when they do, with a goodbye (the test TTS
// speaks 800 ms for it); "sc" is a plain greeting. The tenant's webhook
// endpoint makes its events queue in the outbox.
var optOutSIPScenarios = sipScenario("sc", "Xin chào {{ho_ten}}", 60, 10) + `
  [[applications.scenarios]]
  id = "bot"
  status = "ACTIVE"
    [applications.scenarios.call_config]
    pool_hotline_key = "P"
    max_duration = 60
    [applications.scenarios.call_config.call_window]
    start = "00:00"
    end = "24:00"
    [applications.scenarios.script]
    start = "menu"
      [[applications.scenarios.script.steps]]
      name = "menu"
      gather = { prompt = { say = "long Nhấn 9 nếu bạn không muốn nhận cuộc gọi nữa." }, max_digits = 1, timeout = "5s", branches = { "9" = "stop" } }
      [[applications.scenarios.script.steps]]
      name = "stop"
      opt_out = { say = "Cảm ơn bạn, chúng tôi sẽ không gọi lại." }
  [[applications.webhooks]]
  url = "http://127.0.0.1:9/hook"
  secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
`

// optOutFarEnd answers every call, presses 9 once it has heard keyAt
// packets of the menu, and records what it heard from then on, and
// whether the number was on the tenant's list while the call was still up.
type optOutFarEnd struct {
	*sipcalltest.FarEnd
	mu        sync.Mutex
	invites   map[string]int
	afterKey  map[string]int  // packets heard after pressing the key
	listedUp  map[string]bool // listed on the tenant's list before the call ended
	heardTone map[string]float64
}

func newOptOutFarEnd(t *testing.T, keyAt int, listed func(phone string) bool) *optOutFarEnd {
	f := &optOutFarEnd{invites: map[string]int{}, afterKey: map[string]int{}, listedUp: map[string]bool{}, heardTone: map[string]float64{}}
	f.FarEnd = sipcalltest.NewFarEnd(t, false, func(d *diago.DialogServerSession) {
		to := d.InviteRequest.Recipient.User
		f.mu.Lock()
		f.invites[to]++
		f.mu.Unlock()
		if d.Answer() != nil {
			return
		}
		pressedAt := -1
		h := sipcalltest.Listen(t, d, func(packets int) bool {
			if pressedAt < 0 && packets >= keyAt {
				pressedAt = packets
				go func() { _ = sipcalltest.SendDTMF(d.RTPPacketWriter, '9') }()
				go func() {
					// Until the call ends: is the number listed meanwhile?
					for d.Context().Err() == nil {
						if listed(to) {
							f.mu.Lock()
							f.listedUp[to] = d.Context().Err() == nil
							f.mu.Unlock()
							return
						}
						time.Sleep(5 * time.Millisecond)
					}
				}()
			}
			return false
		})
		f.mu.Lock()
		if pressedAt >= 0 {
			f.afterKey[to] = h.Packets - pressedAt
			after := sipcalltest.Heard{Samples: h.Samples[min(len(h.Samples), pressedAt*160):]}
			f.heardTone[to] = after.RMS()
		}
		f.mu.Unlock()
	})
	return f
}

// Opt-out over SIP (docs/compliance.md#opt-out): the callee presses the
// key leading to the opt_out step; the number is on the tenant's list while
// the call is still up, the goodbye is heard whole before dialbox hangs up,
// the call's result is opted_out in its webhook, and the tenant's next
// contact with the number, in another scenario, ends DO_NOT_CALL with no
// second call reaching the far end.
func TestDNCOptOutOverSIP(t *testing.T) {
	const phone = "+84913000031"
	dir := t.TempDir()
	var store Store
	var appID int64
	var ready sync.WaitGroup
	ready.Add(1)
	fe := newOptOutFarEnd(t, 10, func(p string) bool {
		ready.Wait()
		listed, err := store.DNCListings(context.Background(), appID, []string{p}, false)
		return err == nil && listed[p] == domain.ReasonDNCTenant
	})
	writeFileAt(t, filepath.Join(dir, "fixtures.toml"), fmt.Sprintf(sipFixtures, optOutSIPScenarios))
	cfg := filepath.Join(dir, "dialbox.toml")
	writeFileAt(t, cfg, sipConfig(dir, &sipFarEnd{FarEnd: fe.FarEnd}, newSIPTTS(t), 10, 10, ""))
	logs := &testtool.LockedBuffer{}
	m := startMain(t, logs, []string{"--config", cfg}, nil, func(m *Main) { m.SetLogOutput(logs) })
	t.Cleanup(func() {
		m.Close()
		if t.Failed() {
			t.Logf("dialbox log:\n%s", logs.String())
		}
	})
	store = m.store
	app, err := store.AppByKey(context.Background(), "sip-key")
	if err != nil {
		t.Fatal(err)
	}
	appID = app.ID
	ready.Done()
	wait := func(id string) {
		t.Helper()
		waitFor(t, "contact "+id+" done", func() bool {
			state, _, _ := engContact(t, store, id)
			return state == domain.ContactDone
		})
	}

	first := engImport(t, store, appID, "bot", "", phone)[0]
	wait(first)
	fe.mu.Lock()
	listedUp, afterKey, tone, invites := fe.listedUp[phone], fe.afterKey[phone], fe.heardTone[phone], fe.invites[phone]
	fe.mu.Unlock()
	if !listedUp {
		t.Error("the number was not on the tenant's list while the call was up")
	}
	// The goodbye (800 ms, 40 packets) after the key, a tone, then dialbox's BYE.
	if afterKey < 35 || tone < 3000 {
		t.Errorf("after pressing 9 the far end heard %d packets at RMS %.0f; want the whole 800 ms goodbye", afterKey, tone)
	}
	calls := dncEvents(t, store, appID, domain.EventCallCompleted)[phone]
	if len(calls) != 1 {
		t.Fatalf("%d call.completed for the opting-out call", len(calls))
	}
	var ev struct{ Data botCall }
	if err := json.Unmarshal([]byte(calls[0]), &ev); err != nil {
		t.Fatal(err)
	}
	if c := ev.Data; c.Outcome != domain.OutcomeAnswered || c.Digits != "9" || c.Result != "opted_out" || c.path() != "menu>stop" {
		t.Errorf("call.completed: outcome %s digits %q result %q steps %s; want ANSWERED, 9, opted_out, menu>stop", c.Outcome, c.Digits, c.Result, c.path())
	}

	// The next contact with the number, in another scenario: held, never dialled.
	second := engImport(t, store, appID, "sc", "", phone)[0]
	wait(second)
	if _, outcome, _ := engContact(t, store, second); outcome != domain.OutcomeDoNotCall {
		t.Errorf("the next contact with the number ended %s", outcome)
	}
	fe.mu.Lock()
	if n := fe.invites[phone]; n != invites || n != 1 {
		t.Errorf("the far end saw %d calls to the number, want only the first", n)
	}
	fe.mu.Unlock()
}
