package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"dialbox/internal/destinations"
)

// Engine dials queued contacts (docs/design.md#the-call-engine). One scheduler goroutine decides
// what to dial; each call runs in its own goroutine and settles itself in
// one commit (call record, wallet, contact, webhook events).
//
// Limits, all checked by the scheduler before a call starts: the scenario
// is ACTIVE, its campaign (if any) not paused, now is inside its
// call_window, fewer than max_concurrent of its calls are up, a hotline of
// its pool is enabled and free (one call per hotline), and a prepaid wallet
// can pay the least an answered call costs for this call on top of every
// call already up.
type Engine struct {
	store  engineStore
	dialer Dialer
	log    *slog.Logger
	// pollInterval bounds how long the scheduler sleeps when nothing wakes it.
	pollInterval time.Duration
	// clock is the engine's clock (call windows, retry times); nil: time.Now.
	clock func() time.Time
	// recordings is where scenarios with call_config.record keep their
	// calls' audio, recordingBase what their recording_url starts with
	// (docs/voicebot.md#recordings); no folder: nothing is recorded.
	recordings    RecordingFiles
	recordingBase string

	// timeScale shrinks re_call delays like simulated calls; nil: 1.
	timeScale func() float64
	// webhooks is told when events are queued; nil: they stay queued.
	webhooks *Webhooks
	// faults may force the outcome of a call (the admin API's dial rules);
	// nil: none.
	faults *Faults
	// destinations is the policy of the numbers that may be dialled at all
	// (engine_screen.go).
	destinations *destinations.Policy

	wake chan struct{}

	mu       sync.Mutex
	running  bool
	stop     chan struct{}
	loopDone chan struct{}
	cancel   context.CancelFunc
	calls    sync.WaitGroup
	active   map[scenarioKey]int // calls up per scenario
	appCalls map[int64]int       // calls up per application
	busy     map[hotlineKey]bool
	cursor   map[poolKey]int
	windows  map[string]*callWindow
	paused   map[int64]bool // applications whose wallet cannot pay, for logging once
	rng      *rand.Rand
	rates    callRates // calls ended in the last minute, for the console

	// adUp counts advertising calls up per tenant and number, for the
	// daily limit (engine_adcalls.go).
	adUp map[phoneKey]int
}

type scenarioKey struct {
	app int64
	id  string
}

type hotlineKey struct {
	app    int64
	number string
}

type poolKey struct {
	app int64
	key string
}

// engineStore is what the engine asks of the store: the scheduler's
// reads and claims, a call's end, the calling rules' reads and holds, and
// an opt-out heard during a call (store_interface.go says what each does).
type engineStore interface {
	activeScenarios(ctx context.Context) ([]*Scenario, error)
	enabledHotlines(ctx context.Context, appID int64, poolKey string) (poolLines, error)
	dueContacts(ctx context.Context, appID int64, scenarioID string, now time.Time, limit int) ([]dueContact, error)
	nextDue(ctx context.Context, appID int64, scenarioID string, now time.Time) (time.Time, bool, error)
	claimCalls(ctx context.Context, claims []callClaim, now func() time.Time) ([]callClaim, error)
	endCall(ctx context.Context, e callEnd) error
	settleInterrupted(ctx context.Context, now, firstTry time.Time) (int, error)
	takeOverCalls(ctx context.Context, now, firstTry time.Time) (int, error)

	Wallet(ctx context.Context, appID int64) (Wallet, error)
	AdSettings(ctx context.Context, appID int64) (AdSettings, error)
	dncListings(ctx context.Context, appID int64, phones []string, national bool) (map[string]string, error)
	appDestinations(ctx context.Context, appID int64) (destinations.Rules, error)
	holdContacts(ctx context.Context, holds []callHold, now, firstTry time.Time) error
	answeredAdCalls(ctx context.Context, appID int64, phones []string, since time.Time) (map[string][]time.Time, error)
	delayContacts(ctx context.Context, delays []callDelay, now time.Time) error

	AddDNC(ctx context.Context, list int64, phones []string, now time.Time) (int, error)
}

