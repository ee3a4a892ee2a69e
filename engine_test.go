package main

import (
	"context"
	"dialbox/internal/config"
	"dialbox/internal/dialer"
	"dialbox/internal/domain"
	"dialbox/internal/engine"
	"dialbox/internal/recordings"
	"dialbox/internal/sandbox"
	"dialbox/internal/store"
	"dialbox/internal/webhook"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Engine tests run simulated calls thousands of times faster than real
// time and wait on conditions (with generous timeouts), never on durations.

// engTenant is a postpaid tenant with one ACTIVE scenario "sc" dialling
// from pool "P" of three hotlines, all day, max_concurrent 10, no re_call.
func engTenant() *store.FixtureApp {
	cc := domain.DefaultCallConfig()
	cc.PoolHotlineKey = "P"
	cc.MaxConcurrent = 10
	cc.CallWindow.Start, cc.CallWindow.End = "00:00", "24:00"
	return &store.FixtureApp{
		Name: "engine test", APIKey: "eng-key", APISecret: "eng-secret",
		HotlinePools: []store.FixturePool{{Key: "P", Numbers: []string{"02873000001", "02873000002", "02873000003"}}},
		Scenarios: []*store.FixtureScenario{{ID: "sc", Name: "sc", Status: domain.StatusActive, Content: "hello",
			PersonalizedFields: []string{"ho_ten"}, CallConfig: cc}},
	}
}

// engImport adds contacts as operation A (or C, with a campaign) would.
func engImport(t testing.TB, s Store, appID int64, scenario, campaign string, phones ...string) []string {
	t.Helper()
	req := domain.ImportRequest{AppID: appID, ScenarioID: scenario, CampaignID: campaign}
	for i, p := range phones {
		echo := map[string]string{"ho_ten": fmt.Sprintf("Contact %d", i), "so_dien_thoai": p}
		fields, _ := json.Marshal(echo)
		id := domain.NewV7()
		req.Contacts = append(req.Contacts, domain.NewContact{Position: i, Input: map[string]any{"phone_number": p},
			ID: id, Fields: fields, Phone: p, Echo: domain.EchoJSON(echo, id)})
	}
	res, err := s.Import(context.Background(), req, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(res.Added))
	for i, c := range res.Added {
		ids[i] = c.ID
	}
	return ids
}

// engPhones makes n distinct numbers that no rule matches.
func engPhones(n, from int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("+84913%06d", from+i)
	}
	return out
}

// engStart starts an engine on s with a fast simulated dialer (unless
// dialer is set) and stops it when the test ends.
func engStart(t testing.TB, s Store, calls engine.Dialer, hooks *webhook.Deliverer, setup func(*engine.Parts)) *engine.Engine {
	t.Helper()
	scale := 5000.0
	if calls == nil {
		calls = dialer.NewSim(config.SimulatorConfig{Seed: 1, TimeScale: scale})
	}
	p := engine.Parts{Store: s, Dialer: calls, Log: discardLog(), Config: config.EngineConfig{PollInterval: config.Duration{Duration: 20 * time.Millisecond}},
		Destinations: testPolicy(t, config.DefaultConfig()), Webhooks: hooks, FirstTry: hooks.FirstTry,
		TimeScale: func() float64 { return scale }}
	if setup != nil {
		setup(&p)
	}
	e := engine.New(p)
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	return e
}

func engWaitAllDone(t testing.TB, s Store, appID int64, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d contacts done", n), func() bool {
		return queryInt(t, s, `SELECT count(*) FROM contacts WHERE app_id = ? AND state = 'done'`, appID) == n
	})
}

type engCall struct {
	ID, Hotline, Outcome string
	Attempt, Cause       int
	Started, Ended       int64
	Answered             *int64
	Duration, Cost       int64
}

// engCalls returns a contact's calls in attempt order.
func engCalls(t testing.TB, s Store, contactID string) []engCall {
	t.Helper()
	var out []engCall
	queryRows(t, s, `SELECT c.id, c.hotline, coalesce(c.outcome, ''), c.attempt, coalesce(c.cause, 0),
		c.started_at, coalesce(c.ended_at, 0), c.answered_at, c.duration, c.cost
		FROM calls c JOIN contacts k ON k.seq = c.contact_seq WHERE k.id = ? ORDER BY c.attempt`, []any{contactID},
		func(scan func(...any) error) error {
			var c engCall
			err := scan(&c.ID, &c.Hotline, &c.Outcome, &c.Attempt, &c.Cause, &c.Started, &c.Ended, &c.Answered, &c.Duration, &c.Cost)
			out = append(out, c)
			return err
		})
	return out
}

func engContact(t testing.TB, s Store, id string) (state, outcome string, attempts int) {
	t.Helper()
	var o *string
	queryRows(t, s, `SELECT state, outcome, attempts FROM contacts WHERE id = ?`, []any{id}, func(scan func(...any) error) error {
		return scan(&state, &o, &attempts)
	})
	if o != nil {
		outcome = *o
	}
	return
}

func TestEngineCallsEveryContactAndReportsIt(t *testing.T) {
	eachBackend(t, testEngineCallsEveryContactAndReportsIt)
}

