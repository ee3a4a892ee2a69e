package store

import (
	"cmp"
	"context"
	"dialbox/internal/domain"
	"slices"
	"time"
)

// The outbox on PostgreSQL: messages are claimed with a lease, so two
// nodes never send one message while both are alive, and a node that dies
// loses its messages to the others when the lease runs out
// (docs/postgres.md#claiming-calls).

// DueMessages claims up to limit pending messages due at now whose endpoint
// is enabled and not in skip (this node has its share of them under way),
// at most perEndpoint of each endpoint's, the longest waiting first. Each
// endpoint's are one range of webhook_messages_due_by_endpoint: a skipped
// endpoint's backlog is never read. A message under a lease, this
// node's or another's, is left out until the lease runs out (or an attempt
// is recorded); otherwise messages still in flight would fill every answer
// and the ones behind them would wait. A message whose lease another node
// left to run out is taken over (counted in /metrics). The node renews the
// leases of the messages it holds until it records or gives them back
// (renewLeases).
func (s *Postgres) DueMessages(ctx context.Context, now time.Time, limit, perEndpoint int, skip []string) ([]domain.OutMessage, error) {
	if skip == nil {
		skip = []string{} // <> ALL(NULL) would leave out every message
	}
	rows, err := s.pool.Query(ctx, `UPDATE webhook_messages m SET lease_node = $1, lease_until = $2
		FROM webhook_endpoints e, (
			SELECT d.seq, d.was FROM webhook_endpoints de CROSS JOIN LATERAL (
				SELECT x.seq, x.lease_node AS was, x.next_try_at FROM webhook_messages x
				WHERE x.endpoint_id = de.id AND x.state = 'pending' AND x.next_try_at <= $3
					AND (x.lease_until IS NULL OR x.lease_until <= $3)
				ORDER BY x.next_try_at, x.seq LIMIT $6
				FOR UPDATE OF x SKIP LOCKED) d
			WHERE de.enabled = 1 AND de.id <> ALL($5)
			ORDER BY d.next_try_at, d.seq LIMIT $4) p
		WHERE m.seq = p.seq AND e.id = m.endpoint_id
		RETURNING m.seq, m.id, m.endpoint_id, e.url, e.secret, m.payload, m.tries, m.next_try_at, coalesce(p.was, '')`,
		s.node, Millis(now.Add(s.lease)), Millis(now), limit, skip, perEndpoint)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	type due struct {
		domain.OutMessage
		at int64
	}
	var list []due
	for rows.Next() {
		var d due
		var payload, was string
		if err := rows.Scan(&d.Seq, &d.ID, &d.EndpointID, &d.URL, &d.Secret, &payload, &d.Tries, &d.at, &was); err != nil {
			return nil, err
		}
		if was != "" && was != s.node {
			s.Metrics.Cluster.observeTakeover(takeoverMessage)
		}
		d.Payload = []byte(payload)
		list = append(list, d)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	s.heldMu.Lock()
	for _, d := range list {
		s.heldMessages[d.Seq] = struct{}{}
	}
	s.heldMu.Unlock()
	// RETURNING keeps no order: the longest waiting first, as on SQLite.
	slices.SortFunc(list, func(a, b due) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.Seq, b.Seq))
	})
	out := make([]domain.OutMessage, len(list))
	for i, d := range list {
		out[i] = d.OutMessage
	}
	return out, nil
}

// ReleaseMessages ends this node's leases on messages it will not try now.
// Should that fail, the leases are no longer renewed and run out.
func (s *Postgres) ReleaseMessages(ctx context.Context, seqs []int64) error {
	if len(seqs) == 0 {
		return nil
	}
	s.letGo(seqs...)
	_, err := s.pool.Exec(ctx, `UPDATE webhook_messages SET lease_node = NULL, lease_until = NULL
		WHERE seq = ANY($1) AND lease_node = $2`, seqs, s.node)
	return err
}

// RecordAttempts is sqlStore's, which ends the messages' leases in the
// same commit; this node first stops renewing them. Should the commit
// fail, the leases run out and the messages are sent again.
func (s *Postgres) RecordAttempts(ctx context.Context, attempts []domain.DeliveryAttempt) error {
	seqs := make([]int64, len(attempts))
	for i, a := range attempts {
		seqs[i] = a.Seq
	}
	s.letGo(seqs...)
	return s.sqlStore.RecordAttempts(ctx, attempts)
}

// letGo stops renewing the leases of messages this node is done with.
func (s *Postgres) letGo(seqs ...int64) {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	for _, seq := range seqs {
		delete(s.heldMessages, seq)
	}
}

// heldMessageSeqs are the messages whose leases this node renews.
func (s *Postgres) heldMessageSeqs() []int64 {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	out := make([]int64, 0, len(s.heldMessages))
	for seq := range s.heldMessages {
		out = append(out, seq)
	}
	return out
}
