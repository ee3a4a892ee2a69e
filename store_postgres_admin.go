package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"dialbox/internal/destinations"
	"dialbox/internal/sqldb"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The admin API's reads and writes on PostgreSQL: store_admin.go's, query
// for query. Configuration writes go through configWrite, so every node's
// configuration cache hears of them.

func isPgUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// pgChanged turns "no row was changed" into errNotFound.
func pgChanged(tag pgconn.CommandTag, err error) error {
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return errNotFound
	}
	return nil
}

// configWrite runs fn in a transaction of its own that changes
// configuration. Once it has committed this node's configuration cache is
// invalidated, and every other node's by the notification it sends at
// commit (docs/postgres.md#configuration-changes).
func (s *PostgresStore) configWrite(ctx context.Context, fn func(pgx.Tx) error) error {
	defer s.catalog.invalidate()
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, configChannel, s.node)
		return err
	})
}

// dataWrite runs fn in a transaction of its own that changes no
// configuration.
func (s *PostgresStore) dataWrite(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}

// pgxWrite is sqlStore's write over one of configWrite and dataWrite.
func pgxWrite(write func(context.Context, func(pgx.Tx) error) error) func(context.Context, func(sqldb.Querier) error) error {
	return func(ctx context.Context, fn func(sqldb.Querier) error) error {
		return write(ctx, func(tx pgx.Tx) error { return fn(sqldb.PGX(tx)) })
	}
}