func testEngineCallsEveryContactAndReportsIt(t *testing.T, backend string) {
	rcv := newWHReceiver(t)
	app := engTenant()
	app.Webhooks = []store.FixtureWebhook{{URL: rcv.URL(), Secret: whSecret}}
	app.Campaigns = []store.FixtureCampaign{{ID: "camp", Name: "camp", ScenarioID: "sc"}}
	s, ids := fixtureStoreOn(t, backend, app)
	hooks := whStart(t, s, nil, nil)
	engStart(t, s, nil, hooks, nil)

	magic := []string{"+84900000001", "+84900000002", "+84900000003", "+84900000004", "+84900000005", "+84900000006", "+84900000007"}
	contacts := engImport(t, s, ids[0], "sc", "camp", append(magic, engPhones(33, 0)...)...)
	engWaitAllDone(t, s, ids[0], len(contacts))

	calls := queryInt(t, s, `SELECT count(*) FROM calls`)
	if calls != len(contacts) {
		t.Errorf("%d calls for %d contacts without re_call", calls, len(contacts))
	}
	rcv.waitFor(t, len(contacts)+calls)
	if bad := rcv.failures(); len(bad) > 0 {
		t.Fatalf("events that failed Standard Webhooks verification: %v", bad)
	}
	byContact := map[string]map[string]whEvent{}
	for _, ev := range rcv.all() {
		var d domain.EventData
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		if byContact[d.ContactID] == nil {
			byContact[d.ContactID] = map[string]whEvent{}
		}
		byContact[d.ContactID][ev.Type] = ev
	}
	for i, id := range contacts {
		_, outcome, _ := engContact(t, s, id)
		got := byContact[id]
		for _, typ := range []string{domain.EventCallCompleted, domain.EventContactCompleted} {
			ev, ok := got[typ]
			if !ok {
				t.Fatalf("contact %s: no %s event", id, typ)
			}
			var d domain.EventData
			json.Unmarshal(ev.Data, &d)
			var fields map[string]string
			json.Unmarshal(d.Fields, &fields)
			if d.Outcome != outcome || d.ScenarioID != "sc" || d.CampaignID == nil || *d.CampaignID != "camp" ||
				d.Attempt != 1 || d.WillRetry || d.Cause != domain.OutcomeCause[outcome] || d.Hotline == "" ||
				fields["ho_ten"] != fmt.Sprintf("Contact %d", i) || fields["so_dien_thoai"] != d.Phone || d.StartedAt == "" || d.EndedAt == "" {
				t.Errorf("contact %s %s: %s", id, typ, ev.Data)
			}
		}
		if i < len(magic) && outcome != []string{domain.OutcomeAnswered, domain.OutcomeBusy, domain.OutcomeNoAnswer, domain.OutcomeFailed,
			domain.OutcomeRejected, domain.OutcomeVoiceMail, domain.OutcomeInvalidNumber}[i] {
			t.Errorf("test number %s ended %s", magic[i], outcome)
		}
	}
}

// limitDialer records how many calls are up at once, per scenario (by
// the From pools of the test) and per hotline. Each call waits until the
// expected number are up (or a while passes), so a limit that is reached
// is seen reached whatever the machine's speed.
type limitDialer struct {
	dialer.UnlimitedTrunks
	inner  engine.Dialer
	expect int
	mu     sync.Mutex
	cond   *sync.Cond
	up     int
	maxUp  int
	lines  map[string]int
	double bool
}

func newLimitDialer(inner engine.Dialer, expect int) *limitDialer {
	d := &limitDialer{inner: inner, expect: expect, lines: map[string]int{}}
	d.cond = sync.NewCond(&d.mu)
	return d
}

func (d *limitDialer) Dial(ctx context.Context, req domain.DialRequest) domain.DialResult {
	d.mu.Lock()
	d.up++
	d.maxUp = max(d.maxUp, d.up)
	d.lines[req.From]++
	if d.lines[req.From] > 1 {
		d.double = true
	}
	d.cond.Broadcast()
	timeout := time.AfterFunc(2*time.Second, d.cond.Broadcast)
	deadline := time.Now().Add(2 * time.Second)
	for d.up < d.expect && time.Now().Before(deadline) {
		d.cond.Wait()
	}
	timeout.Stop()
	d.mu.Unlock()
	res := d.inner.Dial(ctx, req)
	d.mu.Lock()
	d.up--
	d.lines[req.From]--
	d.mu.Unlock()
	return res
}

func TestEngineConcurrencyLimits(t *testing.T) { eachBackend(t, testEngineConcurrencyLimits) }

