package store

import (
	"context"
	"database/sql"
	"strings"

	"dialbox/internal/domain"
	"dialbox/internal/sqldb"
)

// ContactResults returns up to limit contacts of a results export
// (docs/admin.md#results-as-csv), oldest first from the one after seq
// after, each with its last call: one page, so an export of millions is
// read a page at a time, never held whole.
func (s *sqlStore) ContactResults(ctx context.Context, appID int64, f domain.ResultFilter, after int64, limit int) ([]domain.ContactResult, error) {
	where, args := []string{"c.app_id = ?", "c.scenario_id = ?", "c.seq > ?"}, []any{appID, f.ScenarioID, after}
	add := func(cond string, v any) {
		where = append(where, cond)
		args = append(args, v)
	}
	for _, c := range []struct{ col, v string }{{"c.campaign_id", f.CampaignID}, {"c.state", f.State}, {"c.outcome", f.Outcome}} {
		if c.v != "" {
			add(c.col+" = ?", c.v)
		}
	}
	if !f.From.IsZero() {
		add("c.created_at >= ?", Millis(f.From))
	}
	if !f.To.IsZero() {
		add("c.created_at < ?", Millis(f.To))
	}
	// The contact's columns are contactColumns, of the table c. The last
	// call is the one of the highest attempt: one probe of the
	// calls' (contact_seq, attempt) index per contact.
	return sqldb.Collect(ctx, s.db, scanResult, `SELECT c.seq, c.id, c.scenario_id, coalesce(c.campaign_id, ''), c.import_id, c.phone,
		c.fields, c.state, c.attempts, c.next_attempt_at, coalesce(c.outcome, ''), c.created_at, c.updated_at,
		coalesce(k.id, ''), coalesce(k.started_at, 0), k.answered_at, k.ended_at, coalesce(k.duration, 0),
		coalesce(k.cost, 0), coalesce(k.answered_by, ''), coalesce(k.digits, ''), coalesce(k.result, ''),
		coalesce(k.recording_bytes, 0) > 0
		FROM contacts c LEFT JOIN calls k ON k.contact_seq = c.seq
			AND k.attempt = (SELECT max(attempt) FROM calls WHERE contact_seq = c.seq)
		WHERE `+strings.Join(where, " AND ")+` ORDER BY c.seq LIMIT ?`, append(args, limit)...)
}

func scanResult(row sqldb.Row) (domain.ContactResult, error) {
	var k domain.CallRecord
	var started int64
	var answered, ended sql.NullInt64
	c, err := scanContactWith(row, &k.ID, &started, &answered, &ended, &k.Duration, &k.Cost, &k.AnsweredBy, &k.Digits,
		&k.Result, &k.Recorded)
	if err != nil {
		return domain.ContactResult{}, err
	}
	r := domain.ContactResult{ContactRecord: *c}
	if k.ID != "" {
		k.StartedAt, k.AnsweredAt, k.EndedAt = FromMillis(started), nullTime(answered), nullTime(ended)
		r.Last = &k
	}
	return r, nil
}