// pgQuery reads every row of a query into a list.
func pgQuery[T any](ctx context.Context, s *PostgresStore, scan func(pgx.Rows) (T, error), query string, args ...any) ([]T, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func (s *PostgresStore) metricsRows(ctx context.Context, query string, row func(scan func(...any) error) error) error {
	rows, err := s.pool.Query(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

// ---- admin settings ----

func (s *PostgresStore) AdminSetting(ctx context.Context, key string) (string, error) {
	var v string
	err := s.pool.QueryRow(ctx, `SELECT value FROM admin_settings WHERE key = $1`, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return v, err
}

func (s *PostgresStore) SetAdminSetting(ctx context.Context, key, value string) error {
	return s.configWrite(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO admin_settings (key, value) VALUES ($1, $2)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
		return err
	})
}

func (s *PostgresStore) DeleteAdminSettings(ctx context.Context, keys ...string) error {
	return s.configWrite(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM admin_settings WHERE key = ANY($1)`, keys)
		return err
	})
}

func (s *PostgresStore) RepointDemoSink(ctx context.Context, appID int64, url string, now time.Time) error {
	return s.configWrite(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE webhook_endpoints SET url = $1, updated_at = $2
			WHERE app_id = $3 AND url LIKE '%/sink/demo' AND url <> $1`, url, ms(now), appID)
		return err
	})
}

// ---- applications ----

func (s *PostgresStore) ListApps(ctx context.Context) ([]*Application, error) {
	return pgQuery(ctx, s, func(r pgx.Rows) (*Application, error) { return scanApp(r) },
		`SELECT `+appColumns+` FROM applications ORDER BY id`)
}

func (s *PostgresStore) CreateApp(ctx context.Context, name, apiKey, apiSecret string, rules destinations.Rules, now time.Time) (*Application, error) {
	allow, deny := destinationsJSON(rules)
	err := s.configWrite(ctx, func(tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, `INSERT INTO applications (name, api_key, api_secret, created_at, updated_at, destination_allow, destination_deny)
			VALUES ($1, $2, $3, $4, $4, $5, $6) RETURNING id`, name, apiKey, apiSecret, ms(now), allow, deny).Scan(&id)
		if isPgUniqueViolation(err) {
			return errConflict
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO wallets (app_id, prepaid, updated_at) VALUES ($1, 0, $2)`, id, ms(now))
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.AppByKey(ctx, apiKey)
}

func (s *PostgresStore) UpdateApp(ctx context.Context, apiKey string, p AppPatch, now time.Time) (*Application, error) {
	var disabled *int
	if p.Disabled != nil {
		d := boolInt(*p.Disabled)
		disabled = &d
	}
	allow, deny := p.destinationColumns()
	err := s.configWrite(ctx, func(tx pgx.Tx) error {
		return pgChanged(tx.Exec(ctx, `UPDATE applications SET name = coalesce($1, name), api_secret = coalesce($2, api_secret),
			disabled = coalesce($3, disabled), destination_allow = coalesce($4, destination_allow),
			destination_deny = coalesce($5, destination_deny), updated_at = $6 WHERE api_key = $7`,
			p.Name, p.APISecret, disabled, allow, deny, ms(now), apiKey))
	})
	if err != nil {
		return nil, err
	}
	return s.AppByKey(ctx, apiKey)
}

func (s *PostgresStore) DeleteApp(ctx context.Context, apiKey string) error {
	return s.deleteWithRecordings(ctx, `SELECT id FROM calls WHERE recording_bytes > 0
		AND app_id = (SELECT id FROM applications WHERE api_key = $1)`, []any{apiKey}, func(tx pgx.Tx) error {
		return pgChanged(tx.Exec(ctx, `DELETE FROM applications WHERE api_key = $1`, apiKey))
	})
}

// deleteWithRecordings is store_recordings.go's on PostgreSQL: the delete
// is a configuration write, and the recordings of the calls it deleted go
// once it has committed.
func (s *PostgresStore) deleteWithRecordings(ctx context.Context, recorded string, args []any, del func(tx pgx.Tx) error) error {
	var ids []string
	err := s.configWrite(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, recorded, args...)
		if err != nil {
			return err
		}
		if ids, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		return del(tx)
	})
	if err == nil {
		s.recordings.Remove(ids)
	}
	return err
}

// ---- wallets ----

func (s *PostgresStore) UpdateWallet(ctx context.Context, appID int64, change func(*Wallet), now time.Time) (Wallet, error) {
	var w Wallet
	err := s.configWrite(ctx, func(tx pgx.Tx) error {
		var err error
		// FOR UPDATE: a call charged meanwhile, on any node, waits for this.
		if w, err = scanWallet(sqldb.PGXRow(tx.QueryRow(ctx, sqldb.Numbered(walletQuery+` FOR UPDATE`), appID))); err != nil {
			return err
		}
		change(&w)
		_, err = tx.Exec(ctx, `INSERT INTO wallets (app_id, prepaid, balance, expires_at, price_per_call, price_per_minute, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (app_id) DO UPDATE SET prepaid = excluded.prepaid, balance = excluded.balance,
				expires_at = excluded.expires_at, price_per_call = excluded.price_per_call,
				price_per_minute = excluded.price_per_minute, updated_at = excluded.updated_at`,
			appID, boolInt(w.Prepaid), w.Balance, nullMS(w.ExpiresAt), w.PricePerCall, w.PricePerMinute, ms(now))
		return err
	})
	return w, err
}

func (s *PostgresStore) TopUp(ctx context.Context, appID int64, amount int64, now time.Time) error {
	return s.dataWrite(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO wallets (app_id, prepaid, balance, updated_at) VALUES ($1, 0, $2, $3)
			ON CONFLICT (app_id) DO UPDATE SET balance = wallets.balance + excluded.balance, updated_at = excluded.updated_at`,
			appID, amount, ms(now))
		return err
	})
}

// ---- hotline pools ----

func (s *PostgresStore) Pools(ctx context.Context, appID int64, key string) ([]*Pool, error) {
	rows, err := s.pool.Query(ctx, `SELECT p.key, p.trunk, p.created_at, h.number, h.enabled <> 0
		FROM hotline_pools p LEFT JOIN hotlines h ON h.app_id = p.app_id AND h.pool_key = p.key
		WHERE p.app_id = $1 AND ($2 = '' OR p.key = $2)
		ORDER BY p.key COLLATE "C", h.number COLLATE "C"`, appID, key)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*Pool{}
	for rows.Next() {
		var k, trunk string
		var created int64
		var number *string
		var enabled *bool
		if err := rows.Scan(&k, &trunk, &created, &number, &enabled); err != nil {
			return nil, err
		}
		if len(out) == 0 || out[len(out)-1].Key != k {
			out = append(out, &Pool{Key: k, Trunk: trunk, Numbers: []Hotline{}, CreatedAt: fromMS(created)})
		}
		if number != nil {
			p := out[len(out)-1]
			p.Numbers = append(p.Numbers, Hotline{Number: *number, Enabled: enabled != nil && *enabled})
		}
	}
	return out, rows.Err()
}

func (s *PostgresStore) poolTrunks(ctx context.Context) ([]poolTrunk, error) {
	return pgQuery(ctx, s, func(r pgx.Rows) (poolTrunk, error) {
		var p poolTrunk
		err := r.Scan(&p.App, &p.Key, &p.Trunk)
		return p, err
	}, `SELECT a.api_key, p.key, p.trunk FROM hotline_pools p
		JOIN applications a ON a.id = p.app_id WHERE p.trunk <> '' ORDER BY a.id, p.key COLLATE "C"`)
}

func (s *PostgresStore) CreatePool(ctx context.Context, appID int64, key, trunk string, numbers []string, now time.Time) error {
	return s.configWrite(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO hotline_pools (app_id, key, trunk, created_at) VALUES ($1, $2, $3, $4)`,
			appID, key, trunk, ms(now))
		if isPgUniqueViolation(err) {
			return errConflict
		}
		if err != nil {
			return err
		}
		return pgInsertHotlines(ctx, tx, appID, key, numbers)
	})
}

func pgInsertHotlines(ctx context.Context, tx pgx.Tx, appID int64, pool string, numbers []string) error {
	_, err := tx.Exec(ctx, `INSERT INTO hotlines (app_id, pool_key, number)
		SELECT $1, $2, n FROM unnest($3::text[]) WITH ORDINALITY AS u(n, i) ORDER BY i ON CONFLICT DO NOTHING`,
		appID, pool, numbers)
	return err
}

func (s *PostgresStore) DeletePool(ctx context.Context, appID int64, key string) error {
	return s.configWrite(ctx, func(tx pgx.Tx) error {
		return pgChanged(tx.Exec(ctx, `DELETE FROM hotline_pools WHERE app_id = $1 AND key = $2`, appID, key))
	})
}

func (s *PostgresStore) AddHotlines(ctx context.Context, appID int64, pool string, numbers []string) error {
	return s.configWrite(ctx, func(tx pgx.Tx) error {
		var ok bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM hotline_pools WHERE app_id = $1 AND key = $2)`,
			appID, pool).Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return errNotFound
		}
		return pgInsertHotlines(ctx, tx, appID, pool, numbers)
	})
}