// EngineParts is everything an engine is built with.
type EngineParts struct {
	Store  engineStore
	Dialer Dialer
	Log    *slog.Logger
	Config EngineConfig
	// Destinations is the policy of the numbers that may be dialled at all.
	Destinations *destinations.Policy
	// Webhooks is told of the events the engine queues; Faults may force
	// outcomes; TimeScale is the dialer's clock speed, which re_call delays
	// follow; Now is the engine's clock. Each may be nil.
	Webhooks  *Webhooks
	Faults    *Faults
	TimeScale func() float64
	Now       func() time.Time
	// Recordings and RecordingBase: see Engine.recordings.
	Recordings    RecordingFiles
	RecordingBase string
}

// NewEngine makes an engine of p; it dials once started.
func NewEngine(p EngineParts) *Engine {
	return &Engine{store: p.Store, dialer: p.Dialer, log: p.Log, pollInterval: p.Config.PollInterval.Duration,
		clock: p.Now, recordings: p.Recordings, recordingBase: p.RecordingBase, timeScale: p.TimeScale,
		webhooks: p.Webhooks, faults: p.Faults, destinations: p.Destinations, wake: make(chan struct{}, 1)}
}

func (e *Engine) now() time.Time {
	if e.clock != nil {
		return e.clock()
	}
	return time.Now()
}

func (e *Engine) scale() float64 {
	if e.timeScale != nil {
		if s := e.timeScale(); s > 0 {
			return s
		}
	}
	return 1
}

// Notify wakes the scheduler: contacts were added, a campaign resumed, a
// wallet topped up. It never blocks, and is harmless while stopped.
func (e *Engine) Notify(appID int64) {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Running says whether the engine is between Start and Stop (/readyz).
func (e *Engine) Running() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.running
}

// Start settles the calls a previous run left up, then starts dialling.
func (e *Engine) Start(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.running {
		return errors.New("engine already running")
	}
	now := e.now()
	n, err := e.store.settleInterrupted(ctx, now, e.webhooks.firstTry(time.Now()))
	if err != nil {
		return fmt.Errorf("settling interrupted calls: %w", err)
	}
	if n > 0 {
		e.log.Info("settled calls interrupted by the last stop; their contacts are queued again", "calls", n)
		e.webhooks.Notify()
	}
	e.running = true
	e.stop, e.loopDone = make(chan struct{}), make(chan struct{})
	e.active, e.appCalls = map[scenarioKey]int{}, map[int64]int{}
	e.busy, e.cursor = map[hotlineKey]bool{}, map[poolKey]int{}
	e.windows, e.paused = map[string]*callWindow{}, map[int64]bool{}
	e.adUp = map[phoneKey]int{}
	e.rng = rand.New(rand.NewPCG(uint64(now.UnixNano()), 0))
	callCtx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	go e.loop(callCtx, e.stop, e.loopDone)
	return nil
}

// Stop ends dialling: calls up are cut (recorded CANCELED and queued
// again, not charged; a real call already answered stays ANSWERED) and
// Stop returns once every one is settled.
func (e *Engine) Stop() {
	e.mu.Lock()
	if !e.running {
		e.mu.Unlock()
		return
	}
	e.running = false
	close(e.stop)
	e.cancel()
	done := e.loopDone
	e.mu.Unlock()
	<-done
	e.calls.Wait()
}

func (e *Engine) loop(ctx context.Context, stop, done chan struct{}) {
	defer close(done)
	timer := time.NewTimer(0)
	defer timer.Stop()
	var last, lastTakeover time.Time
	for {
		select {
		case <-stop:
			return
		case <-e.wake:
			// Under load every import wakes the scheduler, thousands of
			// times a second; one tick per wakeGap serves them all.
			if wait := wakeGap - time.Since(last); wait > 0 {
				select {
				case <-stop:
					return
				case <-time.After(wait):
				}
			}
		case <-timer.C:
		}
		last = time.Now()
		next := e.tick(ctx)
		if time.Since(lastTakeover) >= takeoverEvery {
			lastTakeover = time.Now()
			e.takeOver(ctx)
		}
		d := min(max(next.Sub(e.now()), time.Millisecond), e.pollInterval)
		timer.Reset(d)
	}
}

// takeoverEvery is how often a running engine settles the calls of nodes
// that died (Store.takeOverCalls; at least every poll_interval).
const takeoverEvery = 5 * time.Second

