package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"dialbox/internal/domain"
)

// The engine's claims and settles on PostgreSQL, with several nodes on one
// database (docs/postgres.md#claiming-calls).

// pgEngineNodes is pgNodes with the tenant's scenario reshaped by change
// and n contacts queued, due now; it returns the nodes, the tenant and the
// due contacts.
func pgEngineNodes(t *testing.T, nodes int, change func(*FixtureApp), contacts int) ([]*Postgres, int64, []domain.DueContact) {
	t.Helper()
	list, appID := pgNodes(t, nodes)
	app := tenant()
	app.HotlinePools[0].Numbers = phones(20, 500)
	app.Webhooks = []FixtureWebhook{{URL: "http://127.0.0.1:1/hook", Secret: "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}
	if change != nil {
		change(app)
	}
	ctx := context.Background()
	if err := list[0].ApplyFixtures(ctx, []*FixtureApp{app}, time.Now()); err != nil {
		t.Fatal(err)
	}
	req := domain.ImportRequest{AppID: appID, ScenarioID: "sc"}
	for i, p := range phones(contacts, 0) {
		fields, _ := json.Marshal(map[string]string{"ho_ten": fmt.Sprint("C", i)})
		req.Contacts = append(req.Contacts, domain.NewContact{Position: i, ID: domain.NewV7(), Fields: fields, Phone: p})
	}
	if _, err := list[0].Import(ctx, req, time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	due, err := list[0].DueContacts(ctx, appID, "sc", time.Now(), contacts)
	if err != nil || len(due) != contacts {
		t.Fatalf("%d due (%v), want %d", len(due), err, contacts)
	}
	return list, appID, due
}

// pgClaims makes one claim per contact, each on its own hotline of the
// pool (hotline offset+i).
func pgClaims(appID int64, due []domain.DueContact, offset int) []domain.CallClaim {
	var out []domain.CallClaim
	hotlines := phones(20, 500)
	for i, c := range due {
		out = append(out, domain.CallClaim{CallID: domain.NewV7(), AppID: appID, ScenarioID: "sc", Contact: c,
			Hotline: hotlines[(offset+i)%len(hotlines)], Start: time.Now()})
	}
	return out
}

// pgPrepaid makes the tenant's wallet prepaid, holding balance, with a
// price per call.
func pgPrepaid(t *testing.T, s *Postgres, appID, balance, perCall int64) {
	t.Helper()
	if _, err := s.pool.Exec(context.Background(), `UPDATE wallets SET prepaid = 1, balance = $2, price_per_call = $3
		WHERE app_id = $1`, appID, balance, perCall); err != nil {
		t.Fatal(err)
	}
}

// Three nodes claiming the same contacts at once, over and over: no
// contact is claimed twice, and max_concurrent holds across them.
func TestPostgresClaimsHoldMaxConcurrentAcrossNodes(t *testing.T) {
	nodes, appID, due := pgEngineNodes(t, 3, func(a *FixtureApp) { a.Scenarios[0].CallConfig.MaxConcurrent = 4 }, 12)
	var mu sync.Mutex
	claimed := map[int64]int{}
	var wg sync.WaitGroup
	for i, s := range nodes {
		wg.Go(func() {
			for range 5 {
				taken, err := s.ClaimCalls(context.Background(), pgClaims(appID, due, i*6), time.Now)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, c := range taken {
					claimed[c.Contact.Seq]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(claimed) != 4 {
		t.Errorf("%d contacts claimed, want max_concurrent 4", len(claimed))
	}
	for seq, n := range claimed {
		if n != 1 {
			t.Errorf("contact %d claimed %d times", seq, n)
		}
	}
	if n := pgCount(t, nodes[0], `SELECT count(*) FROM calls WHERE state = 'dialing'`); n != 4 {
		t.Errorf("%d calls up, want 4", n)
	}
	if n := pgCount(t, nodes[0], `SELECT count(*) FROM calls WHERE scenario_id = 'sc'`); n != 4 {
		t.Errorf("%d calls carry their scenario, want 4", n)
	}
}

// A hotline up on one node is busy for every node.
func TestPostgresClaimsBusyHotlineAcrossNodes(t *testing.T) {
	nodes, appID, due := pgEngineNodes(t, 2, nil, 3)
	ctx := context.Background()
	a := pgClaims(appID, due[:1], 0)
	if taken, err := nodes[0].ClaimCalls(ctx, a, time.Now); err != nil || len(taken) != 1 || taken[0].Attempt != 1 {
		t.Fatalf("node 0 took %v (%v), want its one claim, attempt 1", taken, err)
	}
	b := pgClaims(appID, due[1:], 0) // the first on node 0's hotline, the second on another
	taken, err := nodes[1].ClaimCalls(ctx, b, time.Now)
	if err != nil || len(taken) != 1 || taken[0].CallID != b[1].CallID || taken[0].Contact.Seq != due[1].Seq {
		t.Fatalf("node 1 took %v (%v), want only the claim on a free hotline, given the contact due first", taken, err)
	}
}

// A prepaid wallet pays for the calls up on every node together, and a
// scenario no longer ACTIVE or outside its call window (changed by another node)
// starts nothing.
func TestPostgresClaimsWalletAndScenarioAcrossNodes(t *testing.T) {
	nodes, appID, due := pgEngineNodes(t, 2, nil, 6)
	ctx := context.Background()
	pgPrepaid(t, nodes[0], appID, 3000, 1000)
	if taken, err := nodes[0].ClaimCalls(ctx, pgClaims(appID, due[:2], 0), time.Now); err != nil || len(taken) != 2 {
		t.Fatalf("node 0 took %d (%v), want 2", len(taken), err)
	}
	if taken, err := nodes[1].ClaimCalls(ctx, pgClaims(appID, due[2:], 2), time.Now); err != nil || len(taken) != 1 {
		t.Fatalf("node 1 took %d (%v), want the 1 the wallet still pays for", len(taken), err)
	}
	if _, err := nodes[0].pool.Exec(ctx, `UPDATE wallets SET balance = 1000000 WHERE app_id = $1`, appID); err != nil {
		t.Fatal(err)
	}
	outside := `{"start": "00:00", "end": "00:00"}`
	if _, err := nodes[0].pool.Exec(ctx, `UPDATE scenarios SET call_config = jsonb_set(call_config::jsonb, '{call_window}', $1::jsonb)::text`, outside); err != nil {
		t.Fatal(err)
	}
	if taken, err := nodes[1].ClaimCalls(ctx, pgClaims(appID, due[3:], 3), time.Now); err != nil || len(taken) != 0 {
		t.Fatalf("outside the call window node 1 took %d (%v), want 0", len(taken), err)
	}
	if _, err := nodes[0].pool.Exec(ctx, `UPDATE scenarios SET call_config = jsonb_set(call_config::jsonb, '{call_window}', '{"start": "00:00", "end": "24:00"}')::text, status = 'DRAFT'`); err != nil {
		t.Fatal(err)
	}
	if taken, err := nodes[1].ClaimCalls(ctx, pgClaims(appID, due[3:], 3), time.Now); err != nil || len(taken) != 0 {
		t.Fatalf("back in DRAFT, node 1 took %d (%v), want 0", len(taken), err)
	}
	if _, err := nodes[0].pool.Exec(ctx, `UPDATE scenarios SET status = 'ACTIVE'`); err != nil {
		t.Fatal(err)
	}
	if taken, err := nodes[1].ClaimCalls(ctx, pgClaims(appID, due[3:], 3), time.Now); err != nil || len(taken) != 3 {
		t.Fatalf("active again, node 1 took %d (%v), want 3", len(taken), err)
	}
}

// A node that dies holding a call loses it when its lease runs out, not
// before: another node settles it once (CANCELED, not charged, queued
// again, reported), and the dead node's late settle changes nothing. A
// node alive renews its leases.
func TestPostgresCallLeaseTakeover(t *testing.T) {
	nodes, appID, due := pgEngineNodes(t, 3, nil, 2)
	ctx := context.Background()
	pgPrepaid(t, nodes[0], appID, 100000, 1000)
	dead, alive, other := nodes[0], nodes[1], nodes[2]
	held, err := dead.ClaimCalls(ctx, pgClaims(appID, due[:1], 0), time.Now)
	if err != nil || len(held) != 1 {
		t.Fatalf("took %d (%v)", len(held), err)
	}
	kept, err := alive.ClaimCalls(ctx, pgClaims(appID, due[1:], 1), time.Now)
	if err != nil || len(kept) != 1 {
		t.Fatalf("took %d (%v)", len(kept), err)
	}
	now := time.Now()
	if n, err := other.TakeOverCalls(ctx, now, now); err != nil || n != 0 {
		t.Fatalf("took over %d (%v) while every lease holds, want 0", n, err)
	}
	dead.Close()
	// Both leases run out; only the live node renews its own.
	if _, err := other.pool.Exec(ctx, `UPDATE contacts SET lease_until = $1 WHERE state = 'dialing'`, Millis(now.Add(-time.Second))); err != nil {
		t.Fatal(err)
	}
	if err := alive.renewLeases(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	counts := make([]int, 2)
	for i, s := range []*Postgres{alive, other} {
		wg.Go(func() {
			n, err := s.TakeOverCalls(ctx, now, now)
			if err != nil {
				t.Error(err)
			}
			counts[i] = n
		})
	}
	wg.Wait()
	if counts[0]+counts[1] != 1 {
		t.Errorf("took over %v calls, want the dead node's one, once", counts)
	}
	var state, outcome string
	var cost int64
	if err := other.pool.QueryRow(ctx, `SELECT state, coalesce(outcome, ''), cost FROM calls WHERE id = $1`, held[0].CallID).
		Scan(&state, &outcome, &cost); err != nil || state != "ended" || outcome != domain.OutcomeCanceled || cost != 0 {
		t.Errorf("dead node's call: %s %s cost %d (%v), want ended CANCELED free", state, outcome, cost, err)
	}
	if n := pgCount(t, other, `SELECT count(*) FROM contacts WHERE seq = $1 AND state = 'queued'`, held[0].Contact.Seq); n != 1 {
		t.Error("the dead node's contact is not queued again")
	}
	if n := pgCount(t, other, `SELECT count(*) FROM calls WHERE id = $1 AND state = 'dialing'`, kept[0].CallID); n != 1 {
		t.Error("the live node's call was taken over")
	}
	// The dead node's own settle, arriving late, is a no-op.
	answered := now
	late := domain.CallEnd{CallID: held[0].CallID, Now: now, FirstTry: now,
		Result: domain.DialResult{Outcome: domain.OutcomeAnswered, AnsweredAt: &answered, EndedAt: now, Talk: time.Minute}}
	if err := other.EndCall(ctx, late); err != nil {
		t.Fatal(err)
	}
	if n := pgCount(t, other, `SELECT balance FROM wallets WHERE app_id = $1`, appID); n != 100000 {
		t.Errorf("balance %d after the late settle, want 100000 (nothing charged)", n)
	}
	if n := pgCount(t, other, `SELECT count(*) FROM webhook_messages WHERE event_type = 'call.completed'`); n != 1 {
		t.Errorf("%d call.completed messages, want 1", n)
	}
	// The live node's call settles normally, charged once.
	end := late
	end.CallID = kept[0].CallID
	if err := alive.EndCall(ctx, end); err != nil {
		t.Fatal(err)
	}
	if n := pgCount(t, other, `SELECT balance FROM wallets WHERE app_id = $1`, appID); n != 99000 {
		t.Errorf("balance %d, want 99000", n)
	}
}

// Two nodes claiming advertising calls to one number at once, from two
// scenarios of the tenant: one call is placed (the other node's engine
// does not know of it, the claim does), none while it is up, and once it
// is answered none for the next 24 hours (docs/postgres.md#claiming-calls).
func TestPostgresAdvertisingNumberAcrossNodes(t *testing.T) {
	nodes, appID, due := pgEngineNodes(t, 2, func(a *FixtureApp) {
		sc := a.Scenarios[0]
		sc.CallConfig.Purpose = domain.PurposeAdvertising
		ad2 := *sc
		ad2.ID, ad2.Name = "ad2", "ad2"
		a.Scenarios = append(a.Scenarios, &ad2)
	}, 1)
	ctx := context.Background()
	phone := due[0].Phone
	importPhones(t, nodes[0], appID, "ad2", phone)
	due2, err := nodes[1].DueContacts(ctx, appID, "ad2", time.Now(), 10)
	if err != nil || len(due2) != 1 || due2[0].Phone != phone {
		t.Fatalf("due %+v and %+v (%v), want one contact with %s in each scenario", due, due2, err, phone)
	}
	start := aMondayMorning(t) // inside the advertising hours
	claim := func(c domain.DueContact, scenario, hotline string, at time.Time) domain.CallClaim {
		return domain.CallClaim{CallID: domain.NewV7(), AppID: appID, ScenarioID: scenario, Contact: c, Hotline: hotline,
			Start: at, AdPhone: phone}
	}
	hotlines := phones(20, 500)
	claims := [][]domain.CallClaim{{claim(due[0], "sc", hotlines[0], start)}, {claim(due2[0], "ad2", hotlines[1], start)}}
	var mu sync.Mutex
	var taken []domain.CallClaim
	var wg sync.WaitGroup
	for i, s := range nodes {
		wg.Go(func() {
			got, err := s.ClaimCalls(ctx, claims[i], func() time.Time { return start })
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			taken = append(taken, got...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(taken) != 1 {
		t.Fatalf("%d advertising calls to %s claimed by two nodes at once, want 1", len(taken), phone)
	}
	first := taken[0]
	waiting := due[0]
	scenario := "sc"
	if first.ScenarioID == "sc" {
		waiting, scenario = due2[0], "ad2"
	}
	// While it is up, neither node may claim the number again.
	for _, s := range nodes {
		if got, err := s.ClaimCalls(ctx, []domain.CallClaim{claim(waiting, scenario, hotlines[2], start)}, func() time.Time { return start }); err != nil || len(got) != 0 {
			t.Fatalf("claimed %d more calls to %s while one is up (%v)", len(got), phone, err)
		}
	}
	// Answered: still none within 24 hours of the answer, then one.
	answered := start.Add(5 * time.Second)
	end := domain.CallEnd{CallID: first.CallID, Now: answered.Add(time.Minute), FirstTry: answered,
		Result: domain.DialResult{Outcome: domain.OutcomeAnswered, AnsweredAt: &answered, EndedAt: answered.Add(time.Minute), Talk: time.Minute}}
	if err := nodes[0].EndCall(ctx, end); err != nil {
		t.Fatal(err)
	}
	later := answered.Add(domain.AdDay - time.Minute)
	if got, err := nodes[1].ClaimCalls(ctx, []domain.CallClaim{claim(waiting, scenario, hotlines[2], later)}, func() time.Time { return later }); err != nil || len(got) != 0 {
		t.Fatalf("claimed %d calls to %s a minute before 24 hours after its answer (%v)", len(got), phone, err)
	}
	next := answered.Add(domain.AdDay + time.Minute)
	if got, err := nodes[1].ClaimCalls(ctx, []domain.CallClaim{claim(waiting, scenario, hotlines[2], next)}, func() time.Time { return next }); err != nil || len(got) != 1 {
		t.Fatalf("claimed %d calls to %s 24 hours after its answer (%v), want 1", len(got), phone, err)
	}
	if n := pgCount(t, nodes[0], `SELECT count(*) FROM calls WHERE ad_phone = $1`, phone); n != 2 {
		t.Errorf("%d advertising calls to %s recorded, want 2", n, phone)
	}
}

// A claim made from a tick that read the time before another node's call
// ended, and taking that call's hotline once it settled, records its call
// starting after that end: the records show the hotline (and
// max_concurrent) held, as they did.
func TestPostgresClaimStampsStartOnceItHolds(t *testing.T) {
	nodes, appID, due := pgEngineNodes(t, 2, nil, 2)
	ctx := context.Background()
	tick := time.Now() // node 1's tick, before node 0's call ends
	first, err := nodes[0].ClaimCalls(ctx, pgClaims(appID, due[:1], 0), time.Now)
	if err != nil || len(first) != 1 {
		t.Fatalf("node 0 took %d (%v)", len(first), err)
	}
	ended := time.Now().Add(5 * time.Millisecond)
	if err := nodes[0].EndCall(ctx, domain.CallEnd{CallID: first[0].CallID, Now: ended, FirstTry: ended,
		Result: domain.DialResult{Outcome: domain.OutcomeBusy, EndedAt: ended}}); err != nil {
		t.Fatal(err)
	}
	late := pgClaims(appID, due[1:], 0) // the same hotline
	late[0].Start = tick
	clock := func() time.Time { return ended.Add(time.Millisecond) }
	taken, err := nodes[1].ClaimCalls(ctx, late, clock)
	if err != nil || len(taken) != 1 {
		t.Fatalf("node 1 took %d (%v)", len(taken), err)
	}
	var started int64
	if err := nodes[1].pool.QueryRow(ctx, `SELECT started_at FROM calls WHERE id = $1`, taken[0].CallID).Scan(&started); err != nil {
		t.Fatal(err)
	}
	if started < Millis(ended) || !taken[0].Start.Equal(clock()) {
		t.Errorf("call recorded starting at %d (claim's Start %v), before the end %d of the call it replaced on its hotline",
			started, taken[0].Start, Millis(ended))
	}
}

// Nodes read the same head of the queue: a claim naming contacts another
// node took meanwhile is given the ones due next, not refused.
func TestPostgresClaimTakesTheContactsDueNext(t *testing.T) {
	nodes, appID, due := pgEngineNodes(t, 2, nil, 4)
	ctx := context.Background()
	first, err := nodes[0].ClaimCalls(ctx, pgClaims(appID, due[:2], 0), time.Now)
	if err != nil || len(first) != 2 {
		t.Fatalf("node 0 took %d (%v), want 2", len(first), err)
	}
	stale := pgClaims(appID, due[:2], 2) // what node 1 read before node 0's claim
	taken, err := nodes[1].ClaimCalls(ctx, stale, time.Now)
	if err != nil || len(taken) != 2 {
		t.Fatalf("node 1 took %d (%v), want 2", len(taken), err)
	}
	got := map[int64]bool{taken[0].Contact.Seq: true, taken[1].Contact.Seq: true}
	if !got[due[2].Seq] || !got[due[3].Seq] || taken[0].Contact.Phone == "" {
		t.Errorf("node 1 took %+v, want the two contacts node 0 left", taken)
	}
	if n := pgCount(t, nodes[0], `SELECT count(DISTINCT contact_seq) FROM calls WHERE state = 'dialing'`); n != 4 {
		t.Errorf("%d contacts in calls, want 4", n)
	}
}

// Renewing skips a call whose contact another transaction holds (a settle
// under way ends its lease anyway): waiting would hold the leases renewed
// so far against it, a deadlock when it settles several calls at once.
func TestPostgresRenewalSkipsHeldContacts(t *testing.T) {
	nodes, appID, due := pgEngineNodes(t, 1, nil, 2)
	s := nodes[0]
	ctx := context.Background()
	taken, err := s.ClaimCalls(ctx, pgClaims(appID, due, 0), time.Now)
	if err != nil || len(taken) != 2 {
		t.Fatalf("took %d (%v), want 2", len(taken), err)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM contacts WHERE seq = $1 FOR UPDATE`, taken[0].Contact.Seq); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	renewCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.renewLeases(renewCtx, later); err != nil {
		t.Fatalf("renewal waited on the held contact: %v", err)
	}
	if n := pgCount(t, s, `SELECT count(*) FROM contacts WHERE lease_until = $1`, Millis(later.Add(s.lease))); n != 1 {
		t.Errorf("%d leases renewed, want the 1 not held", n)
	}
}

// A claim given contacts other than those its node screened (another node
// took those) passes over a number on the tenant's do-not-call list: the
// list is checked where the contacts are chosen, not only where they were
// read (docs/postgres.md#claiming-calls).
func TestPostgresClaimPassesOverListedNumbers(t *testing.T) {
	nodes, appID, due := pgEngineNodes(t, 2, nil, 4)
	ctx := context.Background()
	if _, err := nodes[0].AddDNC(ctx, appID, []string{due[2].Phone}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if first, err := nodes[0].ClaimCalls(ctx, pgClaims(appID, due[:2], 0), time.Now); err != nil || len(first) != 2 {
		t.Fatalf("node 0 took %d (%v), want 2", len(first), err)
	}
	stale := pgClaims(appID, due[:2], 2) // what node 1 read and screened before node 0's claim
	taken, err := nodes[1].ClaimCalls(ctx, stale, time.Now)
	if err != nil || len(taken) != 1 || taken[0].Contact.Seq != due[3].Seq {
		t.Fatalf("node 1 took %+v (%v), want only %s, not the listed %s", taken, err, due[3].Phone, due[2].Phone)
	}
	if n := pgCount(t, nodes[0], `SELECT count(*) FROM calls WHERE contact_seq = $1`, due[2].Seq); n != 0 {
		t.Errorf("%d calls to the listed number", n)
	}
}

// CallsUp counts the tenant's calls up on every node, by scenario and
// hotline, as the scheduler reads them before it offers claims.
func TestPostgresCallsUpAcrossNodes(t *testing.T) {
	nodes, appID, due := pgEngineNodes(t, 2, nil, 3)
	ctx := context.Background()
	claims := pgClaims(appID, due, 0)
	for i, c := range claims {
		taken, err := nodes[i%2].ClaimCalls(ctx, []domain.CallClaim{c}, time.Now)
		if err != nil || len(taken) != 1 {
			t.Fatalf("claim %d: %d taken, %v", i, len(taken), err)
		}
	}
	for i, s := range nodes {
		up, shared, err := s.CallsUp(ctx, appID)
		if err != nil || !shared {
			t.Fatalf("node %d: %v, shared %v", i, err, shared)
		}
		if up.Total != 3 || up.ByScenario["sc"] != 3 || len(up.Hotlines) != 3 {
			t.Errorf("node %d reads %+v, want the 3 calls of both nodes", i, up)
		}
		for _, c := range claims {
			if !up.Hotlines[c.Hotline] {
				t.Errorf("node %d: hotline %s of a call up not read as busy", i, c.Hotline)
			}
		}
	}
}
