package main

import (
	"context"
	"dialbox/internal/config"
	"dialbox/internal/dialer"
	"dialbox/internal/domain"
	"dialbox/internal/store"
	"sync"
	"testing"
	"time"
)

// Two engines on one PostgreSQL sharing a trunk's channels
// (docs/postgres.md#claiming-calls); the claims alone are tested in
// internal/store.

// trunkDialer is a dialer with the trunks of sip.trunks and no SIP. Its
// calls end BUSY once the calls up on every trunkDialer sharing its
// trunkCount reach expect, or after a while: two nodes exceeding the trunk
// together are seen doing it, whatever the machine's speed.
type trunkDialer struct {
	*dialer.TrunkLoads
	count *trunkCount
}

type trunkCount struct {
	expect   int
	mu       sync.Mutex
	cond     *sync.Cond
	up, most int
	trunks   map[string]int // calls per DialRequest.Trunk
}

func (d trunkDialer) Dial(_ context.Context, req domain.DialRequest) domain.DialResult {
	c := d.count
	c.mu.Lock()
	c.up++
	c.most = max(c.most, c.up)
	c.trunks[req.Trunk]++
	c.cond.Broadcast()
	deadline := time.Now().Add(300 * time.Millisecond)
	timeout := time.AfterFunc(300*time.Millisecond, c.cond.Broadcast)
	for c.up < c.expect && time.Now().Before(deadline) {
		c.cond.Wait()
	}
	timeout.Stop()
	c.up--
	c.mu.Unlock()
	return domain.DialResult{Outcome: domain.OutcomeBusy, Cause: domain.OutcomeCause[domain.OutcomeBusy], EndedAt: req.Start}
}

// Two engines on one database, each with its own dialer on one trunk of 3
// channels (the pool names no trunk: the first): never more than 3 calls
// up on the two together, every contact called, each call placed and
// recorded on the trunk by its name.
func TestPostgresTrunkEnginesShareChannels(t *testing.T) {
	first, second, ids := twoNodesOnOneDatabase(t)
	const contacts = 12
	engImport(t, first, ids[0], "sc", "", engPhones(contacts, 0)...)
	trunks := []config.SIPTrunk{{Name: "main", MaxChannels: 3, MaxCPS: 100}}
	count := &trunkCount{expect: 6, trunks: map[string]int{}} // what the two nodes' channels add up to
	count.cond = sync.NewCond(&count.mu)
	for _, s := range []Store{first, second} {
		engStart(t, s, trunkDialer{dialer.NewTrunkLoads(trunks), count}, nil, nil)
	}
	engWaitAllDone(t, first, ids[0], contacts)
	count.mu.Lock()
	defer count.mu.Unlock()
	if count.most > 3 {
		t.Errorf("%d calls up at once on a trunk of 3 channels across two nodes", count.most)
	}
	if count.trunks["main"] != contacts {
		t.Errorf("calls placed per trunk %v, want all %d on main", count.trunks, contacts)
	}
	if n := queryInt(t, first, `SELECT count(*) FROM calls WHERE trunk = 'main'`); n != contacts {
		t.Errorf("%d calls recorded on trunk main, want %d", n, contacts)
	}
}

// heldDialer holds every call up until release is closed.
type heldDialer struct {
	*dialer.TrunkLoads
	release chan struct{}
}

func (d heldDialer) Dial(ctx context.Context, req domain.DialRequest) domain.DialResult {
	select {
	case <-d.release:
	case <-ctx.Done():
	}
	return domain.DialResult{Outcome: domain.OutcomeBusy, Cause: domain.OutcomeCause[domain.OutcomeBusy], EndedAt: time.Now()}
}

// claimCounter is a node's store counting the scheduler's rounds and the
// claims it offered.
type claimCounter struct {
	Store
	mu              sync.Mutex
	rounds, offered int
}

func (c *claimCounter) ActiveScenarios(ctx context.Context) ([]*domain.Scenario, error) {
	c.mu.Lock()
	c.rounds++
	c.mu.Unlock()
	return c.Store.ActiveScenarios(ctx)
}

func (c *claimCounter) ClaimCalls(ctx context.Context, claims []domain.CallClaim, now func() time.Time) ([]domain.CallClaim, error) {
	c.mu.Lock()
	c.offered += len(claims)
	c.mu.Unlock()
	return c.Store.ClaimCalls(ctx, claims, now)
}

// A node whose trunk is full with another node's calls reads that before
// it offers claims, and offers none (its own count of the trunk is empty):
// claims the database would refuse each hold the trunk's lock for nothing.
// When the calls end, it dials.
func TestPostgresTrunkFullOnAnotherNodeOffersNoClaims(t *testing.T) {
	first, second, ids := twoNodesOnOneDatabase(t)
	const contacts = 6
	engImport(t, first, ids[0], "sc", "", engPhones(contacts, 0)...)
	trunks := []config.SIPTrunk{{Name: "main", MaxChannels: 3, MaxCPS: 100}}
	release := make(chan struct{})
	engStart(t, first, heldDialer{dialer.NewTrunkLoads(trunks), release}, nil, nil)
	waitFor(t, "the first node holding the trunk's 3 channels", func() bool {
		return queryInt(t, first, `SELECT count(*) FROM calls WHERE state = 'dialing' AND trunk = 'main'`) == 3
	})
	counted := &claimCounter{Store: second}
	engStart(t, counted, heldDialer{dialer.NewTrunkLoads(trunks), release}, nil, nil)
	waitFor(t, "five rounds of the second node's scheduler", func() bool {
		counted.mu.Lock()
		defer counted.mu.Unlock()
		return counted.rounds >= 5
	})
	counted.mu.Lock()
	offered := counted.offered
	counted.mu.Unlock()
	if offered != 0 {
		t.Errorf("the second node offered %d claims on a trunk the first node's calls fill, want none", offered)
	}
	close(release)
	engWaitAllDone(t, first, ids[0], contacts)
	if n := queryInt(t, first, `SELECT count(*) FROM calls WHERE trunk = 'main'`); n != contacts {
		t.Errorf("%d calls recorded on trunk main, want %d", n, contacts)
	}
}

// twoNodesOnOneDatabase opens two stores on one PostgreSQL database, as two
// nodes would, holding a tenant of 20 hotlines whose scenario "sc" calls
// each contact once, up to 20 at a time; ids are its fixture's ids.
func twoNodesOnOneDatabase(t *testing.T) (first, second Store, ids []int64) {
	t.Helper()
	database := migratedPostgres.Database(t)
	app := engTenant()
	app.HotlinePools[0].Numbers = engPhones(20, 500)
	app.Scenarios[0].CallConfig.MaxConcurrent = 20
	app.Scenarios[0].CallConfig.ReCall = domain.ReCall{Times: 0}
	first, ids = fixtureStoreIn(t, database, app)
	second, err := openConfiguredStore(context.Background(), configOn(database), store.NewMetrics(true))
	if err != nil {
		t.Fatal(err)
	}
	opened(t, second, database)
	t.Cleanup(func() { second.Close() })
	return first, second, ids
}
