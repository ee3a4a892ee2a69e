package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"math/bits"
	"slices"
	"strings"
	"time"

	"dialbox/internal/domain"
	"dialbox/internal/sqldb"
)

// ReleaseMessages has nothing to give back: SQLite does not lease messages.
func (s *SQLite) ReleaseMessages(ctx context.Context, seqs []int64) error { return nil }

// DueMessages returns up to limit pending messages due at now whose
// endpoint is enabled and not in skip, at most perEndpoint of each
// endpoint's, the longest waiting first. SQLite has no LATERAL join to do
// it in one query, so it steps through the endpoints with messages
// pending and takes each one's oldest due messages, each step one range of
// webhook_messages_due_by_endpoint read from the index alone: a skipped
// endpoint's backlog is never read. Only the messages chosen are then read
// whole.
func (s *SQLite) DueMessages(ctx context.Context, now time.Time, limit, perEndpoint int, skip []string) ([]domain.OutMessage, error) {
	enabled, err := QueryStrings(ctx, s.db, `SELECT id FROM webhook_endpoints WHERE enabled = 1`)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(enabled, func(id string) bool { return !slices.Contains(skip, id) }) {
		return nil, nil // every enabled endpoint has its share under way
	}
	type due struct{ seq, at int64 }
	var chosen []due
	for endpoint := ""; ; {
		err := s.read.QueryRowContext(ctx, `SELECT endpoint_id FROM webhook_messages
			WHERE state = 'pending' AND endpoint_id > ? ORDER BY endpoint_id LIMIT 1`, endpoint).Scan(&endpoint)
		if errors.Is(err, sql.ErrNoRows) {
			break
		}
		if err != nil {
			return nil, err
		}
		if !slices.Contains(enabled, endpoint) || slices.Contains(skip, endpoint) {
			continue
		}
		rows, err := s.read.QueryContext(ctx, `SELECT seq, next_try_at FROM webhook_messages
			WHERE endpoint_id = ? AND state = 'pending' AND next_try_at <= ?
			ORDER BY next_try_at, seq LIMIT ?`, endpoint, Millis(now), perEndpoint)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var d due
			if err := rows.Scan(&d.seq, &d.at); err != nil {
				rows.Close()
				return nil, err
			}
			chosen = append(chosen, d)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(chosen, func(a, b due) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.seq, b.seq)) })
	chosen = chosen[:min(len(chosen), limit)]
	if len(chosen) == 0 {
		return nil, nil
	}
	args := make([]any, len(chosen))
	order := make(map[int64]int, len(chosen))
	for i, d := range chosen {
		args[i], order[d.seq] = d.seq, i
	}
	rows, err := s.read.QueryContext(ctx, `SELECT m.seq, m.id, m.endpoint_id, e.url, e.secret, m.payload, m.tries
		FROM webhook_messages m JOIN webhook_endpoints e ON e.id = m.endpoint_id
		WHERE m.state = 'pending' AND m.seq IN (`+strings.TrimPrefix(strings.Repeat(",?", len(args)), ",")+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]domain.OutMessage, 0, len(chosen))
	for rows.Next() {
		var m domain.OutMessage
		var payload string
		if err := rows.Scan(&m.Seq, &m.ID, &m.EndpointID, &m.URL, &m.Secret, &payload, &m.Tries); err != nil {
			return nil, err
		}
		m.Payload = []byte(payload)
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b domain.OutMessage) int { return cmp.Compare(order[a.Seq], order[b.Seq]) })
	return out, rows.Err()
}

// NextMessageDue is the earliest next_try_at after now of a pending message.
func (s *sqlStore) NextMessageDue(ctx context.Context, now time.Time) (time.Time, bool, error) {
	var v sql.NullInt64
	err := s.db.QueryRow(ctx, `SELECT min(next_try_at) FROM webhook_messages
		WHERE state = 'pending' AND next_try_at > ?`, Millis(now)).Scan(&v)
	if err != nil || !v.Valid {
		return time.Time{}, false, err
	}
	return FromMillis(v.Int64), true, nil
}

