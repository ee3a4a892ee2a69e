package engine

import (
	"context"
	"dialbox/internal/domain"
	"fmt"
	"slices"
	"time"
)

// tick starts every call the limits allow now and returns when the
// scheduler next has something to do (the earliest retry or call window
// opening it knows of). Each scenario is planned, its due contacts
// screened and claimed in turn; then what the calling rules held or
// delayed is written, and the store's claim decides which calls start.
func (e *Engine) tick(ctx context.Context) time.Time {
	r := &round{ctx: ctx, now: e.now(), budgets: map[int64]*budget{}, hotlines: map[poolKey]domain.PoolLines{},
		up: map[int64]*domain.CallsUp{}, trunks: map[string]int{}}
	r.next = r.now.Add(e.pollInterval)
	scenarios, err := e.store.ActiveScenarios(ctx)
	if err != nil {
		e.logErr(ctx, "engine: listing scenarios", "err", err)
		return r.next
	}
	for _, sc := range scenarios {
		p := e.plan(r, sc)
		if p == nil {
			continue
		}
		due, ok := e.screenDue(r, p)
		if !ok {
			continue
		}
		e.claim(r, p, due)
	}
	e.keepRules(r)
	e.run(r, scenarios, e.storeClaim(r))
	return r.next
}

// round is one tick's work: the wallets and pools it read once for all
// their scenarios, the contacts it holds, delays and claims, and when the
// scheduler next has something to do.
type round struct {
	ctx       context.Context
	now, next time.Time
	budgets   map[int64]*budget
	hotlines  map[poolKey]domain.PoolLines
	// up is each application's calls up on every node, read once a round
	// on a shared store (nil: the engine's own counts are every call).
	up map[int64]*domain.CallsUp
	// trunks is the room each trunk with a capacity has left on every
	// node, read once a round on a shared store, less this round's claims.
	trunks map[string]int
	claims []domain.CallClaim
	holds  []domain.CallHold
	delays []domain.CallDelay
}

// later brings the round's next wake-up forward to t.
func (r *round) later(t time.Time) {
	if t.Before(r.next) {
		r.next = t
	}
}

// logErr logs a failed read or write, unless Stop cancelled it: not
// worth a line then.
func (e *Engine) logErr(ctx context.Context, msg string, args ...any) {
	if ctx.Err() == nil {
		e.log.Error(msg, args...)
	}
}

// scenarioPlan is what a scenario may dial this round: its due contacts
// (as many as its free places), its pool's idle hotlines, its wallet's
// budget and its advertising rules (nil: not an advertising scenario).
type scenarioPlan struct {
	sc   *domain.Scenario
	pk   poolKey
	pool domain.PoolLines
	idle []int // indexes of the pool's free numbers, ascending
	b    *budget
	ad   *domain.DialRules
	due  []domain.DueContact
}

