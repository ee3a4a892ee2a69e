// Package engine owns the call engine (docs/design.md#the-call-engine): the
// scheduler that decides what to dial under every limit and calling rule,
// each call placed through a Dialer and settled in one commit, and the
// counts of calls up that the console shows. It declares what it asks of
// the store, the dialer, webhook delivery, the dial rules and the
// recordings' folder, and is handed them at construction; it imports only
// internal/domain, internal/config and internal/destinations.
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"dialbox/internal/config"
	"dialbox/internal/destinations"
	"dialbox/internal/domain"
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
	store  Store
	dialer Dialer
	log    *slog.Logger
	// pollInterval bounds how long the scheduler sleeps when nothing wakes it.
	pollInterval time.Duration
	// clock is the engine's clock (call windows, retry times); nil: time.Now.
	clock func() time.Time
	// recordings is where scenarios with call_config.record keep their
	// calls' audio, recordingBase what their recording_url starts with
	// (docs/voicebot.md#recordings); nil: nothing is recorded.
	recordings    Recordings
	recordingBase string

	// timeScale shrinks re_call delays like simulated calls; nil: 1.
	timeScale func() float64
	// webhooks is told when events are queued; nil: they stay queued.
	webhooks Webhooks
	// firstTry is when a queued event is first sent, given now; nil: now.
	firstTry func(now time.Time) time.Time
	// forceDial may force the outcome of a call (the admin API's dial
	// rules); nil: none.
	forceDial ForceDial
	// destinations is the policy of the numbers that may be dialled at all
	// (screen.go).
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
	windows  map[string]*domain.ParsedCallWindow
	paused   map[int64]bool // applications whose wallet cannot pay, for logging once
	rng      *rand.Rand
	rates    callRates // calls ended in the last minute, for the console

	// adUp counts advertising calls up per tenant and number, for the
	// daily limit (adcalls.go).
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

// Store is what the engine asks of the store: the scheduler's reads and
// claims, a call's end, the calling rules' reads and holds, and an opt-out
// heard during a call. dialbox's whole store interface embeds it.
type Store interface {
	ActiveScenarios(ctx context.Context) ([]*domain.Scenario, error)
	EnabledHotlines(ctx context.Context, appID int64, poolKey string) (domain.PoolLines, error)
	DueContacts(ctx context.Context, appID int64, scenarioID string, now time.Time, limit int) ([]domain.DueContact, error)
	NextDue(ctx context.Context, appID int64, scenarioID string, now time.Time) (time.Time, bool, error)
	// ClaimCalls is the authority on what may be dialled: it returns the
	// claims that took. A contact no longer queued is left out; a store
	// shared by several nodes also leaves out what would exceed the
	// scenario's max_concurrent, a busy hotline or the wallet across all
	// of them, and gives a claim whichever of its scenario's contacts is
	// due first, as another node may have taken the one it names
	// (docs/postgres.md#claiming-calls). now is the engine's
	// clock: a shared store stamps each call's start with it once the
	// claim holds, so a call's recorded start never precedes the end of
	// the call it took the place of on another node; SQLite's one server
	// keeps the claims' Start.
	ClaimCalls(ctx context.Context, claims []domain.CallClaim, now func() time.Time) ([]domain.CallClaim, error)
	EndCall(ctx context.Context, e domain.CallEnd) error
	// SettleInterrupted ends the calls no running dialbox holds any more;
	// the engine's start calls it. On SQLite (one server) that is every
	// call up; on a shared store, the calls whose lease ran out.
	SettleInterrupted(ctx context.Context, now, firstTry time.Time) (int, error)
	// CallsUp is the application's calls up on every node; false on a
	// store one server owns (SQLite), where the engine's own counts are
	// every call. The scheduler offers no claim they leave no room for:
	// the claim would be refused (docs/postgres.md#claiming-calls).
	CallsUp(ctx context.Context, appID int64) (domain.CallsUp, bool, error)
	// TrunkRoom is how many more calls the trunk of capacity may start at
	// now on every node (its channels less its calls up, its calls per
	// second less its starts in the last second); false on a store one
	// server owns, where the dialer's own count of the trunk is every
	// call. As with CallsUp, the scheduler offers no claim the trunk has
	// no room for.
	TrunkRoom(ctx context.Context, trunk string, capacity domain.TrunkCapacity, now time.Time) (int, bool, error)
	// TakeOverCalls is what a running engine calls every takeoverEvery: on
	// a shared store it settles the calls of nodes that died (their lease
	// ran out); on SQLite, which one server owns, there are none.
	TakeOverCalls(ctx context.Context, now, firstTry time.Time) (int, error)

	Wallet(ctx context.Context, appID int64) (domain.Wallet, error)
	AdSettings(ctx context.Context, appID int64) (domain.AdSettings, error)
	DNCListings(ctx context.Context, appID int64, phones []string, national bool) (map[string]string, error)
	AppDestinations(ctx context.Context, appID int64) (destinations.Rules, error)
	HoldContacts(ctx context.Context, holds []domain.CallHold, now, firstTry time.Time) error
	AnsweredAdCalls(ctx context.Context, appID int64, phones []string, since time.Time) (map[string][]time.Time, error)
	DelayContacts(ctx context.Context, delays []domain.CallDelay, now time.Time) error

	AddDNC(ctx context.Context, list int64, phones []string, now time.Time) (int, error)
}