func (s *PostgresStore) RemoveHotline(ctx context.Context, appID int64, pool, number string) error {
	return s.configWrite(ctx, func(tx pgx.Tx) error {
		return pgChanged(tx.Exec(ctx, `DELETE FROM hotlines WHERE app_id = $1 AND pool_key = $2 AND number = $3`,
			appID, pool, number))
	})
}

func (s *PostgresStore) SetHotlineEnabled(ctx context.Context, appID int64, pool, number string, enabled bool) error {
	return s.configWrite(ctx, func(tx pgx.Tx) error {
		return pgChanged(tx.Exec(ctx, `UPDATE hotlines SET enabled = $1 WHERE app_id = $2 AND pool_key = $3 AND number = $4`,
			boolInt(enabled), appID, pool, number))
	})
}

// ---- scenarios ----

func (s *PostgresStore) CreateScenario(ctx context.Context, sc *Scenario, now time.Time) error {
	fields, config, scriptJSON, err := scenarioJSONColumns(sc)
	if err != nil {
		return err
	}
	return s.configWrite(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO scenarios (app_id, id, name, description, status, content, script, personalized_fields, call_config, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)`,
			sc.AppID, sc.ID, sc.Name, sc.Description, sc.Status, sc.Content, scriptJSON, fields, config, ms(now))
		if isPgUniqueViolation(err) {
			return errConflict
		}
		return err
	})
}

func (s *PostgresStore) UpdateScenario(ctx context.Context, sc *Scenario, now time.Time) error {
	fields, config, scriptJSON, err := scenarioJSONColumns(sc)
	if err != nil {
		return err
	}
	return s.configWrite(ctx, func(tx pgx.Tx) error {
		return pgChanged(tx.Exec(ctx, `UPDATE scenarios SET name = $1, description = $2, content = $3, script = $4,
			personalized_fields = $5, call_config = $6, updated_at = $7 WHERE app_id = $8 AND id = $9`,
			sc.Name, sc.Description, sc.Content, scriptJSON, fields, config, ms(now), sc.AppID, sc.ID))
	})
}

func (s *PostgresStore) DeleteScenario(ctx context.Context, appID int64, id string) error {
	return s.deleteWithRecordings(ctx, `SELECT c.id FROM calls c JOIN contacts k ON k.seq = c.contact_seq
		WHERE c.recording_bytes > 0 AND k.app_id = $1 AND k.scenario_id = $2`, []any{appID, id}, func(tx pgx.Tx) error {
		return pgChanged(tx.Exec(ctx, `DELETE FROM scenarios WHERE app_id = $1 AND id = $2`, appID, id))
	})
}

func (s *PostgresStore) TransitionScenario(ctx context.Context, appID int64, id string, from []string, to string, now time.Time) error {
	return s.configWrite(ctx, func(tx pgx.Tx) error {
		err := pgChanged(tx.Exec(ctx, `UPDATE scenarios SET status = $1, updated_at = $2
			WHERE app_id = $3 AND id = $4 AND status = ANY($5)`, to, ms(now), appID, id, from))
		if !errors.Is(err, errNotFound) {
			return err
		}
		var current string
		err = tx.QueryRow(ctx, `SELECT status FROM scenarios WHERE app_id = $1 AND id = $2`, appID, id).Scan(&current)
		if errors.Is(err, pgx.ErrNoRows) {
			return errNotFound
		}
		if err != nil {
			return err
		}
		return errBadTransition{current}
	})
}

// ---- campaigns ----

func (s *PostgresStore) ListCampaigns(ctx context.Context, appID int64, scenarioID string) ([]*Campaign, error) {
	return pgQuery(ctx, s, func(r pgx.Rows) (*Campaign, error) { return scanCampaign(r) },
		`SELECT `+campaignColumns+` FROM campaigns
		WHERE app_id = $1 AND ($2 = '' OR scenario_id = $2) ORDER BY created_at, id COLLATE "C"`, appID, scenarioID)
}

func (s *PostgresStore) CreateCampaign(ctx context.Context, c *Campaign, now time.Time) error {
	return s.configWrite(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO campaigns (app_id, id, name, scenario_id, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $5)`, c.AppID, c.ID, c.Name, c.ScenarioID, ms(now))
		if isPgUniqueViolation(err) {
			return errConflict
		}
		return err
	})
}