// plan decides whether a scenario dials this round and how many of its
// due contacts: none when it is full, held (internal/domain/holds.go), or its
// wallet or hotlines have no room; nil then.
func (e *Engine) plan(r *round, sc *domain.Scenario) *scenarioPlan {
	cc := sc.CallConfig
	e.mu.Lock()
	free := cc.MaxConcurrent - e.active[scenarioKey{sc.AppID, sc.ID}]
	e.mu.Unlock()
	if free <= 0 {
		return nil
	}
	up, ok := e.roundCallsUp(r, sc.AppID)
	if !ok {
		return nil
	}
	if up != nil {
		if free = min(free, cc.MaxConcurrent-up.ByScenario[sc.ID]); free <= 0 {
			return nil
		}
	}
	w, werr := e.Window(cc.CallWindow)
	p := &scenarioPlan{sc: sc, pk: poolKey{sc.AppID, cc.PoolHotlineKey}}
	if p.pool, ok = e.roundPool(r, p.pk); !ok {
		return nil
	}
	var err error
	if p.ad, err = e.adRules(r.ctx, sc); err != nil {
		e.log.Error("engine: scenario has bad advertising hours; not dialled", "app", sc.AppID, "scenario", sc.ID, "err", err)
		return nil
	}
	e.mu.Lock()
	for i, n := range p.pool.Numbers {
		if !e.busy[hotlineKey{sc.AppID, n}] && (up == nil || !up.Hotlines[n]) {
			p.idle = append(p.idle, i)
		}
	}
	e.mu.Unlock()
	if len(p.idle) == 0 {
		// Every hotline is busy, so the wallet is not read: imports wake
		// the scheduler every few milliseconds, and a read each round
		// was about 4% of the server's CPU under their load
		// (docs/benchmarks.md#the-1-contact-request-a-commit-cycle-and-a-burst).
		// The holds checked before the wallet still act (a window's
		// wake-up, advertising delays); the wallet's hold acts on nothing.
		e.held(r, p, domain.Wallet{}, w, werr)
		return nil
	}
	if p.b, ok = e.roundBudget(r, sc.AppID); !ok {
		return nil
	}
	if e.held(r, p, p.b.wallet, w, werr) {
		return nil
	}
	if !p.b.unlimited {
		free = min(free, p.b.left)
	}
	free = min(free, len(p.idle))
	if free <= 0 {
		return nil
	}
	if p.due, err = e.store.DueContacts(r.ctx, sc.AppID, sc.ID, r.now, free); err != nil {
		e.logErr(r.ctx, "engine: reading due contacts", "app", sc.AppID, "scenario", sc.ID, "err", err)
		return nil
	}
	if len(p.due) < free {
		if t, ok, err := e.store.NextDue(r.ctx, sc.AppID, sc.ID, r.now); err == nil && ok {
			r.later(t)
		}
	}
	return p
}

// roundBudget is the budget of an application's wallet, read once a
// round; false: it could not be read.
func (e *Engine) roundBudget(r *round, appID int64) (*budget, bool) {
	if b, ok := r.budgets[appID]; ok {
		return b, true
	}
	up, ok := e.roundCallsUp(r, appID)
	if !ok {
		return nil, false
	}
	b, err := e.budget(r.ctx, appID, r.now, up)
	if err != nil {
		e.logErr(r.ctx, "engine: reading wallet", "app", appID, "err", err)
		return nil, false
	}
	r.budgets[appID] = b
	return b, true
}

// roundCallsUp is an application's calls up on every node, read once a
// round: nil when the store is not shared; false: they could not be read.
func (e *Engine) roundCallsUp(r *round, appID int64) (*domain.CallsUp, bool) {
	if up, ok := r.up[appID]; ok {
		return up, true
	}
	up, shared, err := e.store.CallsUp(r.ctx, appID)
	if err != nil {
		e.logErr(r.ctx, "engine: reading the calls up on every node", "app", appID, "err", err)
		return nil, false
	}
	if !shared {
		r.up[appID] = nil
		return nil, true
	}
	r.up[appID] = &up
	return &up, true
}

// roundPool is a pool's enabled hotlines, read once a round; false: they
// could not be read.
func (e *Engine) roundPool(r *round, pk poolKey) (domain.PoolLines, bool) {
	if pool, ok := r.hotlines[pk]; ok {
		return pool, true
	}
	pool, err := e.store.EnabledHotlines(r.ctx, pk.app, pk.key)
	if err != nil {
		e.logErr(r.ctx, "engine: reading hotlines", "app", pk.app, "err", err)
		return pool, false
	}
	r.hotlines[pk] = pool
	return pool, true
}

// held applies the one rule the console shows too (internal/domain/holds.go): a
// held scenario is not dialled this round; one outside its window wakes
// the scheduler when it opens, an advertising one outside the
// advertising hours has its due contacts delayed.
func (e *Engine) held(r *round, p *scenarioPlan, wallet domain.Wallet, w *domain.ParsedCallWindow, werr error) bool {
	sc := p.sc
	in := domain.DialInputs{Status: sc.Status, Window: w, WindowErr: werr, Wallet: wallet,
		Pool: sc.CallConfig.PoolHotlineKey, EnabledHotlines: len(p.pool.Numbers)}
	if p.ad != nil {
		in.AdHours = p.ad.Window.Ad
	}
	hold, held := domain.DialHold(in, r.now)
	switch hold.Kind {
	case domain.HoldBadWindow:
		e.log.Error("engine: scenario has a bad call_window; not dialled", "app", sc.AppID, "scenario", sc.ID, "err", werr)
	case domain.HoldOutsideWindow:
		r.later(w.Next(r.now))
	case domain.HoldAdHours:
		delayed, err := e.delayOutsideHours(r.ctx, sc, p.ad, r.now, r.later)
		if err != nil {
			e.logErr(r.ctx, "engine: reading contacts outside the advertising hours", "app", sc.AppID, "scenario", sc.ID, "err", err)
		}
		r.delays = append(r.delays, delayed...)
	}
	return held
}