// Webhooks is what the engine asks of webhook delivery: to be told that
// events were queued.
type Webhooks interface {
	Notify()
}

// Recordings is where a recorded call's audio goes
// (docs/voicebot.md#recordings).
type Recordings interface {
	// Path is the file of a call's recording; the engine makes its folder
	// before the call.
	Path(callID string) string
}

// ForceDial is a lookup of the admin API's dial rules
// (docs/sandbox.md#5-force-call-outcomes-and-webhook-failures): the
// outcome, keypad digits and words forced on a call to phone, if any.
type ForceDial func(appID int64, phone string) (domain.DialForce, bool)

// Parts is everything an engine is built with.
type Parts struct {
	Store  Store
	Dialer Dialer
	Log    *slog.Logger
	Config config.EngineConfig
	// Destinations is the policy of the numbers that may be dialled at all.
	Destinations *destinations.Policy
	// Webhooks is told of the events the engine queues; FirstTry is when
	// webhook delivery first sends an event queued at now; ForceDial may
	// force outcomes; TimeScale is the dialer's clock speed, which re_call
	// delays follow; Now is the engine's clock. Each may be nil.
	Webhooks  Webhooks
	FirstTry  func(now time.Time) time.Time
	ForceDial ForceDial
	TimeScale func() float64
	Now       func() time.Time
	// Recordings and RecordingBase: see Engine.recordings.
	Recordings    Recordings
	RecordingBase string
}

// New makes an engine of p; it dials once started.
func New(p Parts) *Engine {
	return &Engine{store: p.Store, dialer: p.Dialer, log: p.Log, pollInterval: p.Config.PollInterval.Duration,
		clock: p.Now, recordings: p.Recordings, recordingBase: p.RecordingBase, timeScale: p.TimeScale,
		webhooks: p.Webhooks, firstTry: p.FirstTry, forceDial: p.ForceDial, destinations: p.Destinations,
		wake: make(chan struct{}, 1)}
}

// firstTryOf is when webhook delivery first sends an event queued at now.
func (e *Engine) firstTryOf(now time.Time) time.Time {
	if e.firstTry == nil {
		return now
	}
	return e.firstTry(now)
}