func testEngineConcurrencyLimits(t *testing.T, backend string) {
	for _, tc := range []struct {
		name          string
		maxConcurrent int
		hotlines      int
		routing       string
	}{
		{"max_concurrent", 3, 6, domain.RoutingRoundRobin},
		{"hotlines", 10, 4, domain.RoutingRandom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := engTenant()
			app.HotlinePools[0].Numbers = nil
			for i := range tc.hotlines {
				app.HotlinePools[0].Numbers = append(app.HotlinePools[0].Numbers, fmt.Sprintf("0287300%04d", i))
			}
			app.Scenarios[0].CallConfig.MaxConcurrent = tc.maxConcurrent
			app.Scenarios[0].CallConfig.CallRouting = tc.routing
			s, ids := fixtureStoreOn(t, backend, app)
			limit := min(tc.maxConcurrent, tc.hotlines)
			d := newLimitDialer(dialer.NewSim(config.SimulatorConfig{Seed: 1, TimeScale: 5000}), limit)
			engStart(t, s, d, nil, nil)
			n := 4*limit + 1
			engImport(t, s, ids[0], "sc", "", engPhones(n, 0)...)
			engWaitAllDone(t, s, ids[0], n)
			d.mu.Lock()
			defer d.mu.Unlock()
			if d.maxUp != limit {
				t.Errorf("at most %d calls were up at once, want exactly %d", d.maxUp, limit)
			}
			if d.double {
				t.Errorf("a hotline carried two calls at once")
			}
			used := queryInt(t, s, `SELECT count(DISTINCT hotline) FROM calls`)
			if used != tc.hotlines {
				t.Errorf("%s routing used %d of %d hotlines", tc.routing, used, tc.hotlines)
			}
		})
	}
}

func TestEngineReCall(t *testing.T) { eachBackend(t, testEngineReCall) }

func testEngineReCall(t *testing.T, backend string) {
	app := engTenant()
	app.Scenarios[0].CallConfig.ReCall = domain.ReCall{Times: 2, Delay: 600, IsBusy: true, IsVoiceMail: true}
	rcv := newWHReceiver(t)
	app.Webhooks = []store.FixtureWebhook{{URL: rcv.URL(), Secret: whSecret, Events: []string{domain.EventCallCompleted}}}
	s, ids := fixtureStoreOn(t, backend, app)
	hooks := whStart(t, s, nil, nil)
	engStart(t, s, nil, hooks, nil)
	// BUSY and VOICE_MAIL retry; NO_ANSWER, FAILED, REJECTED do not here;
	// ANSWERED never does.
	want := map[string]struct {
		outcome string
		calls   int
	}{
		"+84900000001": {domain.OutcomeAnswered, 1},
		"+84900000002": {domain.OutcomeBusy, 3},
		"+84900000003": {domain.OutcomeNoAnswer, 1},
		"+84900000004": {domain.OutcomeFailed, 1},
		"+84900000005": {domain.OutcomeRejected, 1},
		"+84900000006": {domain.OutcomeVoiceMail, 3},
	}
	var phones []string
	for p := range want {
		phones = append(phones, p)
	}
	contacts := engImport(t, s, ids[0], "sc", "", phones...)
	engWaitAllDone(t, s, ids[0], len(contacts))
	totalCalls := 0
	for i, id := range contacts {
		w := want[phones[i]]
		state, outcome, attempts := engContact(t, s, id)
		calls := engCalls(t, s, id)
		totalCalls += len(calls)
		if state != domain.ContactDone || outcome != w.outcome || attempts != w.calls || len(calls) != w.calls {
			t.Errorf("%s: %s %s after %d attempts (%d calls), want %s after %d", phones[i], state, outcome, attempts, len(calls), w.outcome, w.calls)
			continue
		}
		for k := 1; k < len(calls); k++ {
			// The scaled delay (600 s / 5000 = 120 ms) separates the attempts.
			if gap := calls[k].Started - calls[k-1].Ended; gap < 120-1 {
				t.Errorf("%s: attempt %d started %d ms after attempt %d ended, want >= 120", phones[i], k+1, gap, k)
			}
		}
	}
	// will_retry is true on every call.completed but the last of a contact.
	rcv.waitFor(t, totalCalls)
	retrying := map[string]int{}
	for _, ev := range rcv.all() {
		var d domain.EventData
		json.Unmarshal(ev.Data, &d)
		if ev.Type != domain.EventCallCompleted {
			t.Errorf("endpoint subscribed to call.completed only got %s", ev.Type)
		}
		if d.WillRetry {
			retrying[d.Phone]++
			if d.NextAttemptAt == nil {
				t.Errorf("will_retry without next_attempt_at: %s", ev.Data)
			}
		}
	}
	for p, w := range want {
		if retrying[p] != w.calls-1 {
			t.Errorf("%s: will_retry on %d events, want %d", p, retrying[p], w.calls-1)
		}
	}
}

// engClock is an engine clock tests move by hand.
type engClock struct{ ns atomic.Int64 }

func (c *engClock) Now() time.Time  { return time.Unix(0, c.ns.Load()) }
func (c *engClock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }

func TestEngineCallWindow(t *testing.T) { eachBackend(t, testEngineCallWindow) }