// takeOver settles the calls of dead nodes, on a store several share.
func (e *Engine) takeOver(ctx context.Context) {
	n, err := e.store.takeOverCalls(ctx, e.now(), e.webhooks.firstTry(time.Now()))
	if err != nil {
		if ctx.Err() == nil {
			e.log.Error("engine: settling the calls of nodes whose lease ran out", "err", err)
		}
		return
	}
	if n > 0 {
		e.log.Warn("engine: settled calls of a node whose lease ran out; their contacts are queued again", "calls", n)
		e.webhooks.Notify()
	}
}

// wakeGap is the least time between two ticks that Notify asked for: a
// contact waits at most this long for its first dial to be considered.
const wakeGap = 2 * time.Millisecond

// budget is how many more calls a tenant's wallet lets start, and the
// wallet it was read from (for dialHold).
type budget struct {
	left      int
	unlimited bool
	wallet    Wallet
}

// tick starts every call the limits allow now and returns when the
// scheduler next has something to do (the earliest retry or call window
// opening it knows of).
func (e *Engine) tick(ctx context.Context) time.Time {
	now := e.now()
	next := now.Add(e.pollInterval)
	later := func(t time.Time) {
		if t.Before(next) {
			next = t
		}
	}
	logErr := func(msg string, args ...any) {
		if ctx.Err() == nil { // not worth a line: Stop cancelled the read
			e.log.Error(msg, args...)
		}
	}
	scenarios, err := e.store.activeScenarios(ctx)
	if err != nil {
		logErr("engine: listing scenarios", "err", err)
		return next
	}
	budgets := map[int64]*budget{}
	hotlines := map[poolKey]poolLines{}
	var claims []callClaim
	var holds []callHold
	var delays []callDelay
	for _, sc := range scenarios {
		cc := sc.CallConfig
		e.mu.Lock()
		free := cc.MaxConcurrent - e.active[scenarioKey{sc.AppID, sc.ID}]
		e.mu.Unlock()
		if free <= 0 {
			continue
		}
		w, werr := e.window(cc.CallWindow)
		b, ok := budgets[sc.AppID]
		if !ok {
			if b, err = e.budget(ctx, sc.AppID, now); err != nil {
				logErr("engine: reading wallet", "app", sc.AppID, "err", err)
				continue
			}
			budgets[sc.AppID] = b
		}
		pk := poolKey{sc.AppID, cc.PoolHotlineKey}
		pool, ok := hotlines[pk]
		if !ok {
			if pool, err = e.store.enabledHotlines(ctx, sc.AppID, cc.PoolHotlineKey); err != nil {
				logErr("engine: reading hotlines", "app", sc.AppID, "err", err)
				continue
			}
			hotlines[pk] = pool
		}
		ad, err := e.adRules(ctx, sc)
		if err != nil {
			e.log.Error("engine: scenario has bad advertising hours; not dialled", "app", sc.AppID, "scenario", sc.ID, "err", err)
			continue
		}
		// The one rule the console shows too (engine_holds.go).
		in := dialInputs{Status: sc.Status, Window: w, WindowErr: werr, Wallet: b.wallet,
			Pool: cc.PoolHotlineKey, EnabledHotlines: len(pool.Numbers)}
		if ad != nil {
			in.AdHours = ad.window.ad
		}
		hold, held := dialHold(in, now)
		switch hold.Kind {
		case HoldBadWindow:
			e.log.Error("engine: scenario has a bad call_window; not dialled", "app", sc.AppID, "scenario", sc.ID, "err", werr)
		case HoldOutsideWindow:
			later(w.Next(now))
		case HoldAdHours:
			delayed, err := e.delayOutsideHours(ctx, sc, ad, now, later)
			if err != nil {
				logErr("engine: reading contacts outside the advertising hours", "app", sc.AppID, "scenario", sc.ID, "err", err)
			}
			delays = append(delays, delayed...)
		}
		if held {
			continue
		}
		if !b.unlimited {
			free = min(free, b.left)
		}
		numbers := pool.Numbers
		e.mu.Lock()
		var idle []int // indexes of the free numbers, ascending
		for i, n := range numbers {
			if !e.busy[hotlineKey{sc.AppID, n}] {
				idle = append(idle, i)
			}
		}
		e.mu.Unlock()
		free = min(free, len(idle))
		if free <= 0 {
			continue
		}
		due, err := e.store.dueContacts(ctx, sc.AppID, sc.ID, now, free)
		if err != nil {
			logErr("engine: reading due contacts", "app", sc.AppID, "scenario", sc.ID, "err", err)
			continue
		}
		if len(due) < free {
			if t, ok, err := e.store.nextDue(ctx, sc.AppID, sc.ID, now); err == nil && ok {
				later(t)
			}
		}
		due, blocked, err := e.screen(ctx, sc, due)
		if err != nil {
			logErr("engine: reading the destination rules or the do-not-call lists; scenario not dialled", "app", sc.AppID, "scenario", sc.ID, "err", err)
			continue
		}
		if len(blocked) > 0 {
			holds = append(holds, blocked...)
			later(now) // the places they would have taken go to the next due contacts
		}
		if ad != nil {
			var delayed []callDelay
			if due, delayed, err = e.adWaits(ctx, sc, ad, due, now); err != nil {
				logErr("engine: reading the number's advertising calls; scenario not dialled", "app", sc.AppID, "scenario", sc.ID, "err", err)
				continue
			}
			if len(delayed) > 0 {
				delays = append(delays, delayed...)
				later(now)
			}
		}
		// Last, the trunk: a contact is claimed only when its call can start
		// now, within the trunk's channels and calls per second on this
		// node; a shared store's claim holds them across every node.
		trunk, capacity := e.dialer.Trunk(pool.Trunk)
		if len(due) > 0 {
			granted, wait := e.dialer.Reserve(trunk, len(due))
			if granted < len(due) && wait > 0 {
				later(now.Add(wait))
			}
			due = due[:granted]
		}
		e.mu.Lock()
		for _, c := range due {
			claim := callClaim{CallID: newV7(), AppID: sc.AppID, ScenarioID: sc.ID, Contact: c, Start: now,
				Trunk: trunk, Capacity: capacity}
			if ad != nil {
				claim.AdPhone = c.Phone
			}
			claim.Hotline, idle = e.pickHotline(pk, numbers, idle, cc.CallRouting)
			e.take(claim)
			claims = append(claims, claim)
			if !b.unlimited {
				b.left--
			}
		}
		e.mu.Unlock()
	}
	if len(holds) > 0 {
		if err := e.store.holdContacts(ctx, holds, now, e.webhooks.firstTry(time.Now())); err != nil {
			logErr("engine: ending contacts the calling rules hold", "err", err)
		}
		e.webhooks.Notify()
	}
	if len(delays) > 0 {
		if err := e.store.delayContacts(ctx, delays, now); err != nil {
			logErr("engine: delaying contacts by the advertising rules", "err", err)
		}
	}
	if len(claims) == 0 {
		return next
	}
	taken, err := e.store.claimCalls(ctx, claims, e.now)
	if err != nil {
		logErr("engine: claiming calls", "err", err)
		taken = nil
	}
	started := map[string]bool{}
	byKey := map[scenarioKey]*Scenario{}
	for _, sc := range scenarios {
		byKey[scenarioKey{sc.AppID, sc.ID}] = sc
	}
	for _, c := range taken {
		started[c.CallID] = true
		e.calls.Add(1)
		go e.runCall(ctx, c, byKey[scenarioKey{c.AppID, c.ScenarioID}])
	}
	for _, c := range claims {
		if started[c.CallID] {
			continue
		}
		e.dialer.Unreserve(c.Trunk)
		e.untake(c)
		if c.Capacity.limited() {
			// The store may have refused it for the trunk, full on other
			// nodes, whose calls' ends do not wake this one.
			later(now.Add(trunkRetry))
		}
	}
	return next
}

