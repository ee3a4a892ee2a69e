package store

// Several nodes on one PostgreSQL: the outbox's claims, leases, renewals
// and takeovers, and configuration changes reaching every node
// (docs/postgres.md).

import (
	"context"
	"sync"
	"testing"
	"time"

	"dialbox/internal/destinations"
	"dialbox/internal/domain"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// pgQueueMessages puts n pending messages in the outbox, due at due.
func pgQueueMessages(t *testing.T, s *Postgres, appID int64, n int, due time.Time) {
	t.Helper()
	if _, err := s.pool.Exec(context.Background(), `INSERT INTO webhook_messages
		(id, endpoint_id, app_id, event_type, payload, next_try_at, created_at, updated_at)
		SELECT 'msg-' || i, (SELECT id FROM webhook_endpoints WHERE app_id = $1), $1, 'call.completed', '{}', $3, $3, $3
		FROM generate_series(1, $2) AS i`, appID, n, Millis(due)); err != nil {
		t.Fatal(err)
	}
}

// Two live nodes taking messages at once never take the same one, and
// between them take them all.
func TestPostgresOutboxClaimsAreExclusive(t *testing.T) {
	nodes, appID := pgNodes(t, 2)
	now := time.Now()
	const total = 300
	pgQueueMessages(t, nodes[0], appID, total, now.Add(-time.Second))
	var mu sync.Mutex
	taken := map[int64]int{} // seq: node
	var wg sync.WaitGroup
	for i, s := range nodes {
		wg.Go(func() {
			for {
				msgs, err := s.DueMessages(context.Background(), now, 7, 7, nil)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, m := range msgs {
					if other, ok := taken[m.Seq]; ok {
						t.Errorf("message %d taken twice: by node %d, then node %d", m.Seq, other, i)
					} else {
						taken[m.Seq] = i
					}
				}
				done := len(taken) == total
				mu.Unlock()
				if done || len(msgs) == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	if len(taken) != total {
		t.Errorf("%d of %d messages taken", len(taken), total)
	}
}

// A node that dies loses its messages when the lease runs out: another
// node takes them then, not before; a recorded attempt ends the lease.
func TestPostgresOutboxLeaseTakeover(t *testing.T) {
	nodes, appID := pgNodes(t, 2)
	ctx := context.Background()
	now := time.Now()
	pgQueueMessages(t, nodes[0], appID, 3, now.Add(-time.Second))
	held, err := nodes[0].DueMessages(ctx, now, 10, 10, nil)
	if err != nil || len(held) != 3 {
		t.Fatalf("node 0 took %d (%v), want 3", len(held), err)
	}
	if again, err := nodes[0].DueMessages(ctx, now, 10, 10, nil); err != nil || len(again) != 0 {
		t.Fatalf("node 0 asked again: %d (%v), want none (all in flight)", len(again), err)
	}
	if msgs, err := nodes[1].DueMessages(ctx, now.Add(nodes[0].lease-time.Second), 10, 10, nil); err != nil || len(msgs) != 0 {
		t.Fatalf("node 1 took %d (%v) while node 0's lease holds, want 0", len(msgs), err)
	}
	// Node 0 records one attempt, then "dies" holding the other two.
	if err := nodes[0].RecordAttempts(ctx, []domain.DeliveryAttempt{{Seq: held[0].Seq, EndpointID: held[0].EndpointID,
		Status: 200, At: now, State: domain.MessageDelivered, NextTryAt: now}}); err != nil {
		t.Fatal(err)
	}
	later := now.Add(nodes[0].lease + time.Second)
	takeovers := testutil.ToFloat64(nodes[1].Metrics.Cluster.takeovers.WithLabelValues(takeoverMessage))
	msgs, err := nodes[1].DueMessages(ctx, later, 10, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := testutil.ToFloat64(nodes[1].Metrics.Cluster.takeovers.WithLabelValues(takeoverMessage)) - takeovers; n != 2 {
		t.Errorf("dialbox_lease_takeovers_total{kind=\"message\"} went up by %v, want 2", n)
	}
	got := map[string]bool{}
	for _, m := range msgs {
		got[m.ID] = true
	}
	if len(msgs) != 2 || got[held[0].ID] || !got[held[1].ID] || !got[held[2].ID] {
		t.Errorf("after the lease node 1 took %v, want node 0's two undelivered messages", got)
	}
	if msgs[0].Seq > msgs[1].Seq {
		t.Errorf("taken out of order: %d before %d", msgs[0].Seq, msgs[1].Seq)
	}
	var attempts int
	if err := nodes[1].pool.QueryRow(ctx, `SELECT count(*) FROM webhook_attempts`).Scan(&attempts); err != nil || attempts != 1 {
		t.Errorf("%d attempts recorded (%v), want 1", attempts, err)
	}
	if next, ok, err := nodes[1].NextMessageDue(ctx, now.Add(-time.Hour)); err != nil || !ok || !next.Equal(FromMillis(Millis(now.Add(-time.Second)))) {
		t.Errorf("NextMessageDue = %v, %v, %v", next, ok, err)
	}
}

// A configuration change made on one node is seen by the others, whose
// configuration caches held the old value.
func TestPostgresConfigChangesReachEveryNode(t *testing.T) {
	nodes, appID := pgNodes(t, 2)
	ctx := context.Background()
	cached := []*Cached{NewCached(nodes[0]), NewCached(nodes[1])}
	read := func(s *Cached) *domain.Scenario {
		t.Helper()
		sc, err := s.Scenario(ctx, appID, "sc")
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	// Node 1 listens, then caches the scenario.
	waitFor(t, "node 1 listening", func() bool { return !nodes[1].deaf.Load() })
	if read(cached[1]).Name != "sc" {
		t.Fatal("unexpected name")
	}
	sc := read(cached[0])
	sc.Name = "renamed on node 0"
	if err := nodes[0].UpdateScenario(ctx, sc, time.Now()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "node 1 seeing the new name", func() bool { return read(cached[1]).Name == sc.Name })
	if err := nodes[0].SetAdminSetting(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[0].CreateApp(ctx, "second", "second-key", "second-secret", destinations.Rules{}, time.Now()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "node 1 seeing the new application", func() bool {
		_, err := cached[1].AppByKey(ctx, "second-key")
		return err == nil
	})
}

// Messages a node gives back are due again at once, for any node; it
// gives back only its own.
func TestPostgresOutboxRelease(t *testing.T) {
	nodes, appID := pgNodes(t, 2)
	ctx := context.Background()
	now := time.Now()
	pgQueueMessages(t, nodes[0], appID, 2, now.Add(-time.Second))
	held, err := nodes[0].DueMessages(ctx, now, 10, 10, nil)
	if err != nil || len(held) != 2 {
		t.Fatalf("node 0 took %d (%v), want 2", len(held), err)
	}
	// Node 1 cannot end node 0's lease.
	if err := nodes[1].ReleaseMessages(ctx, []int64{held[0].Seq, held[1].Seq}); err != nil {
		t.Fatal(err)
	}
	if msgs, err := nodes[1].DueMessages(ctx, now, 10, 10, nil); err != nil || len(msgs) != 0 {
		t.Fatalf("node 1 took %d (%v) under node 0's lease, want 0", len(msgs), err)
	}
	if err := nodes[0].ReleaseMessages(ctx, []int64{held[1].Seq}); err != nil {
		t.Fatal(err)
	}
	msgs, err := nodes[1].DueMessages(ctx, now, 10, 10, nil)
	if err != nil || len(msgs) != 1 || msgs[0].Seq != held[1].Seq {
		t.Fatalf("after node 0 gave one back node 1 took %v (%v), want it", msgs, err)
	}
}

// A node renews the leases of the messages it holds, so a slow attempt is
// not sent by another node meanwhile; it stops renewing those it recorded
// or gave back (or failed to), whose leases then run out.
func TestPostgresOutboxLeaseRenewal(t *testing.T) {
	nodes, appID := pgNodes(t, 2)
	ctx := context.Background()
	now := time.Now()
	pgQueueMessages(t, nodes[0], appID, 3, now.Add(-time.Second))
	held, err := nodes[0].DueMessages(ctx, now, 10, 10, nil)
	if err != nil || len(held) != 3 {
		t.Fatalf("node 0 took %d (%v), want 3", len(held), err)
	}
	lease := nodes[0].lease
	// Node 0 is done with one (a release that failed in the database looks
	// the same to it), then renews halfway through the lease.
	nodes[0].letGo(held[2].Seq)
	if err := nodes[0].renewLeases(ctx, now.Add(lease/2)); err != nil {
		t.Fatal(err)
	}
	msgs, err := nodes[1].DueMessages(ctx, now.Add(lease+time.Second), 10, 10, nil)
	if err != nil || len(msgs) != 1 || msgs[0].Seq != held[2].Seq {
		t.Fatalf("past the first lease node 1 took %v (%v), want only the one node 0 let go", msgs, err)
	}
	msgs, err = nodes[1].DueMessages(ctx, now.Add(lease*3/2+time.Second), 10, 10, nil)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("past the renewed lease node 1 took %d (%v), want node 0's other two", len(msgs), err)
	}
}