func (s *PostgresStore) SetCampaignPaused(ctx context.Context, appID int64, id string, paused bool, now time.Time) error {
	return s.configWrite(ctx, func(tx pgx.Tx) error {
		return pgChanged(tx.Exec(ctx, `UPDATE campaigns SET paused = $1, updated_at = $2 WHERE app_id = $3 AND id = $4`,
			boolInt(paused), ms(now), appID, id))
	})
}

// ---- webhook endpoints ----

const pgEndpointColumns = `id, url, secret, events, enabled <> 0, created_at, updated_at`

func (s *PostgresStore) Endpoints(ctx context.Context, appID int64) ([]*WebhookEndpoint, error) {
	return pgQuery(ctx, s, func(r pgx.Rows) (*WebhookEndpoint, error) { return scanEndpoint(r) },
		`SELECT `+pgEndpointColumns+` FROM webhook_endpoints WHERE app_id = $1 ORDER BY created_at, id COLLATE "C"`, appID)
}

func (s *PostgresStore) Endpoint(ctx context.Context, appID int64, id string) (*WebhookEndpoint, error) {
	return scanEndpoint(sqldb.PGXRow(s.pool.QueryRow(ctx, `SELECT `+pgEndpointColumns+` FROM webhook_endpoints
		WHERE app_id = $1 AND id = $2`, appID, id)))
}

