package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"dialbox/internal/domain"
	"dialbox/internal/sqldb"
)

// The admin API's webhook endpoints and messages, written once for both
// stores (docs/architecture.md#one-query-layer).

// ---- webhook endpoints ----

const endpointColumns = `id, url, secret, events, enabled <> 0, created_at, updated_at`

func scanEndpoint(row sqldb.Row) (*domain.WebhookEndpoint, error) {
	var e domain.WebhookEndpoint
	var events string
	var created, updated int64
	if err := scanErr(row.Scan(&e.ID, &e.URL, &e.Secret, &events, &e.Enabled, &created, &updated)); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(events), &e.Events); err != nil {
		return nil, fmt.Errorf("webhook endpoint %s events: %w", e.ID, err)
	}
	e.CreatedAt, e.UpdatedAt = FromMillis(created), FromMillis(updated)
	return &e, nil
}

func (s *sqlStore) Endpoints(ctx context.Context, appID int64) ([]*domain.WebhookEndpoint, error) {
	return sqldb.Collect(ctx, s.db, scanEndpoint, `SELECT `+endpointColumns+` FROM webhook_endpoints
		WHERE app_id = ? ORDER BY created_at, id`+s.db.Dialect().CollateC(), appID)
}

func (s *sqlStore) Endpoint(ctx context.Context, appID int64, id string) (*domain.WebhookEndpoint, error) {
	return scanEndpoint(s.db.QueryRow(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints
		WHERE app_id = ? AND id = ?`, appID, id))
}

// SaveEndpoint inserts or replaces an endpoint of appID.
func (s *sqlStore) SaveEndpoint(ctx context.Context, appID int64, e *domain.WebhookEndpoint, now time.Time) error {
	events, err := domain.MarshalJSON(e.Events)
	if err != nil {
		return err
	}
	return s.writeConfig(ctx, func(tx sqldb.Querier) error {
		_, err := tx.Exec(ctx, `INSERT INTO webhook_endpoints (id, app_id, url, secret, events, enabled, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET url = excluded.url, secret = excluded.secret, events = excluded.events,
				enabled = excluded.enabled, updated_at = excluded.updated_at
			WHERE webhook_endpoints.app_id = excluded.app_id`,
			e.ID, appID, e.URL, e.Secret, string(events), boolInt(e.Enabled), Millis(now), Millis(now))
		return err
	})
}

func (s *sqlStore) DeleteEndpoint(ctx context.Context, appID int64, id string) error {
	return s.writeConfig(ctx, func(tx sqldb.Querier) error {
		return changedRows(tx.Exec(ctx, `DELETE FROM webhook_endpoints WHERE app_id = ? AND id = ?`, appID, id))
	})
}

// ---- webhook messages ----

const messageColumns = `seq, id, endpoint_id, event_type, payload, state, attempts, next_try_at, created_at, updated_at`

func scanMessage(row interface{ Scan(...any) error }) (*domain.WebhookMessage, error) {
	var m domain.WebhookMessage
	var payload string
	var next, created, updated int64
	if err := scanErr(row.Scan(&m.Seq, &m.ID, &m.EndpointID, &m.EventType, &payload, &m.State, &m.Attempts, &next, &created, &updated)); err != nil {
		return nil, err
	}
	m.Payload = json.RawMessage(payload)
	m.NextTryAt, m.CreatedAt, m.UpdatedAt = FromMillis(next), FromMillis(created), FromMillis(updated)
	return &m, nil
}

// Messages returns one page of webhook messages, newest first, and the
// cursor of the next page. CAST: PostgreSQL would take a bare ? = 0 for a
// 32-bit integer, too small for a time in milliseconds.
func (s *sqlStore) Messages(ctx context.Context, appID int64, f domain.MessageFilter) ([]*domain.WebhookMessage, string, error) {
	out, err := sqldb.Collect(ctx, s.db, scanMessage, `SELECT `+messageColumns+` FROM webhook_messages
		WHERE app_id = ? AND (CAST(? AS BIGINT) = 0 OR seq < ?) AND (? = '' OR endpoint_id = ?)
			AND (? = '' OR state = ?) AND (? = '' OR event_type = ?)
			AND (CAST(? AS BIGINT) = 0 OR created_at >= ?) AND (CAST(? AS BIGINT) = 0 OR created_at < ?)
		ORDER BY seq DESC LIMIT ?`,
		appID, f.Cursor, f.Cursor, f.EndpointID, f.EndpointID, f.State, f.State, f.EventType, f.EventType,
		optMS(f.From), optMS(f.From), optMS(f.To), optMS(f.To), f.Limit)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(out) == f.Limit {
		next = strconv.FormatInt(out[len(out)-1].Seq, 10)
	}
	return out, next, nil
}

// Message returns one webhook message of appID with every delivery attempt.
func (s *sqlStore) Message(ctx context.Context, appID int64, id string) (*domain.WebhookMessage, []domain.WebhookAttempt, error) {
	m, err := scanMessage(s.db.QueryRow(ctx, `SELECT `+messageColumns+` FROM webhook_messages
		WHERE app_id = ? AND id = ?`, appID, id))
	if err != nil {
		return nil, nil, err
	}
	attempts, err := sqldb.Collect(ctx, s.db, func(r sqldb.Row) (domain.WebhookAttempt, error) {
		var a domain.WebhookAttempt
		var status sql.NullInt64
		var at int64
		if err := r.Scan(&a.Attempt, &status, &a.Error, &a.LatencyMS, &at); err != nil {
			return a, err
		}
		a.StatusCode, a.At = nullInt(status), FromMillis(at)
		return a, nil
	}, `SELECT attempt, status_code, coalesce(error, ''), latency_ms, at
		FROM webhook_attempts WHERE message_seq = ? ORDER BY attempt`, m.Seq)
	if err != nil {
		return nil, nil, err
	}
	return m, attempts, nil
}

// requeue is what putting a message back in the outbox sets besides its
// state: on PostgreSQL it also ends any node's lease on the message, so it
// is sent now (SQLite's one process holds no leases).
func requeue(d sqldb.Dialect) string {
	set := `state = 'pending', tries = 0, next_try_at = ?, updated_at = ?`
	if d == sqldb.Postgres {
		set += `, lease_node = NULL, lease_until = NULL`
	}
	return set
}

// Redeliver puts a message back in the outbox, due now, whatever its state.
// The outbox is data, not configuration: a data write.
func (s *sqlStore) Redeliver(ctx context.Context, appID int64, id string, now time.Time) error {
	return s.writeData(ctx, func(tx sqldb.Querier) error {
		return changedRows(tx.Exec(ctx, `UPDATE webhook_messages SET `+requeue(tx.Dialect())+`
			WHERE app_id = ? AND id = ?`, Millis(now), Millis(now), appID, id))
	})
}

// RecoverFailed puts every dead message of an endpoint created since then
// back in the outbox, due now, and says how many.
func (s *sqlStore) RecoverFailed(ctx context.Context, appID int64, endpointID string, since, now time.Time) (int64, error) {
	var n int64
	err := s.writeData(ctx, func(tx sqldb.Querier) error {
		var err error
		n, err = tx.Exec(ctx, `UPDATE webhook_messages SET `+requeue(tx.Dialect())+`
			WHERE app_id = ? AND endpoint_id = ? AND state = 'dead' AND created_at >= ?`,
			Millis(now), Millis(now), appID, endpointID, Millis(since))
		return err
	})
	return n, err
}