// screenDue applies the calling rules to a plan's due contacts: those a
// destination rule or a do-not-call list holds (screen.go), or the
// advertising rules delay (adcalls.go), are not dialled and free
// their places for the next round; false: the rules could not be read.
func (e *Engine) screenDue(r *round, p *scenarioPlan) ([]domain.DueContact, bool) {
	sc := p.sc
	due, blocked, err := e.screen(r.ctx, sc, p.due)
	if err != nil {
		e.logErr(r.ctx, "engine: reading the destination rules or the do-not-call lists; scenario not dialled", "app", sc.AppID, "scenario", sc.ID, "err", err)
		return nil, false
	}
	if len(blocked) > 0 {
		r.holds = append(r.holds, blocked...)
		r.later(r.now) // the places they would have taken go to the next due contacts
	}
	if p.ad != nil {
		var delayed []domain.CallDelay
		if due, delayed, err = e.adWaits(r.ctx, sc, p.ad, due, r.now); err != nil {
			e.logErr(r.ctx, "engine: reading the number's advertising calls; scenario not dialled", "app", sc.AppID, "scenario", sc.ID, "err", err)
			return nil, false
		}
		if len(delayed) > 0 {
			r.delays = append(r.delays, delayed...)
			r.later(r.now)
		}
	}
	return due, true
}