// trunkRetry is how soon the scheduler tries again after a shared store
// refused a claim on a trunk with a capacity: a second's starts leave the
// window, or another node's call ends, without this node hearing of it.
const trunkRetry = 50 * time.Millisecond

func (e *Engine) window(cw CallWindow) (*callWindow, error) {
	key := fmt.Sprint(cw)
	e.mu.Lock()
	defer e.mu.Unlock()
	if w, ok := e.windows[key]; ok {
		return w, nil
	}
	w, err := parseCallWindow(cw)
	if err == nil {
		e.windows[key] = w
	}
	return w, err
}

// budget says how many calls the tenant's wallet lets start now: a prepaid
// one must hold the least an answered call costs (max of price_per_call and
// price_per_minute) for each call already up and each new one.
func (e *Engine) budget(ctx context.Context, appID int64, now time.Time) (*budget, error) {
	w, err := e.store.Wallet(ctx, appID)
	if err != nil {
		return nil, err
	}
	least := max(w.PricePerCall, w.PricePerMinute)
	_, broke := walletHold(w, now)
	if !broke && (!w.Prepaid || least == 0) {
		return &budget{unlimited: true, wallet: w}, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if broke && !e.paused[appID] {
		e.log.Warn("engine: prepaid wallet cannot pay a call; dialling paused until it is topped up",
			"app", appID, "balance", w.Balance, "expired", w.Expired(now))
	} else if !broke && e.paused[appID] {
		e.log.Info("engine: wallet can pay again; dialling resumed", "app", appID, "balance", w.Balance)
	}
	e.paused[appID] = broke
	if broke {
		return &budget{wallet: w}, nil
	}
	return &budget{left: max(int(w.Balance/least)-e.appCalls[appID], 0), wallet: w}, nil
}

// pickHotline chooses one of the idle numbers of the pool and returns it
// with the rest still idle; the caller holds e.mu.
func (e *Engine) pickHotline(pk poolKey, numbers []string, idle []int, routing string) (string, []int) {
	k := 0
	if routing == RoutingRandom {
		k = e.rng.IntN(len(idle))
	} else {
		// ROUND_ROBIN: the first idle number at or after the one after the
		// last used, going round.
		k, _ = slices.BinarySearch(idle, e.cursor[pk]%len(numbers))
		k %= len(idle)
		e.cursor[pk] = idle[k] + 1
	}
	pick := numbers[idle[k]]
	return pick, slices.Delete(idle, k, k+1)
}

// take and untake count a call against its limits; the caller of take
// holds e.mu.
func (e *Engine) take(c callClaim) {
	e.active[scenarioKey{c.AppID, c.ScenarioID}]++
	e.appCalls[c.AppID]++
	e.busy[hotlineKey{c.AppID, c.Hotline}] = true
	if c.AdPhone != "" {
		e.adUp[phoneKey{c.AppID, c.AdPhone}]++
	}
}

// release frees what an ended call held.
func (e *Engine) release(c callClaim) {
	e.dialer.Release(c.Trunk)
	e.untake(c)
}

// untake is take undone.
func (e *Engine) untake(c callClaim) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.active[scenarioKey{c.AppID, c.ScenarioID}]--
	e.appCalls[c.AppID]--
	delete(e.busy, hotlineKey{c.AppID, c.Hotline})
	if k := (phoneKey{c.AppID, c.AdPhone}); c.AdPhone != "" {
		if e.adUp[k]--; e.adUp[k] <= 0 {
			delete(e.adUp, k)
		}
	}
}

