package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"dialbox/internal/domain"
	"dialbox/internal/sqldb"
)

// Advertising calls in the database (docs/compliance.md#advertising-calls):
// a tenant's settings, its answered advertising calls by number, the
// contacts the rules delay, and the explanation of a contact's wait, for
// both stores. The per-number limit across PostgreSQL's nodes is its claim's
// own (postgres_engine.go).

// AdSettings are a tenant's advertising settings: its own, or the decree's.
func (s *sqlStore) AdSettings(ctx context.Context, appID int64) (domain.AdSettings, error) {
	return adSettingsOf(ctx, s.db, appID)
}

// adSettingsOf reads a tenant's settings, the decree's when it set none;
// PostgreSQL's claim reads them in its transaction.
func adSettingsOf(ctx context.Context, q sqldb.Querier, appID int64) (domain.AdSettings, error) {
	a := domain.LegalAdSettings()
	err := q.QueryRow(ctx, `SELECT max_calls_per_number_per_day, hours_start, hours_end
		FROM advertising_settings WHERE app_id = ?`, appID).Scan(&a.MaxCallsPerNumberPerDay, &a.Start, &a.End)
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	return a, err
}

// SetAdSettings stores a tenant's checked advertising settings.
func (s *sqlStore) SetAdSettings(ctx context.Context, appID int64, a domain.AdSettings, now time.Time) error {
	return s.writeConfig(ctx, func(tx sqldb.Querier) error { return setAdSettingsTx(ctx, tx, appID, a, now) })
}

// setAdSettingsTx stores a tenant's settings, writing only a change.
func setAdSettingsTx(ctx context.Context, tx sqldb.Querier, appID int64, a domain.AdSettings, now time.Time) error {
	_, err := tx.Exec(ctx, `INSERT INTO advertising_settings (app_id, max_calls_per_number_per_day, hours_start, hours_end, updated_at)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (app_id) DO UPDATE SET max_calls_per_number_per_day = excluded.max_calls_per_number_per_day,
			hours_start = excluded.hours_start, hours_end = excluded.hours_end, updated_at = excluded.updated_at
		WHERE advertising_settings.max_calls_per_number_per_day <> excluded.max_calls_per_number_per_day
			OR advertising_settings.hours_start <> excluded.hours_start OR advertising_settings.hours_end <> excluded.hours_end`,
		appID, a.MaxCallsPerNumberPerDay, a.Start, a.End, Millis(now))
	return err
}

// AnsweredAdCalls are, for each of phones, when the tenant's advertising
// calls to it answered after since: one range of calls_ad_answered per
// number (the index's own condition repeated, so PostgreSQL takes it too),
// a few hundred numbers a query.
func (s *sqlStore) AnsweredAdCalls(ctx context.Context, appID int64, phones []string, since time.Time) (map[string][]time.Time, error) {
	out := map[string][]time.Time{}
	const batch = 500
	for from := 0; from < len(phones); from += batch {
		in, args := sqldb.In(s.db.Dialect(), "ad_phone", phones[from:min(from+batch, len(phones))])
		err := s.db.Query(ctx, `SELECT ad_phone, answered_at FROM calls
			WHERE app_id = ? AND answered_at > ? AND ad_phone IS NOT NULL AND answered_at IS NOT NULL AND `+in,
			append([]any{appID, Millis(since)}, args...), func(scan func(...any) error) error {
				var p string
				var at int64
				if err := scan(&p, &at); err != nil {
					return err
				}
				out[p] = append(out[p], FromMillis(at))
				return nil
			})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// DelayContacts moves each delayed contact's next attempt, with its audit
// row, in one commit. A contact no longer queued is left alone.
func (s *sqlStore) DelayContacts(ctx context.Context, delays []domain.CallDelay, now time.Time) error {
	return s.writeData(ctx, func(tx sqldb.Querier) error {
		for _, d := range delays {
			var id, scenario string
			err := tx.QueryRow(ctx, `UPDATE contacts SET next_attempt_at = ?, updated_at = ?
				WHERE seq = ? AND state = 'queued' RETURNING id, scenario_id`, Millis(d.Until), Millis(now), d.Contact.Seq).Scan(&id, &scenario)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO call_blocks (app_id, scenario_id, contact_id, phone, reason, at, until)
				VALUES (?, ?, ?, ?, ?, ?, ?)`, d.AppID, scenario, id, d.Contact.Phone, d.Reason, Millis(now), Millis(d.Until)); err != nil {
				return err
			}
		}
		return nil
	})
}

// AdTiming is what the rules need of a contact's past: its last delay,
// the tenant's answered advertising calls to its number since since, and
// those up now.
func (s *sqlStore) AdTiming(ctx context.Context, appID int64, c *domain.ContactRecord, since time.Time) (domain.ContactTiming, error) {
	var timing domain.ContactTiming
	var reason string
	var until sql.NullInt64
	err := s.db.QueryRow(ctx, `SELECT reason, until FROM call_blocks WHERE contact_id = ? ORDER BY seq DESC LIMIT 1`,
		c.ID).Scan(&reason, &until)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return timing, err
	case until.Valid:
		timing.Delay = &domain.Wait{Reason: reason, Until: nullTime(until)}
	}
	answered, err := s.AnsweredAdCalls(ctx, appID, []string{c.Phone}, since)
	if err != nil {
		return timing, err
	}
	timing.Answered = answered[c.Phone]
	err = s.db.QueryRow(ctx, `SELECT count(*) FROM calls WHERE state = 'dialing' AND app_id = ? AND ad_phone = ?`,
		appID, c.Phone).Scan(&timing.Up)
	return timing, err
}