// claim takes room on the trunk and a hotline for each contact that may
// be dialled: last, the trunk, so a contact is claimed only when its call
// can start now, within the trunk's channels and calls per second on this
// node (a shared store's claim holds them across every node).
func (e *Engine) claim(r *round, p *scenarioPlan, due []domain.DueContact) {
	sc := p.sc
	trunk, capacity := e.dialer.Trunk(p.pool.Trunk)
	if len(due) > 0 && capacity.Limited() {
		due = due[:e.roundTrunkRoom(r, trunk, capacity, len(due))]
	}
	if len(due) > 0 {
		granted, wait := e.dialer.Reserve(trunk, len(due))
		if granted < len(due) && wait > 0 {
			r.later(r.now.Add(wait))
		}
		due = due[:granted]
		if left, ok := r.trunks[trunk]; ok {
			r.trunks[trunk] = left - granted
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	idle := p.idle
	for _, c := range due {
		claim := domain.CallClaim{CallID: domain.NewV7(), AppID: sc.AppID, ScenarioID: sc.ID, Contact: c, Start: r.now,
			Trunk: trunk, Capacity: capacity}
		if p.ad != nil {
			claim.AdPhone = c.Phone
		}
		claim.Hotline, idle = e.pickHotline(p.pk, p.pool.Numbers, idle, sc.CallConfig.CallRouting)
		e.take(claim)
		r.claims = append(r.claims, claim)
		if !p.b.unlimited {
			p.b.left--
		}
	}
}

// roundTrunkRoom is how many of want calls the trunk has room for on
// every node, read once a round on a shared store (want on one a server
// owns, or when it could not be read: the claim decides). With no room
// the scheduler tries again soon: the calls that make room end on other
// nodes, which do not wake this one.
func (e *Engine) roundTrunkRoom(r *round, trunk string, capacity domain.TrunkCapacity, want int) int {
	left, ok := r.trunks[trunk]
	if !ok {
		room, shared, err := e.store.TrunkRoom(r.ctx, trunk, capacity, r.now)
		if err != nil {
			e.logErr(r.ctx, "engine: reading the trunk's calls on every node", "trunk", trunk, "err", err)
			return want
		}
		if !shared {
			return want
		}
		left, r.trunks[trunk] = room, room
	}
	if left <= 0 {
		r.later(r.now.Add(trunkRetry))
		return 0
	}
	return min(want, left)
}

// keepRules writes what the calling rules decided this round: the
// contacts they hold end, those they delay wait.
func (e *Engine) keepRules(r *round) {
	if len(r.holds) > 0 {
		if err := e.store.HoldContacts(r.ctx, r.holds, r.now, e.firstTryOf(time.Now())); err != nil {
			e.logErr(r.ctx, "engine: ending contacts the calling rules hold", "err", err)
		}
		e.notifyWebhooks()
	}
	if len(r.delays) > 0 {
		if err := e.store.DelayContacts(r.ctx, r.delays, r.now); err != nil {
			e.logErr(r.ctx, "engine: delaying contacts by the advertising rules", "err", err)
		}
	}
}

// storeClaim asks the store which of the round's claims took (the
// authority: Store.ClaimCalls); none when it fails.
func (e *Engine) storeClaim(r *round) []domain.CallClaim {
	if len(r.claims) == 0 {
		return nil
	}
	taken, err := e.store.ClaimCalls(r.ctx, r.claims, e.now)
	if err != nil {
		e.logErr(r.ctx, "engine: claiming calls", "err", err)
		return nil
	}
	return taken
}

// run starts the calls the store granted and gives back what the others
// held; one the store refused on a trunk with a capacity is tried again
// soon.
func (e *Engine) run(r *round, scenarios []*domain.Scenario, taken []domain.CallClaim) {
	if len(r.claims) == 0 {
		return
	}
	started := map[string]bool{}
	byKey := map[scenarioKey]*domain.Scenario{}
	for _, sc := range scenarios {
		byKey[scenarioKey{sc.AppID, sc.ID}] = sc
	}
	for _, c := range taken {
		started[c.CallID] = true
		e.calls.Add(1)
		go e.runCall(r.ctx, c, byKey[scenarioKey{c.AppID, c.ScenarioID}])
	}
	for _, c := range r.claims {
		if started[c.CallID] {
			continue
		}
		e.dialer.Unreserve(c.Trunk)
		e.untake(c)
		if c.Capacity.Limited() {
			// The store may have refused it for the trunk, full on other
			// nodes, whose calls' ends do not wake this one.
			r.later(r.now.Add(trunkRetry))
		}
	}
}

// trunkRetry is how soon the scheduler tries again after a shared store
// refused a claim on a trunk with a capacity: a second's starts leave the
// window, or another node's call ends, without this node hearing of it.
const trunkRetry = 50 * time.Millisecond

func (e *Engine) Window(cw domain.CallWindow) (*domain.ParsedCallWindow, error) {
	key := fmt.Sprint(cw)
	e.mu.Lock()
	defer e.mu.Unlock()
	if w, ok := e.windows[key]; ok {
		return w, nil
	}
	w, err := domain.ParseCallWindow(cw)
	if err == nil {
		e.windows[key] = w
	}
	return w, err
}

// budget is how many more calls a tenant's wallet lets start, and the
// wallet it was read from (for dialHold).
type budget struct {
	left      int
	unlimited bool
	wallet    domain.Wallet
}

// budget says how many calls the tenant's wallet lets start now: a prepaid
// one must hold the least an answered call costs (max of price_per_call and
// price_per_minute) for each call already up and each new one.
func (e *Engine) budget(ctx context.Context, appID int64, now time.Time, up *domain.CallsUp) (*budget, error) {
	w, err := e.store.Wallet(ctx, appID)
	if err != nil {
		return nil, err
	}
	least := max(w.PricePerCall, w.PricePerMinute)
	_, broke := domain.WalletHold(w, now)
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
	calls := e.appCalls[appID]
	if up != nil {
		calls = max(calls, up.Total)
	}
	return &budget{left: max(int(w.Balance/least)-calls, 0), wallet: w}, nil
}

// pickHotline chooses one of the idle numbers of the pool and returns it
// with the rest still idle; the caller holds e.mu.
func (e *Engine) pickHotline(pk poolKey, numbers []string, idle []int, routing string) (string, []int) {
	k := 0
	if routing == domain.RoutingRandom {
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