// maxAttemptsPerStatement bounds the rows one statement of RecordAttempts
// carries (6 parameters a row, well under either database's limit).
const maxAttemptsPerStatement = 128

// rowsPerStatement is how many of n rows, at most max (a power of two),
// the next multi-row statement carries: the largest power of two that
// fits, so such statements have a handful of texts, each prepared once
// (a text per count would crowd the writer's statement cache,
// sqlite_stmts.go).
func rowsPerStatement(n, max int) int {
	return 1 << (bits.Len(uint(min(n, max))) - 1)
}

// RecordAttempts stores tries and moves their messages on, all in one
// commit: a statement per batch of rows rather than two per attempt, so
// the workers' records cost the writer little beside the settles they
// share it with (docs/webhooks.md#delivery-and-retries). A message no
// longer in the outbox (its endpoint deleted meanwhile) is passed over. On
// PostgreSQL it also ends the messages' leases: only PostgreSQL leases
// messages (Postgres.RecordAttempts, docs/postgres.md#claiming-calls).
func (s *sqlStore) RecordAttempts(ctx context.Context, attempts []domain.DeliveryAttempt) error {
	if len(attempts) == 0 {
		return nil
	}
	return s.writeRerunnable(ctx, func(tx sqldb.Querier) error {
		for rest := attempts; len(rest) > 0; {
			n := rowsPerStatement(len(rest), maxAttemptsPerStatement)
			if err := recordAttempts(ctx, tx, rest[:n]); err != nil {
				return err
			}
			rest = rest[n:]
		}
		return nil
	})
}

// recordAttempts is RecordAttempts for up to maxAttemptsPerStatement
// attempts, each of a different message, in tx.
func recordAttempts(ctx context.Context, tx sqldb.Querier, attempts []domain.DeliveryAttempt) error {
	lease := ""
	if tx.Dialect() == sqldb.Postgres {
		lease = ", lease_node = NULL, lease_until = NULL"
	}
	// VALUES names its columns column1.. on both databases; the casts give
	// PostgreSQL their types.
	rows := strings.Repeat(",(CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT))", len(attempts))[1:]
	args := make([]any, 0, 5*len(attempts))
	for _, a := range attempts {
		args = append(args, a.Seq, a.State, a.Tries, Millis(a.NextTryAt), Millis(a.At))
	}
	counts := make(map[int64]int64, len(attempts))
	err := tx.Query(ctx, `UPDATE webhook_messages SET state = v.column2, attempts = attempts + 1, tries = v.column3,
		next_try_at = v.column4, updated_at = v.column5`+lease+`
		FROM (VALUES `+rows+`) AS v WHERE webhook_messages.seq = v.column1
		RETURNING webhook_messages.seq, webhook_messages.attempts`, args, func(scan func(...any) error) error {
		var seq, n int64
		if err := scan(&seq, &n); err != nil {
			return err
		}
		counts[seq] = n
		return nil
	})
	if err != nil {
		return err
	}
	args = args[:0]
	for _, a := range attempts {
		n, ok := counts[a.Seq]
		if !ok {
			continue
		}
		var status any
		if a.Status != 0 {
			status = a.Status
		}
		args = append(args, a.Seq, n, status, nullString(a.Error), a.Latency.Milliseconds(), Millis(a.At))
	}
	if len(args) > 0 {
		if _, err := tx.Exec(ctx, `INSERT INTO webhook_attempts (message_seq, attempt, status_code, error, latency_ms, at)
			VALUES `+strings.Repeat(",(?, ?, ?, ?, ?, ?)", len(args)/6)[1:], args...); err != nil {
			return err
		}
	}
	for _, a := range attempts {
		if _, ok := counts[a.Seq]; ok && a.DisableEndpoint {
			if _, err := tx.Exec(ctx, `UPDATE webhook_endpoints SET enabled = 0, updated_at = ? WHERE id = ?`,
				Millis(a.At), a.EndpointID); err != nil {
				return err
			}
		}
	}
	return nil
}