func (s *PostgresStore) SaveEndpoint(ctx context.Context, appID int64, e *WebhookEndpoint, now time.Time) error {
	events, err := marshalJSON(e.Events)
	if err != nil {
		return err
	}
	return s.configWrite(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO webhook_endpoints (id, app_id, url, secret, events, enabled, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
			ON CONFLICT (id) DO UPDATE SET url = excluded.url, secret = excluded.secret, events = excluded.events,
				enabled = excluded.enabled, updated_at = excluded.updated_at
			WHERE webhook_endpoints.app_id = excluded.app_id`,
			e.ID, appID, e.URL, e.Secret, string(events), boolInt(e.Enabled), ms(now))
		return err
	})
}

func (s *PostgresStore) DeleteEndpoint(ctx context.Context, appID int64, id string) error {
	return s.configWrite(ctx, func(tx pgx.Tx) error {
		return pgChanged(tx.Exec(ctx, `DELETE FROM webhook_endpoints WHERE app_id = $1 AND id = $2`, appID, id))
	})
}

// ---- contacts, calls, imports ----

func (s *PostgresStore) Contacts(ctx context.Context, appID int64, f ContactFilter) ([]*ContactRecord, string, error) {
	return contactsPage(appID, f, func(q string, args []any) interface{ Scan(...any) error } {
		return sqldb.PGXRow(s.pool.QueryRow(ctx, sqldb.Numbered(q), args...))
	}, func(q string, args []any) ([]*ContactRecord, error) {
		return pgQuery(ctx, s, func(r pgx.Rows) (*ContactRecord, error) { return scanContact(r) }, sqldb.Numbered(q), args...)
	})
}

func (s *PostgresStore) Contact(ctx context.Context, appID int64, id string) (*ContactRecord, []CallRecord, error) {
	c, err := scanContact(sqldb.PGXRow(s.pool.QueryRow(ctx, `SELECT `+contactColumns+` FROM contacts WHERE app_id = $1 AND id = $2`, appID, id)))
	if err != nil {
		return nil, nil, err
	}
	calls, err := pgQuery(ctx, s, func(r pgx.Rows) (CallRecord, error) {
		var k CallRecord
		var cause, answered, ended sql.NullInt64
		var started int64
		var steps string
		if err := r.Scan(&k.ID, &k.Attempt, &k.Hotline, &k.State, &k.Outcome, &cause, &started, &answered, &ended,
			&k.Duration, &k.Cost, &k.AnsweredBy, &k.Digits, &k.Result, &steps, &k.recorded); err != nil {
			return k, err
		}
		k.StartedAt, k.Steps = fromMS(started), json.RawMessage(steps)
		k.Cause, k.AnsweredAt, k.EndedAt = nullInt(cause), nullTime(answered), nullTime(ended)
		return k, nil
	}, `SELECT id, attempt, hotline, state, coalesce(outcome, ''), cause,
		started_at, answered_at, ended_at, duration, cost, answered_by, digits, result, steps, recording_bytes > 0
		FROM calls WHERE contact_seq = $1 ORDER BY attempt`, c.seq)
	return c, calls, err
}

// Imports orders ties of created_at by seq, the order they were made in
// (SQLite's rowid).
func (s *PostgresStore) Imports(ctx context.Context, appID int64, scenarioID string, limit int) ([]*ImportRecord, error) {
	return pgQuery(ctx, s, func(r pgx.Rows) (*ImportRecord, error) { return scanImport(r) },
		`SELECT `+importColumns+` FROM imports
		WHERE app_id = $1 AND ($2 = '' OR scenario_id = $2) ORDER BY created_at DESC, seq DESC LIMIT $3`,
		appID, scenarioID, limit)
}

func (s *PostgresStore) ImportByID(ctx context.Context, appID int64, id string) (*ImportRecord, error) {
	return scanImport(sqldb.PGXRow(s.pool.QueryRow(ctx, `SELECT `+importColumns+` FROM imports WHERE app_id = $1 AND id = $2`, appID, id)))
}

// ---- webhook messages ----

func (s *PostgresStore) Messages(ctx context.Context, appID int64, f MessageFilter) ([]*WebhookMessage, string, error) {
	out, err := pgQuery(ctx, s, func(r pgx.Rows) (*WebhookMessage, error) { return scanMessage(r) },
		`SELECT `+messageColumns+` FROM webhook_messages
		WHERE app_id = $1 AND ($2::bigint = 0 OR seq < $2) AND ($3 = '' OR endpoint_id = $3)
			AND ($4 = '' OR state = $4) AND ($5 = '' OR event_type = $5)
			AND ($6::bigint = 0 OR created_at >= $6) AND ($7::bigint = 0 OR created_at < $7)
		ORDER BY seq DESC LIMIT $8`,
		appID, f.Cursor, f.EndpointID, f.State, f.EventType, optMS(f.From), optMS(f.To), f.Limit)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(out) == f.Limit {
		next = strconv.FormatInt(out[len(out)-1].seq, 10)
	}
	return out, next, nil
}

func (s *PostgresStore) Message(ctx context.Context, appID int64, id string) (*WebhookMessage, []WebhookAttempt, error) {
	m, err := scanMessage(sqldb.PGXRow(s.pool.QueryRow(ctx, `SELECT `+messageColumns+` FROM webhook_messages
		WHERE app_id = $1 AND id = $2`, appID, id)))
	if err != nil {
		return nil, nil, err
	}
	attempts, err := pgQuery(ctx, s, func(r pgx.Rows) (WebhookAttempt, error) {
		var a WebhookAttempt
		var status sql.NullInt64
		var at int64
		if err := r.Scan(&a.Attempt, &status, &a.Error, &a.LatencyMS, &at); err != nil {
			return a, err
		}
		a.StatusCode, a.At = nullInt(status), fromMS(at)
		return a, nil
	}, `SELECT attempt, status_code, coalesce(error, ''), latency_ms, at
		FROM webhook_attempts WHERE message_seq = $1 ORDER BY attempt`, m.seq)
	return m, attempts, err
}

// Redeliver also ends any lease on the message, so it is sent now.
func (s *PostgresStore) Redeliver(ctx context.Context, appID int64, id string, now time.Time) error {
	return s.dataWrite(ctx, func(tx pgx.Tx) error {
		return pgChanged(tx.Exec(ctx, `UPDATE webhook_messages SET state = 'pending', tries = 0, next_try_at = $1, updated_at = $1,
			lease_node = NULL, lease_until = NULL WHERE app_id = $2 AND id = $3`, ms(now), appID, id))
	})
}

func (s *PostgresStore) RecoverFailed(ctx context.Context, appID int64, endpointID string, since, now time.Time) (int64, error) {
	var n int64
	err := s.dataWrite(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE webhook_messages SET state = 'pending', tries = 0, next_try_at = $1, updated_at = $1,
			lease_node = NULL, lease_until = NULL
			WHERE app_id = $2 AND endpoint_id = $3 AND state = 'dead' AND created_at >= $4`,
			ms(now), appID, endpointID, ms(since))
		n = tag.RowsAffected()
		return err
	})
	return n, err
}

// ---- reset ----

func (s *PostgresStore) Reset(ctx context.Context, apps []*FixtureApp, now time.Time) error {
	return s.deleteWithRecordings(ctx, `SELECT id FROM calls WHERE recording_bytes > 0`, nil, func(tx pgx.Tx) error {
		for _, t := range resetTables {
			if _, err := tx.Exec(ctx, `DELETE FROM `+t); err != nil {
				return fmt.Errorf("reset %s: %w", t, err)
			}
		}
		for _, fa := range apps {
			if err := applyFixtureApp(ctx, pgFixtureTx(ctx, tx, now), fa, now); err != nil {
				return err
			}
		}
		return nil
	})
}
