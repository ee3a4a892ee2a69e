package store

import (
	"context"
	"sync"
	"testing"
	"time"

	"dialbox/internal/domain"
)

// A trunk's max_channels and max_cps held by the claim across every node
// on one PostgreSQL (docs/postgres.md#claiming-calls).

// pgTrunkClaims is pgClaims on trunk, whose capacity the node's
// configuration gives as capacity.
func pgTrunkClaims(appID int64, due []domain.DueContact, offset int, trunk string, capacity domain.TrunkCapacity) []domain.CallClaim {
	out := pgClaims(appID, due, offset)
	for i := range out {
		out[i].Trunk, out[i].Capacity = trunk, capacity
	}
	return out
}

// Three nodes claiming at once, over and over, on one trunk: never more
// calls up on it than its channels, each recorded on the trunk by name; a
// call ending on one node frees its channel for another.
func TestPostgresTrunkChannelsAcrossNodes(t *testing.T) {
	nodes, appID, due := pgEngineNodes(t, 3, func(a *FixtureApp) { a.Scenarios[0].CallConfig.MaxConcurrent = 20 }, 18)
	capacity := domain.TrunkCapacity{Channels: 4, CPS: 100}
	ctx := context.Background()
	var mu sync.Mutex
	var taken []domain.CallClaim
	var wg sync.WaitGroup
	for i, s := range nodes {
		wg.Go(func() {
			for range 5 {
				got, err := s.ClaimCalls(ctx, pgTrunkClaims(appID, due[i*6:i*6+6], i*6, "main", capacity), time.Now)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				taken = append(taken, got...)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(taken) != 4 {
		t.Fatalf("%d calls claimed on a trunk of 4 channels by three nodes, want 4", len(taken))
	}
	if n := pgCount(t, nodes[0], `SELECT count(*) FROM calls WHERE state = 'dialing' AND trunk = 'main'`); n != 4 {
		t.Errorf("%d calls up on the trunk, want 4 recorded on trunk main", n)
	}
	// What a scheduler reads before it offers claims: no room, on any node.
	if room, shared, err := nodes[1].TrunkRoom(ctx, "main", capacity, time.Now()); err != nil || !shared || room != 0 {
		t.Fatalf("room on the full trunk read as %d (shared %v, %v), want 0 on a shared store", room, shared, err)
	}
	// A call ends on its node: one channel, for whichever node claims next.
	now := time.Now()
	if err := nodes[0].EndCall(ctx, domain.CallEnd{CallID: taken[0].CallID, Now: now, FirstTry: now,
		Result: domain.DialResult{Outcome: domain.OutcomeBusy, EndedAt: now}}); err != nil {
		t.Fatal(err)
	}
	if room, _, err := nodes[2].TrunkRoom(ctx, "main", capacity, time.Now()); err != nil || room != 1 {
		t.Fatalf("after a call ended the trunk's room read as %d (%v), want 1", room, err)
	}
	next, err := nodes[2].ClaimCalls(ctx, pgTrunkClaims(appID, due[12:18], 12, "main", capacity), time.Now)
	if err != nil || len(next) != 1 {
		t.Fatalf("after a call ended, another node took %d (%v), want the 1 channel it freed", len(next), err)
	}
	// Another trunk is not held by this one's calls (hotlines 18 and 19:
	// none of the calls up holds them).
	other, err := nodes[1].ClaimCalls(ctx, pgTrunkClaims(appID, due[:2], 18, "backup", domain.TrunkCapacity{Channels: 1, CPS: 100}), time.Now)
	if err != nil || len(other) != 1 {
		t.Fatalf("on another trunk of 1 channel a node took %d (%v), want 1", len(other), err)
	}
}

// Three nodes claiming at once on one trunk, on the engine's clock: no one
// second holds more than max_cps starts, checked from the calls' records.
func TestPostgresTrunkCallsPerSecondAcrossNodes(t *testing.T) {
	nodes, appID, due := pgEngineNodes(t, 3, func(a *FixtureApp) { a.Scenarios[0].CallConfig.MaxConcurrent = 20 }, 18)
	capacity := domain.TrunkCapacity{Channels: 100, CPS: 3}
	ctx := context.Background()
	base := time.Now()
	claimAll := func(at time.Duration) int {
		t.Helper()
		clock := func() time.Time { return base.Add(at) }
		var mu sync.Mutex
		n := 0
		var wg sync.WaitGroup
		for i, s := range nodes {
			wg.Go(func() {
				got, err := s.ClaimCalls(ctx, pgTrunkClaims(appID, due[i*6:i*6+6], i*6, "main", capacity), clock)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				n += len(got)
				mu.Unlock()
			})
		}
		wg.Wait()
		return n
	}
	for _, step := range []struct {
		at   time.Duration
		want int
	}{
		{0, 3},
		{500 * time.Millisecond, 0},
		{999 * time.Millisecond, 0},
		{1000 * time.Millisecond, 3},
		{1700 * time.Millisecond, 0},
		{2500 * time.Millisecond, 3},
	} {
		// The room a scheduler reads first is what the claim then takes.
		if room, _, err := nodes[1].TrunkRoom(ctx, "main", capacity, base.Add(step.at)); err != nil || room != step.want {
			t.Fatalf("at +%v the trunk's room read as %d (%v), want %d", step.at, room, err, step.want)
		}
		if n := claimAll(step.at); n != step.want {
			t.Fatalf("at +%v three nodes started %d calls on a trunk of max_cps 3, want %d", step.at, n, step.want)
		}
	}
	// From the records: no window of one second holds more than 3 starts.
	if n := pgCount(t, nodes[0], `SELECT coalesce(max((SELECT count(*) FROM calls b
		WHERE b.trunk = 'main' AND b.started_at >= a.started_at AND b.started_at < a.started_at + 1000)), 0)
		FROM calls a WHERE a.trunk = 'main'`); n != 3 {
		t.Errorf("a second holds %d starts on the trunk, want at most (and here exactly) max_cps 3", n)
	}
}

// Two tenants on one trunk, claimed from two nodes at once in every mix
// (both tenants, either alone), each call ending at once to make room:
// no deadlock, as every claim locks the trunk before any tenant.
func TestPostgresTrunkTenantsDoNotDeadlock(t *testing.T) {
	nodes, appA, dueA := pgEngineNodes(t, 2, func(a *FixtureApp) { a.Scenarios[0].CallConfig.MaxConcurrent = 20 }, 40)
	ctx := context.Background()
	second := tenant()
	second.Name, second.APIKey, second.APISecret = "engine test 2", "eng-key-2", "eng-secret-2"
	second.HotlinePools[0].Numbers = phones(20, 500)
	second.Scenarios[0].CallConfig.MaxConcurrent = 20
	if err := nodes[0].ApplyFixtures(ctx, []*FixtureApp{second}, time.Now()); err != nil {
		t.Fatal(err)
	}
	appB := second.ID
	importPhones(t, nodes[0], appB, "sc", phones(40, 1000)...)
	dueB, err := nodes[0].DueContacts(ctx, appB, "sc", time.Now(), 40)
	if err != nil || len(dueB) != 40 {
		t.Fatalf("%d due for the second tenant (%v)", len(dueB), err)
	}
	capacity := domain.TrunkCapacity{Channels: 6, CPS: 1000}
	claimsOf := func(node, round int) []domain.CallClaim {
		a := pgTrunkClaims(appA, dueA[:2], node*10+round%5*2, "main", capacity)
		b := pgTrunkClaims(appB, dueB[:2], node*10+round%5*2, "main", capacity)
		switch (node + round) % 3 {
		case 0:
			return append(b, a...)
		case 1:
			return b
		default:
			return a
		}
	}
	deadline, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for i, s := range nodes {
		wg.Go(func() {
			for round := range 30 {
				got, err := s.ClaimCalls(deadline, claimsOf(i, round), time.Now)
				if err != nil {
					t.Errorf("node %d, round %d: %v", i, round, err)
					return
				}
				// Each call ends at once, to make room for the next rounds.
				for _, c := range got {
					now := time.Now()
					if err := s.EndCall(ctx, domain.CallEnd{CallID: c.CallID, Now: now, FirstTry: now,
						Result: domain.DialResult{Outcome: domain.OutcomeBusy, EndedAt: now}}); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if n := pgCount(t, nodes[0], `SELECT count(DISTINCT app_id) FROM calls WHERE trunk = 'main'`); n != 2 {
		t.Errorf("calls of %d tenants on the trunk, want both", n)
	}
}