// settleTries is how often a call's settling commit is tried.
const settleTries = 5

// runCall places one claimed call and settles it.
func (e *Engine) runCall(ctx context.Context, c callClaim, sc *Scenario) {
	defer e.calls.Done()
	cc := sc.CallConfig
	req := DialRequest{From: c.Hotline, To: c.Contact.Phone, Attempt: c.Attempt, Start: c.Start,
		MaxDuration: time.Duration(cc.MaxDuration) * time.Second, Content: sc.Content, Script: sc.Script, Trunk: c.Trunk, AMD: cc.AMD}
	if sc.Script != nil || strings.Contains(sc.Content, "{{") {
		req.Fields = contactFields(c.Contact.Fields)
	}
	// An opt-out is stored during the call, at once: even a call cut right
	// after it must leave the number listed.
	req.OptOut = func(ctx context.Context) error {
		_, err := e.store.AddDNC(context.WithoutCancel(ctx), c.AppID, []string{c.Contact.Phone}, e.now())
		return err
	}
	if f, ok := e.faults.BeforeDial(c.AppID, c.Contact.Phone); ok {
		req.Outcome, req.Digits = f.Outcome, f.Digits
	}
	if cc.Record && e.recordings.Dir != "" {
		if err := os.MkdirAll(e.recordings.Dir, 0o700); err != nil {
			e.log.Warn("engine: the recordings folder cannot be made; the call is not recorded", "call", c.CallID, "err", err)
		} else {
			req.Record = e.recordings.Path(c.CallID)
		}
	}
	res := e.dialer.Dial(ctx, req)
	if res.RecordingErr != nil {
		e.log.Warn("engine: the call could not be recorded", "call", c.CallID, "err", res.RecordingErr)
	}
	now := e.now()
	end := callEnd{CallID: c.CallID, Result: res, ReCall: cc.ReCall, Now: now, FirstTry: e.webhooks.firstTry(time.Now()),
		Interrupted: ctx.Err() != nil && res.Outcome == OutcomeCanceled, RecordingBase: e.recordingBase}
	end.RetryAt = now
	if !end.Interrupted {
		end.RetryAt = now.Add(time.Duration(float64(cc.ReCall.Delay) * float64(time.Second) / e.scale()))
	}
	// Settled even when the engine is stopping (ctx done): the store is
	// still open until Stop returns. A failed commit is tried again, as the
	// contact stays dialing (not dialled again) until it is settled.
	for try := 1; ; try++ {
		err := e.store.endCall(context.Background(), end)
		if err == nil {
			break
		}
		if try == settleTries || errors.Is(err, errStoreClosed) {
			e.log.Error("engine: settling call failed; the next start settles it", "call", c.CallID, "err", err)
			break
		}
		e.log.Warn("engine: settling call failed; trying again", "call", c.CallID, "err", err)
		time.Sleep(time.Duration(try) * 100 * time.Millisecond)
	}
	e.release(c)
	e.rates.add(c, res.Outcome == OutcomeAnswered, now)
	e.Notify(c.AppID)
	e.webhooks.Notify()
}