func testEngineCallWindow(t *testing.T, backend string) {
	app := engTenant()
	cc := &app.Scenarios[0].CallConfig
	cc.CallWindow = domain.CallWindow{Start: "08:00", End: "20:00", Timezone: "Asia/Ho_Chi_Minh", Days: []string{"MON", "TUE", "WED", "THU", "FRI"}}
	s, ids := fixtureStoreOn(t, backend, app)
	hcm, _ := time.LoadLocation("Asia/Ho_Chi_Minh")
	clock := &engClock{}
	// Saturday 10:00 in Ho Chi Minh City (after the contacts are imported,
	// so they are due): inside the hours, not the days.
	clock.Set(testDate(2026, 11, 28, 10, 0, 0, 0, hcm))
	e := engStart(t, s, nil, nil, func(p *engine.Parts) { p.Now = clock.Now })
	contacts := engImport(t, s, ids[0], "sc", "", engPhones(5, 0)...)
	e.Notify(ids[0])
	hold := func(when string) {
		// Several scheduler passes (it polls every 20 ms) must leave them queued.
		for range 5 {
			e.Notify(ids[0])
			time.Sleep(30 * time.Millisecond)
		}
		if n := queryInt(t, s, `SELECT count(*) FROM calls`); n != 0 {
			t.Fatalf("%s: %d calls placed outside the call window", when, n)
		}
	}
	hold("Saturday")
	clock.Set(testDate(2026, 11, 30, 7, 59, 0, 0, hcm)) // Monday, before the window
	hold("Monday 07:59")
	clock.Set(testDate(2026, 11, 30, 20, 0, 0, 0, hcm)) // Monday, the window just closed
	hold("Monday 20:00")
	clock.Set(testDate(2026, 11, 30, 8, 0, 0, 0, hcm)) // Monday, open
	e.Notify(ids[0])
	engWaitAllDone(t, s, ids[0], len(contacts))
	for _, id := range contacts {
		if calls := engCalls(t, s, id); len(calls) != 1 || store.FromMillis(calls[0].Started).In(hcm).Hour() != 8 {
			t.Errorf("contact %s calls %+v", id, calls)
		}
	}
}

func TestEngineWalletChargesAndPauses(t *testing.T) { eachBackend(t, testEngineWalletChargesAndPauses) }

func testEngineWalletChargesAndPauses(t *testing.T, backend string) {
	app := engTenant()
	prepaid := true
	// Room for exactly three answered 30 s calls at 1000 each.
	app.Wallet = &store.FixtureWallet{Prepaid: &prepaid, Balance: 3000, PricePerCall: 1000, PricePerMinute: 800}
	app.Scenarios[0].CallConfig.MaxConcurrent = 1
	rcv := newWHReceiver(t)
	app.Webhooks = []store.FixtureWebhook{{URL: rcv.URL(), Secret: whSecret}}
	s, ids := fixtureStoreOn(t, backend, app)
	appID := ids[0]
	hooks := whStart(t, s, nil, nil)
	sim := dialer.NewSim(config.SimulatorConfig{Seed: 1, TimeScale: 5000, Rules: []config.SimulatorRule{
		{Suffix: "1", Outcome: domain.OutcomeAnswered, TalkTime: config.Duration{Duration: 30 * time.Second}},  // 1 started minute: 800 -> 1000 minimum
		{Suffix: "2", Outcome: domain.OutcomeAnswered, TalkTime: config.Duration{Duration: 150 * time.Second}}, // 3 started minutes: 2400
		{Suffix: "3", Outcome: domain.OutcomeBusy},                                                             // free
		{Suffix: "4", Outcome: domain.OutcomeVoiceMail, TalkTime: config.Duration{Duration: 61 * time.Second}}, // connected: 2 minutes, 1600
	}})
	e := engStart(t, s, sim, hooks, nil)
	balance := func() int64 {
		w, err := s.Wallet(context.Background(), appID)
		if err != nil {
			t.Fatal(err)
		}
		return w.Balance
	}
	// Import checks 1000 per contact, so three fit.
	first := engImport(t, s, appID, "sc", "", "+84913000001", "+84913000011", "+84913000003")
	engWaitAllDone(t, s, appID, 3)
	if b := balance(); b != 1000 {
		t.Fatalf("balance after two 1-minute calls and a busy one: %d, want 1000", b)
	}
	for i, want := range []int64{1000, 1000, 0} {
		if c := engCalls(t, s, first[i]); c[0].Cost != want {
			t.Errorf("call %d cost %d, want %d", i, c[0].Cost, want)
		}
	}

	// The 150 s call costs 2400 and takes the balance below zero: a call up
	// is never cut for money. Nothing starts after it.
	long := engImport(t, s, appID, "sc", "", "+84913000002")
	engWaitAllDone(t, s, appID, 4)
	if b := balance(); b != -1400 {
		t.Fatalf("balance after a 2400 call: %d, want -1400", b)
	}
	if c := engCalls(t, s, long[0]); c[0].Cost != 2400 || c[0].Duration != 150 {
		t.Errorf("150 s call: %+v", c[0])
	}
	// New contacts cannot be imported (1105), but ones queued before the
	// money ran out wait: put one in through the store as if imported then.
	if _, err := s.Import(context.Background(), domain.ImportRequest{AppID: appID, ScenarioID: "sc",
		Contacts: []domain.NewContact{{ID: domain.NewV7(), Fields: []byte(`{}`), Phone: "+84913000004"}}}, time.Now()); err != domain.ErrWalletEmpty {
		t.Fatalf("import with a negative balance: %v, want errWalletEmpty", err)
	}
	waiting := domain.NewV7()
	storeExec(t, s, `INSERT INTO contacts (id, app_id, scenario_id, import_id, phone, fields, unique_phone, next_attempt_at, created_at, updated_at)
		VALUES (?, ?, 'sc', 'test', '+84913000004', '{}', 0, 0, 0, 0)`, waiting, appID)
	for range 5 {
		e.Notify(appID)
		time.Sleep(30 * time.Millisecond)
	}
	if state, _, _ := engContact(t, s, waiting); state != domain.ContactQueued {
		t.Fatalf("contact dialled with an empty wallet: %s", state)
	}
	// Top up to just under the least a call can cost: still paused.
	topUp := func(v int64) {
		storeExec(t, s, `UPDATE wallets SET balance = ? WHERE app_id = ?`, v, appID)
		e.Notify(appID)
	}
	topUp(999)
	for range 5 {
		e.Notify(appID)
		time.Sleep(30 * time.Millisecond)
	}
	if state, _, _ := engContact(t, s, waiting); state != domain.ContactQueued {
		t.Fatalf("contact dialled with 999 left of a 1000 minimum: %s", state)
	}
	topUp(5000)
	engWaitAllDone(t, s, appID, 5)
	if b := balance(); b != 5000-1600 {
		t.Errorf("balance after a 61 s voice mail: %d, want %d", b, 5000-1600)
	}
	rcv.waitFor(t, 10)
	var total int64
	for _, ev := range rcv.all() {
		var d domain.EventData
		json.Unmarshal(ev.Data, &d)
		if ev.Type == domain.EventContactCompleted {
			total += *d.TotalCost
		}
	}
	if total != 1000+1000+2400+1600 {
		t.Errorf("contact.completed total_cost adds up to %d", total)
	}
}