// notifyWebhooks tells webhook delivery that events were queued.
func (e *Engine) notifyWebhooks() {
	if e.webhooks != nil {
		e.webhooks.Notify()
	}
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
	n, err := e.store.SettleInterrupted(ctx, now, e.firstTryOf(time.Now()))
	if err != nil {
		return fmt.Errorf("settling interrupted calls: %w", err)
	}
	if n > 0 {
		e.log.Info("settled calls interrupted by the last stop; their contacts are queued again", "calls", n)
		e.notifyWebhooks()
	}
	e.running = true
	e.stop, e.loopDone = make(chan struct{}), make(chan struct{})
	e.active, e.appCalls = map[scenarioKey]int{}, map[int64]int{}
	e.busy, e.cursor = map[hotlineKey]bool{}, map[poolKey]int{}
	e.windows, e.paused = map[string]*domain.ParsedCallWindow{}, map[int64]bool{}
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
// that died (Store.TakeOverCalls; at least every poll_interval).
const takeoverEvery = 5 * time.Second

// takeOver settles the calls of dead nodes, on a store several share.
func (e *Engine) takeOver(ctx context.Context) {
	n, err := e.store.TakeOverCalls(ctx, e.now(), e.firstTryOf(time.Now()))
	if err != nil {
		if ctx.Err() == nil {
			e.log.Error("engine: settling the calls of nodes whose lease ran out", "err", err)
		}
		return
	}
	if n > 0 {
		e.log.Warn("engine: settled calls of a node whose lease ran out; their contacts are queued again", "calls", n)
		e.notifyWebhooks()
	}
}

// wakeGap is the least time between two ticks that Notify asked for: a
// contact waits at most this long for its first dial to be considered.
const wakeGap = 2 * time.Millisecond

// take and untake count a call against its limits; the caller of take
// holds e.mu.
func (e *Engine) take(c domain.CallClaim) {
	e.active[scenarioKey{c.AppID, c.ScenarioID}]++
	e.appCalls[c.AppID]++
	e.busy[hotlineKey{c.AppID, c.Hotline}] = true
	if c.AdPhone != "" {
		e.adUp[phoneKey{c.AppID, c.AdPhone}]++
	}
}

// release frees what an ended call held.
func (e *Engine) release(c domain.CallClaim) {
	e.dialer.Release(c.Trunk)
	e.untake(c)
}

// untake is take undone.
func (e *Engine) untake(c domain.CallClaim) {
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
func (e *Engine) runCall(ctx context.Context, c domain.CallClaim, sc *domain.Scenario) {
	defer e.calls.Done()
	cc := sc.CallConfig
	req := domain.DialRequest{From: c.Hotline, To: c.Contact.Phone, Attempt: c.Attempt, Start: c.Start,
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
	if e.forceDial != nil {
		if f, ok := e.forceDial(c.AppID, c.Contact.Phone); ok {
			req.Outcome, req.Digits, req.Says = f.Outcome, f.Digits, f.Says
		}
	}
	if cc.Record && e.recordings != nil {
		path := e.recordings.Path(c.CallID)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			e.log.Warn("engine: the recordings folder cannot be made; the call is not recorded", "call", c.CallID, "err", err)
		} else {
			req.Record = path
		}
	}
	res := e.dialer.Dial(ctx, req)
	if res.RecordingErr != nil {
		e.log.Warn("engine: the call could not be recorded", "call", c.CallID, "err", res.RecordingErr)
	}
	now := e.now()
	end := domain.CallEnd{CallID: c.CallID, Result: res, ReCall: cc.ReCall, Now: now, FirstTry: e.firstTryOf(time.Now()),
		Interrupted: ctx.Err() != nil && res.Outcome == domain.OutcomeCanceled, RecordingBase: e.recordingBase}
	end.RetryAt = now
	if !end.Interrupted {
		end.RetryAt = now.Add(time.Duration(float64(cc.ReCall.Delay) * float64(time.Second) / e.scale()))
	}
	// Settled even when the engine is stopping (ctx done): the store is
	// still open until Stop returns. A failed commit is tried again, as the
	// contact stays dialing (not dialled again) until it is settled.
	for try := 1; ; try++ {
		err := e.store.EndCall(context.Background(), end)
		if err == nil {
			break
		}
		if try == settleTries || errors.Is(err, domain.ErrStoreClosed) {
			e.log.Error("engine: settling call failed; the next start settles it", "call", c.CallID, "err", err)
			break
		}
		e.log.Warn("engine: settling call failed; trying again", "call", c.CallID, "err", err)
		time.Sleep(time.Duration(try) * 100 * time.Millisecond)
	}
	e.release(c)
	e.rates.Add(c, res.Outcome == domain.OutcomeAnswered, now)
	e.Notify(c.AppID)
	e.notifyWebhooks()
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

func (r *callRates) Add(c domain.CallClaim, answered bool, now time.Time) {
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

// Dialer is what the engine needs of whatever places its calls: dialer.Sim
// simulates them, dialer.SIP (internal/dialer/sip.go) places real ones
// through SIP trunks.
type Dialer interface {
	// Dial places one call and returns when it has ended. A call stopped
	// through ctx (dialbox is stopping) ends at once: CANCELED (queued
	// again, free) unless a person had answered a real call, which stays
	// ANSWERED with the talk it had.
	Dial(ctx context.Context, req domain.DialRequest) domain.DialResult
	// Trunk is the name trunk stands for ("" is the first trunk), which
	// calls record, and its capacity as configured, which the claim holds
	// across every node on a shared store (docs/postgres.md#claiming-calls).
	Trunk(trunk string) (string, domain.TrunkCapacity)
	// Reserve is the scheduler asking, before it claims contacts, how many
	// of n calls may start now on trunk, on this node. Each start granted
	// holds one of the trunk's channels until Release(trunk), or
	// Unreserve(trunk) when the store refused its claim. When fewer than n
	// are granted, wait is how soon more may be (0: when a call ends).
	Reserve(trunk string, n int) (granted int, wait time.Duration)
	Release(trunk string)
	Unreserve(trunk string)
}