// LiveCalls is what the engine has up now: calls per scenario and the
// hotlines they hold (docs/console.md#overview).
type LiveCalls struct {
	scenarios map[scenarioKey]int
	hotlines  map[hotlineKey]bool
}

// Live copies the engine's counts of calls up; empty while it is stopped.
func (e *Engine) Live() LiveCalls {
	e.mu.Lock()
	defer e.mu.Unlock()
	return LiveCalls{scenarios: maps.Clone(e.active), hotlines: maps.Clone(e.busy)}
}

// Scenario is how many calls of a scenario are up.
func (l LiveCalls) Scenario(appID int64, id string) int { return l.scenarios[scenarioKey{appID, id}] }

// Busy is how many of numbers (a pool's) have a call up.
func (l LiveCalls) Busy(appID int64, numbers []string) int {
	n := 0
	for _, num := range numbers {
		if l.hotlines[hotlineKey{appID, num}] {
			n++
		}
	}
	return n
}

// CallRate is the calls of a scenario (campaign "") or of one campaign
// that ended in the last minute, and how many of them were answered.
func (e *Engine) CallRate(appID int64, scenarioID, campaignID string) (ended, answered int) {
	return e.rates.lastMinute(rateKey{appID, scenarioID, campaignID}, e.now())
}

// callRates counts ended calls per second over the last minute, per
// scenario and per campaign: a figure to watch live, so it is kept in
// memory and starts over with the process.
type callRates struct {
	mu sync.Mutex
	m  map[rateKey]*rateWindow
}

type rateKey struct {
	app                int64
	scenario, campaign string
}

type rateWindow struct {
	sec             [60]int64 // the unix second each slot counts
	ended, answered [60]int
}

func (r *callRates) add(c callClaim, answered bool, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[rateKey]*rateWindow{}
	}
	keys := []rateKey{{c.AppID, c.ScenarioID, ""}}
	if c.Contact.Campaign != "" {
		keys = append(keys, rateKey{c.AppID, c.ScenarioID, c.Contact.Campaign})
	}
	s := now.Unix()
	for _, k := range keys {
		w := r.m[k]
		if w == nil {
			w = &rateWindow{}
			r.m[k] = w
		}
		i := s % 60
		if w.sec[i] != s {
			w.sec[i], w.ended[i], w.answered[i] = s, 0, 0
		}
		w.ended[i]++
		if answered {
			w.answered[i]++
		}
	}
}

func (r *callRates) lastMinute(k rateKey, now time.Time) (ended, answered int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.m[k]
	if w == nil {
		return 0, 0
	}
	s := now.Unix()
	for i := range w.sec {
		if s-w.sec[i] < 60 {
			ended += w.ended[i]
			answered += w.answered[i]
		}
	}
	return ended, answered
}

// contactFields reads a contact's stored fields as text for the prompt;
// a value that is not a string (an old row, a number) is its JSON.
func contactFields(raw string) map[string]string {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(raw), &m) != nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		var s string
		if json.Unmarshal(v, &s) != nil {
			s = string(v)
		}
		out[k] = s
	}
	return out
}