func TestEngineSettlesCallsACrashLeftUp(t *testing.T) {
	rcv := newWHReceiver(t)
	app := engTenant()
	prepaid := true
	app.Wallet = &store.FixtureWallet{Prepaid: &prepaid, Balance: 100000, PricePerCall: 1000, PricePerMinute: 800}
	app.Scenarios[0].CallConfig.ReCall = domain.ReCall{Times: 1, IsBusy: true}
	app.Webhooks = []store.FixtureWebhook{{URL: rcv.URL(), Secret: whSecret}}
	path := filepath.Join(t.TempDir(), "crash.db")

	// The run that crashes: calls claimed (contacts dialing, calls up) and
	// an event queued, then the process dies without settling anything.
	s1, ids := fixtureStoreAt(t, path, app)
	appID := ids[0]
	phones := []string{"+84900000001", "+84900000002", "+84900000003"}
	contacts := engImport(t, s1, appID, "sc", "", phones...)
	due, err := s1.DueContacts(context.Background(), appID, "sc", time.Now(), 10)
	if err != nil || len(due) != 3 {
		t.Fatalf("due: %v %v", due, err)
	}
	var claims []domain.CallClaim
	for i, c := range due {
		claims = append(claims, domain.CallClaim{CallID: domain.NewV7(), AppID: appID, ScenarioID: "sc", Contact: c,
			Hotline: app.HotlinePools[0].Numbers[i], Start: time.Now()})
	}
	if taken, err := s1.ClaimCalls(context.Background(), claims, time.Now); err != nil || len(taken) != 3 {
		t.Fatalf("claim: %d %v", len(taken), err)
	}
	whEnqueue(t, s1, appID, 1)
	s1.Close()

	s2, _ := fixtureStoreAt(t, path, app)
	hooks := whStart(t, s2, nil, nil)
	engStart(t, s2, nil, hooks, nil)
	engWaitAllDone(t, s2, appID, 3)
	if n := queryInt(t, s2, `SELECT count(*) FROM calls WHERE state = 'dialing'`); n != 0 {
		t.Fatalf("%d calls still dialing", n)
	}
	var wantCost int64
	for i, id := range contacts {
		calls := engCalls(t, s2, id)
		if len(calls) < 2 || calls[0].Outcome != domain.OutcomeCanceled || calls[0].Cause != 487 || calls[0].Cost != 0 {
			t.Fatalf("%s: the interrupted call was not settled as CANCELED: %+v", phones[i], calls)
		}
		// The interrupted call does not use up the re_call: BUSY still gets
		// its one retry.
		want := map[string]int{"+84900000001": 2, "+84900000002": 3, "+84900000003": 2}[phones[i]]
		if len(calls) != want {
			t.Errorf("%s: %d calls, want %d: %+v", phones[i], len(calls), want, calls)
		}
		for _, c := range calls {
			wantCost += c.Cost
		}
	}
	if w, _ := s2.Wallet(context.Background(), appID); w.Balance != 100000-wantCost || wantCost != 1000 {
		t.Errorf("balance %d after calls costing %d; want one 30 s answered call (1000) charged once", w.Balance, wantCost)
	}
	// Every event, the one queued before the crash and the CANCELED calls'
	// included, is delivered: 1 + 7 call.completed + 3 contact.completed.
	rcv.waitFor(t, 11)
	canceled := 0
	for _, ev := range rcv.all() {
		var d domain.EventData
		json.Unmarshal(ev.Data, &d)
		if d.Outcome == domain.OutcomeCanceled {
			canceled++
			if !d.WillRetry || ev.Type != domain.EventCallCompleted {
				t.Errorf("interrupted call event: %s %s", ev.Type, ev.Data)
			}
		}
	}
	if canceled != 3 {
		t.Errorf("%d CANCELED events, want 3", canceled)
	}
}

func TestEngineSettlesACallOnce(t *testing.T) { eachBackend(t, testEngineSettlesACallOnce) }

