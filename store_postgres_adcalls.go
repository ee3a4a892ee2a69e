package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Advertising calls on PostgreSQL (docs/compliance.md#advertising-calls):
// a tenant's settings (configuration: cached, and every node told of a
// change), its answered advertising calls by number, the contacts the
// rules delay. The per-number limit across nodes is enforced in the claim
// (store_postgres_engine.go).

func (s *PostgresStore) AdSettings(ctx context.Context, appID int64) (AdSettings, error) {
	return cached(&s.catalog, fmt.Sprintf("advertising\x00%d", appID), func() (AdSettings, error) {
		return pgAdSettings(ctx, s.pool, appID)
	})
}

// pgAdSettings reads a tenant's settings, the decree's when it set none.
func pgAdSettings(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, appID int64) (AdSettings, error) {
	a := legalAdSettings()
	err := q.QueryRow(ctx, `SELECT max_calls_per_number_per_day, hours_start, hours_end
		FROM advertising_settings WHERE app_id = $1`, appID).Scan(&a.MaxCallsPerNumberPerDay, &a.Start, &a.End)
	if errors.Is(err, pgx.ErrNoRows) {
		err = nil
	}
	return a, err
}

func (s *PostgresStore) SetAdSettings(ctx context.Context, appID int64, a AdSettings, now time.Time) error {
	return s.configWrite(ctx, func(tx pgx.Tx) error { return pgSetAdSettings(ctx, tx, appID, a, now) })
}

// pgSetAdSettings stores a tenant's settings, writing only a change.
func pgSetAdSettings(ctx context.Context, tx pgx.Tx, appID int64, a AdSettings, now time.Time) error {
	_, err := tx.Exec(ctx, `INSERT INTO advertising_settings (app_id, max_calls_per_number_per_day, hours_start, hours_end, updated_at)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (app_id) DO UPDATE SET max_calls_per_number_per_day = excluded.max_calls_per_number_per_day,
			hours_start = excluded.hours_start, hours_end = excluded.hours_end, updated_at = excluded.updated_at
		WHERE (advertising_settings.max_calls_per_number_per_day, advertising_settings.hours_start, advertising_settings.hours_end)
			IS DISTINCT FROM (excluded.max_calls_per_number_per_day, excluded.hours_start, excluded.hours_end)`,
		appID, a.MaxCallsPerNumberPerDay, a.Start, a.End, ms(now))
	return err
}

func (s *PostgresStore) answeredAdCalls(ctx context.Context, appID int64, phones []string, since time.Time) (map[string][]time.Time, error) {
	out := map[string][]time.Time{}
	if len(phones) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT ad_phone, answered_at FROM calls
		WHERE app_id = $1 AND answered_at > $2 AND ad_phone = ANY($3)
			AND ad_phone IS NOT NULL AND answered_at IS NOT NULL`, appID, ms(since), phones)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var p string
		var at int64
		if err := rows.Scan(&p, &at); err != nil {
			return nil, err
		}
		out[p] = append(out[p], fromMS(at))
	}
	return out, rows.Err()
}

func (s *PostgresStore) delayContacts(ctx context.Context, delays []callDelay, now time.Time) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return delayContactsTx(pgTx(ctx, tx, nil), delays, now) })
}

func (s *PostgresStore) adTiming(ctx context.Context, appID int64, c *ContactRecord, since time.Time) (contactTiming, error) {
	var timing contactTiming
	var reason string
	var until sql.NullInt64
	err := s.pool.QueryRow(ctx, `SELECT reason, until FROM call_blocks WHERE contact_id = $1 ORDER BY seq DESC LIMIT 1`,
		c.ID).Scan(&reason, &until)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return timing, err
	case until.Valid:
		timing.Delay = &Wait{Reason: reason, Until: nullTime(until)}
	}
	answered, err := s.answeredAdCalls(ctx, appID, []string{c.Phone}, since)
	if err != nil {
		return timing, err
	}
	timing.Answered = answered[c.Phone]
	err = s.pool.QueryRow(ctx, `SELECT count(*) FROM calls WHERE state = 'dialing' AND app_id = $1 AND ad_phone = $2`,
		appID, c.Phone).Scan(&timing.Up)
	return timing, err
}
