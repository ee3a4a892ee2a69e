package main

import (
	"context"
	"database/sql"
	"strings"
	"time"
)

// outMessage is a pending webhook message ready to send.
type outMessage struct {
	Seq        int64
	ID         string // webhook-id
	EndpointID string
	URL        string
	Secret     string
	Payload    []byte
	Tries      int
}

// releaseMessages has nothing to give back: SQLite does not lease messages.
func (s *SQLiteStore) releaseMessages(ctx context.Context, seqs []int64) error { return nil }

// dueMessages returns up to limit pending messages due at now whose
// endpoint is enabled and not in skip, the longest waiting first.
func (s *SQLiteStore) dueMessages(ctx context.Context, now time.Time, limit int, skip []string) ([]outMessage, error) {
	args := []any{ms(now)}
	for _, id := range skip {
		args = append(args, id)
	}
	rows, err := s.read.QueryContext(ctx, `SELECT m.seq, m.id, m.endpoint_id, e.url, e.secret, m.payload, m.tries
		FROM webhook_messages m JOIN webhook_endpoints e ON e.id = m.endpoint_id
		WHERE m.state = 'pending' AND m.next_try_at <= ? AND e.enabled = 1
			AND m.endpoint_id NOT IN (`+strings.TrimPrefix(strings.Repeat(",?", len(skip)), ",")+`)
		ORDER BY m.next_try_at, m.seq LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []outMessage
	for rows.Next() {
		var m outMessage
		var payload string
		if err := rows.Scan(&m.Seq, &m.ID, &m.EndpointID, &m.URL, &m.Secret, &payload, &m.Tries); err != nil {
			return nil, err
		}
		m.Payload = []byte(payload)
		out = append(out, m)
	}
	return out, rows.Err()
}

// nextMessageDue is the earliest next_try_at after now of a pending message.
func (s *SQLiteStore) nextMessageDue(ctx context.Context, now time.Time) (time.Time, bool, error) {
	var v sql.NullInt64
	err := s.read.QueryRowContext(ctx, `SELECT min(next_try_at) FROM webhook_messages
		WHERE state = 'pending' AND next_try_at > ?`, ms(now)).Scan(&v)
	if err != nil || !v.Valid {
		return time.Time{}, false, err
	}
	return fromMS(v.Int64), true, nil
}

// deliveryAttempt is one try at sending a message and what follows from it.
type deliveryAttempt struct {
	Seq        int64
	EndpointID string
	Status     int    // 0: no HTTP answer
	Error      string // why it failed, if it did
	Latency    time.Duration
	At         time.Time
	State      string // msgPending (to retry), msgDelivered or msgDead
	Tries      int
	NextTryAt  time.Time
	// DisableEndpoint: the receiver answered 410 Gone.
	DisableEndpoint bool
}

// recordAttempt stores a try and moves the message on, in one commit.
func (s *SQLiteStore) recordAttempt(ctx context.Context, a deliveryAttempt) error {
	return s.WriteData(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRow(`UPDATE webhook_messages SET state = ?, attempts = attempts + 1, tries = ?,
			next_try_at = ?, updated_at = ? WHERE seq = ? RETURNING attempts`,
			a.State, a.Tries, ms(a.NextTryAt), ms(a.At), a.Seq).Scan(&n); err != nil {
			return err
		}
		var status any
		if a.Status != 0 {
			status = a.Status
		}
		if _, err := tx.Exec(`INSERT INTO webhook_attempts (message_seq, attempt, status_code, error, latency_ms, at)
			VALUES (?, ?, ?, ?, ?, ?)`, a.Seq, n, status, nullString(a.Error), a.Latency.Milliseconds(), ms(a.At)); err != nil {
			return err
		}
		if a.DisableEndpoint {
			if _, err := tx.Exec(`UPDATE webhook_endpoints SET enabled = 0, updated_at = ? WHERE id = ?`,
				ms(a.At), a.EndpointID); err != nil {
				return err
			}
		}
		return nil
	})
}