func testEngineSettlesACallOnce(t *testing.T, backend string) {
	app := engTenant()
	prepaid := true
	app.Wallet = &store.FixtureWallet{Prepaid: &prepaid, Balance: 10000, PricePerCall: 1000}
	s, ids := fixtureStoreOn(t, backend, app)
	engImport(t, s, ids[0], "sc", "", "+84900000001")
	due, _ := s.DueContacts(context.Background(), ids[0], "sc", time.Now(), 1)
	claim := domain.CallClaim{CallID: domain.NewV7(), AppID: ids[0], ScenarioID: "sc", Contact: due[0], Hotline: "02873000001", Start: time.Now()}
	if _, err := s.ClaimCalls(context.Background(), []domain.CallClaim{claim}, time.Now); err != nil {
		t.Fatal(err)
	}
	answered := time.Now()
	end := domain.CallEnd{CallID: claim.CallID, Now: time.Now(), RetryAt: time.Now(), FirstTry: time.Now(),
		Result: domain.DialResult{Outcome: domain.OutcomeAnswered, Cause: 200, AnsweredAt: &answered, EndedAt: answered, Talk: 10 * time.Second}}
	for range 2 {
		if err := s.EndCall(context.Background(), end); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.SettleInterrupted(context.Background(), time.Now(), time.Now()); err != nil || n != 0 {
		t.Fatalf("settled %d ended calls (%v)", n, err)
	}
	if w, _ := s.Wallet(context.Background(), ids[0]); w.Balance != 9000 {
		t.Errorf("balance %d, want 9000: one call charged once", w.Balance)
	}
}

// slowDialer holds every call until its context ends; once then is set
// (while the engine is stopped) it places them through then instead.
type slowDialer struct {
	dialer.UnlimitedTrunks
	up   atomic.Int64
	then engine.Dialer
}

func (d *slowDialer) Dial(ctx context.Context, req domain.DialRequest) domain.DialResult {
	if d.then != nil {
		return d.then.Dial(ctx, req)
	}
	d.up.Add(1)
	<-ctx.Done()
	return domain.DialResult{Outcome: domain.OutcomeCanceled, Cause: domain.OutcomeCause[domain.OutcomeCanceled], EndedAt: time.Now()}
}

// walletReads is a store counting the scheduler's rounds and the wallet
// reads they make.
type walletReads struct {
	Store
	rounds, wallets atomic.Int64
}

func (s *walletReads) ActiveScenarios(ctx context.Context) ([]*domain.Scenario, error) {
	s.rounds.Add(1)
	return s.Store.ActiveScenarios(ctx)
}

func (s *walletReads) Wallet(ctx context.Context, appID int64) (domain.Wallet, error) {
	s.wallets.Add(1)
	return s.Store.Wallet(ctx, appID)
}

// While every hotline of the pool is busy, the scheduler's rounds read no
// wallet: under an import's load it runs one every few milliseconds
// (docs/benchmarks.md#the-1-contact-request-a-commit-cycle-and-a-burst).
func TestEngineBusyPoolReadsNoWallet(t *testing.T) { eachBackend(t, testEngineBusyPoolReadsNoWallet) }

func testEngineBusyPoolReadsNoWallet(t *testing.T, backend string) {
	s, ids := fixtureStoreOn(t, backend, engTenant())
	counted := &walletReads{Store: s}
	slow := &slowDialer{}
	engStart(t, counted, slow, nil, nil)
	engImport(t, s, ids[0], "sc", "", engPhones(5, 0)...)
	waitFor(t, "three calls up", func() bool { return slow.up.Load() == 3 })
	if counted.wallets.Load() == 0 {
		t.Fatal("the round that dialled read no wallet")
	}
	// Every hotline is taken before its call is dialled: no round from
	// now on finds one idle.
	wallets, rounds := counted.wallets.Load(), counted.rounds.Load()
	for i := range 5 {
		engImport(t, s, ids[0], "sc", "", engPhones(1, 100+i)...) // wakes the scheduler
		waitFor(t, "another round", func() bool { return counted.rounds.Load() > rounds })
		rounds = counted.rounds.Load()
	}
	if n := counted.wallets.Load() - wallets; n != 0 {
		t.Errorf("%d wallet reads in rounds with every hotline busy, want none", n)
	}
}

func TestEngineStopAndStartAgain(t *testing.T) { eachBackend(t, testEngineStopAndStartAgain) }

func testEngineStopAndStartAgain(t *testing.T, backend string) {
	app := engTenant()
	app.Scenarios[0].CallConfig.ReCall = domain.ReCall{Times: 0}
	s, ids := fixtureStoreOn(t, backend, app)
	slow := &slowDialer{}
	e := engStart(t, s, slow, nil, nil)
	contacts := engImport(t, s, ids[0], "sc", "", engPhones(5, 0)...)
	waitFor(t, "three calls up", func() bool { return slow.up.Load() == 3 })
	e.Stop()
	// Stopping cut the calls: settled, not charged, contacts queued again.
	if n := queryInt(t, s, `SELECT count(*) FROM calls WHERE state = 'dialing' OR outcome <> 'CANCELED'`); n != 0 {
		t.Fatalf("%d calls not settled as CANCELED by Stop", n)
	}
	if n := queryInt(t, s, `SELECT count(*) FROM contacts WHERE state = 'queued'`); n != 5 {
		t.Fatalf("%d contacts queued after Stop, want 5", n)
	}
	slow.then = dialer.NewSim(config.SimulatorConfig{Seed: 1, TimeScale: 5000})
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	engWaitAllDone(t, s, ids[0], len(contacts))
	if n := queryInt(t, s, `SELECT count(*) FROM calls WHERE outcome <> 'CANCELED'`); n != 5 {
		t.Errorf("%d real calls for 5 contacts with no re_call, want 5", n)
	}
}

func TestEngineWaitsForInactiveScenariosAndPausedCampaigns(t *testing.T) {
	eachBackend(t, testEngineWaitsForInactiveScenariosAndPausedCampaigns)
}

func testEngineWaitsForInactiveScenariosAndPausedCampaigns(t *testing.T, backend string) {
	app := engTenant()
	app.Scenarios[0].Status = domain.StatusReviewing
	second := *app.Scenarios[0]
	second.ID, second.Status = "sc2", domain.StatusActive
	app.Scenarios = append(app.Scenarios, &second)
	app.Campaigns = []store.FixtureCampaign{{ID: "camp", ScenarioID: "sc2"}}
	s, ids := fixtureStoreOn(t, backend, app)
	appID := ids[0]
	exec := func(q string, args ...any) {
		t.Helper()
		storeExec(t, s, q, args...)
	}
	exec(`UPDATE campaigns SET paused = 1 WHERE id = 'camp'`)
	e := engStart(t, s, nil, nil, nil)
	engImport(t, s, appID, "sc", "", engPhones(3, 0)...)
	engImport(t, s, appID, "sc2", "camp", engPhones(3, 100)...)
	direct := engImport(t, s, appID, "sc2", "", engPhones(2, 200)...)
	engWaitAllDone(t, s, appID, len(direct))
	for range 5 {
		e.Notify(appID)
		time.Sleep(30 * time.Millisecond)
	}
	if n := queryInt(t, s, `SELECT count(*) FROM calls`); n != 2 {
		t.Fatalf("%d calls: only the 2 contacts outside the paused campaign of the ACTIVE scenario may be dialled", n)
	}
	exec(`UPDATE campaigns SET paused = 0 WHERE id = 'camp'`)
	e.Notify(appID)
	engWaitAllDone(t, s, appID, 5)
	exec(`UPDATE scenarios SET status = 'ACTIVE' WHERE id = 'sc'`)
	e.Notify(appID)
	engWaitAllDone(t, s, appID, 8)
}

func TestEngineMaxDurationBeforeDialAndPostpaid(t *testing.T) {
	eachBackend(t, testEngineMaxDurationBeforeDialAndPostpaid)
}

func testEngineMaxDurationBeforeDialAndPostpaid(t *testing.T, backend string) {
	app := engTenant()
	prepaid := false
	app.Wallet = &store.FixtureWallet{Prepaid: &prepaid, Balance: 0, PricePerCall: 500, PricePerMinute: 800}
	app.Scenarios[0].CallConfig.MaxDuration = 45
	s, ids := fixtureStoreOn(t, backend, app)
	faults := sandbox.NewFaults(s)
	faults.Add(&sandbox.FaultRule{Kind: sandbox.FaultDial, Phone: "+84900000001", Outcome: domain.OutcomeFailed, Probability: 1})
	engStart(t, s, nil, nil, func(p *engine.Parts) { p.ForceDial = faults.BeforeDial })
	// +84900000008 would talk an hour; +84900000001 would answer.
	contacts := engImport(t, s, ids[0], "sc", "", "+84900000008", "+84900000001")
	engWaitAllDone(t, s, ids[0], 2)
	long := engCalls(t, s, contacts[0])[0]
	if long.Outcome != domain.OutcomeAnswered || long.Duration != 45 || long.Cost != 800 {
		t.Errorf("call cut at max_duration 45: %+v, want ANSWERED, 45 s, cost 800 (one started minute)", long)
	}
	if forced := engCalls(t, s, contacts[1])[0]; forced.Outcome != domain.OutcomeFailed || forced.Cost != 0 {
		t.Errorf("a dial rule forcing FAILED: %+v", forced)
	}
	if w, _ := s.Wallet(context.Background(), ids[0]); w.Balance != 0 {
		t.Errorf("a postpaid balance moved to %d", w.Balance)
	}
}

// engRunBinary serves the config with the real binary, whose public API
// is at url.
func engRunBinary(t *testing.T, bin, config, url string) *binaryProc {
	t.Helper()
	return runBinary(t, bin, []string{"serve", "--config", config}, nil, url+"/api/v1/public-api/scenarios")
}

// TestEngineSurvivesSIGKILL kills the real binary in the middle of a busy
// run: after a restart every contact finishes, no call is charged twice,
// and every event reaches the receiver at least once, correctly signed.
func TestEngineSurvivesSIGKILL(t *testing.T) {
	bin := dialboxBinary(t)
	dir := t.TempDir()
	rcv := newWHReceiver(t)
	const balance = 100_000_000
	config, url, db := busyTenant{apiKey: "kill-key", apiSecret: "kill-secret", balance: balance, hotlines: 10,
		reCallDelay: 60, webhook: rcv.URL(), timeScale: 300,
		retrySchedule: `["0s", "50ms", "100ms", "200ms", "500ms", "1s", "1s", "1s"]`}.write(t, dir)
	first := engRunBinary(t, bin, config, url)

	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"apiKey": "kill-key"}).SignedString([]byte("kill-secret"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 150
	for batch := range 3 {
		var contacts []string
		for i := range n / 3 {
			contacts = append(contacts, fmt.Sprintf(`{"phone_number":"09140%05d","ho_ten":"K %d"}`, batch*1000+i, i))
		}
		req, _ := http.NewRequest("POST", url+"/api/v1/public-api/scenarios/sc/calls",
			strings.NewReader(`{"contacts":[`+strings.Join(contacts, ",")+`]}`))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"status":1`) {
			t.Fatalf("import: %d %s", resp.StatusCode, body)
		}
	}
	waitFor(t, "40 events delivered before the kill", func() bool { return rcv.count() >= 40 })
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.exited

	s, err := store.OpenSQLite(db, sqliteMigrations(), store.NewMetrics(false), recordings.Files{})
	if err != nil {
		t.Fatal(err)
	}
	opened(t, s, db)
	defer s.Close()
	up := queryInt(t, s, `SELECT count(*) FROM calls WHERE state = 'dialing'`)
	done := queryInt(t, s, `SELECT count(*) FROM contacts WHERE state = 'done'`)
	t.Logf("killed with %d calls up, %d of %d contacts done, %d events received", up, done, n, rcv.count())
	if up == 0 || done == n {
		t.Fatalf("the kill did not land mid-run (%d calls up, %d done)", up, done)
	}

	second := engRunBinary(t, bin, config, url)
	waitFor(t, "every contact done and every message delivered", func() bool {
		return queryInt(t, s, `SELECT count(*) FROM contacts WHERE state = 'done'`) == n &&
			queryInt(t, s, `SELECT count(*) FROM webhook_messages WHERE state <> 'delivered'`) == 0
	})
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-second.exited

	if n := queryInt(t, s, `SELECT count(*) FROM calls WHERE state = 'dialing'`); n != 0 {
		t.Errorf("%d calls left dialing", n)
	}
	if got := queryInt(t, s, `SELECT count(*) FROM calls WHERE outcome = 'CANCELED'`); got < up {
		t.Errorf("%d calls settled as CANCELED, want at least the %d the kill interrupted", got, up)
	}
	var spent int64
	if err := sqliteDB(t, s).QueryRow(`SELECT coalesce(sum(cost), 0) FROM calls`).Scan(&spent); err != nil {
		t.Fatal(err)
	}
	app, err := s.AppByKey(context.Background(), "kill-key")
	if err != nil {
		t.Fatal(err)
	}
	if w, _ := s.Wallet(context.Background(), app.ID); w.Balance != balance-spent {
		t.Errorf("balance %d, want %d - %d charged for the recorded calls", w.Balance, balance, spent)
	}
	rows, err := sqliteDB(t, s).Query(`SELECT id FROM webhook_messages`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	messages := 0
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for rows.Next() {
		var id string
		rows.Scan(&id)
		messages++
		if _, ok := rcv.events[id]; !ok {
			t.Errorf("message %s never reached the receiver", id)
		}
	}
	calls := queryInt(t, s, `SELECT count(*) FROM calls`)
	if messages != calls+n {
		t.Errorf("%d messages for %d calls and %d contacts", messages, calls, n)
	}
	if len(rcv.bad) > 0 {
		t.Errorf("deliveries that failed verification: %v", rcv.bad)
	}
	t.Logf("%d calls, %d messages, every one delivered", calls, messages)
}

// BenchmarkEngineCalls measures simulated calls per second through the
// scheduler (claim, dial, settle with its outbox row) with an unlimited
// pool, next to a bare net/http request loop on the same machine.
func BenchmarkEngineCalls(b *testing.B) {
	app := engTenant()
	app.HotlinePools[0].Numbers = nil
	for i := range 1000 {
		app.HotlinePools[0].Numbers = append(app.HotlinePools[0].Numbers, fmt.Sprintf("0287%07d", i))
	}
	app.Scenarios[0].CallConfig.MaxConcurrent = 1000
	app.Webhooks = []store.FixtureWebhook{{URL: "http://127.0.0.1:9/unused", Secret: whSecret}}
	s, ids := fixtureStore(b, app)
	for start := 0; start < b.N; start += 5000 {
		engImport(b, s, ids[0], "sc", "", engPhones(min(5000, b.N-start), start)...)
	}
	b.ResetTimer()
	begin := time.Now()
	engStart(b, s, dialer.NewSim(config.SimulatorConfig{Seed: 1, TimeScale: 1e12}), nil, nil)
	// Polled slowly: the count scans the table and must not steal the
	// engine's CPU.
	for queryInt(b, s, `SELECT count(*) FROM contacts WHERE state = 'done'`) < b.N {
		time.Sleep(20 * time.Millisecond)
	}
	elapsed := time.Since(begin)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	b.ReportMetric(whBareHTTP(b, max(b.N, 2000), 8, []byte(`{}`)), "bare_http_req/s")
}
