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
	database := migratedPostgres.Database(t)
	app := engTenant()
	app.HotlinePools[0].Numbers = engPhones(20, 500)
	app.Scenarios[0].CallConfig.MaxConcurrent = 20
	app.Scenarios[0].CallConfig.ReCall = domain.ReCall{Times: 0}
	first, ids := fixtureStoreIn(t, database, app)
	second, err := openConfiguredStore(context.Background(), configOn(database), store.NewMetrics(true))
	if err != nil {
		t.Fatal(err)
	}
	opened(t, second, database)
	t.Cleanup(func() { second.Close() })
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
