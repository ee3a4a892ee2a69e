package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"dialbox/internal/domain"
	"dialbox/internal/sqldb"
)

// The admin API's reads of contacts, their calls and imports, written once
// for both stores (docs/architecture.md#one-query-layer).

const contactColumns = `seq, id, scenario_id, coalesce(campaign_id, ''), import_id, phone, fields, state, attempts,
	next_attempt_at, coalesce(outcome, ''), created_at, updated_at`

func scanContact(row sqldb.Row) (*domain.ContactRecord, error) { return scanContactWith(row) }

// scanContactWith reads contactColumns, then the query's further columns
// into more.
func scanContactWith(row sqldb.Row, more ...any) (*domain.ContactRecord, error) {
	var c domain.ContactRecord
	var fields string
	var next, created, updated int64
	if err := scanErr(row.Scan(append([]any{&c.Seq, &c.ID, &c.ScenarioID, &c.CampaignID, &c.ImportID, &c.Phone, &fields, &c.State, &c.Attempts,
		&next, &c.Outcome, &created, &updated}, more...)...)); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(fields), &c.Fields); err != nil {
		return nil, fmt.Errorf("contact %s fields: %w", c.ID, err)
	}
	c.NextAttemptAt, c.CreatedAt, c.UpdatedAt = FromMillis(next), FromMillis(created), FromMillis(updated)
	return &c, nil
}

// optMS is 0 for the zero time, so "? = 0 OR ..." skips an unset bound.
func optMS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return Millis(t)
}

// Contacts returns one page of contacts, newest first, and the cursor of the
// next page ("" on the last one). Only the filters given are in the query,
// so the database can use the index of the phone (or of the application
// alone).
func (s *sqlStore) Contacts(ctx context.Context, appID int64, f domain.ContactFilter) ([]*domain.ContactRecord, string, error) {
	where, args := []string{"app_id = ?"}, []any{appID}
	add := func(cond string, v any) {
		where = append(where, cond)
		args = append(args, v)
	}
	if f.Cursor != 0 {
		add("seq < ?", f.Cursor)
	}
	// The scan window: the seq below which this page stops looking.
	var floor, scanned int64
	filtered := f.ScenarioID != "" || f.CampaignID != "" || f.State != "" || f.Outcome != "" || !f.From.IsZero() || !f.To.IsZero()
	if f.ScanLimit > 0 && f.Phone == "" && filtered { // unfiltered, or by phone, an index finds the page at once
		err := s.db.QueryRow(ctx, `SELECT coalesce(min(seq), 0), count(*) FROM (SELECT seq FROM contacts
			WHERE `+strings.Join(where, " AND ")+` ORDER BY seq DESC LIMIT ?) AS w`, append(args, f.ScanLimit)...).Scan(&floor, &scanned)
		if err != nil {
			return nil, "", err
		}
		add("seq >= ?", floor)
	}
	if f.Phone != "" && s.phonesBehind {
		where = append(where, "seq IN ("+phoneSeqs+")")
		args = append(args, appID, f.Phone, appID, f.Phone)
	}
	for _, c := range []struct{ col, v string }{{"scenario_id", f.ScenarioID}, {"campaign_id", f.CampaignID},
		{"state", f.State}, {"outcome", f.Outcome}, {"phone", f.Phone}} {
		if c.v != "" {
			add(c.col+" = ?", c.v)
		}
	}
	if !f.From.IsZero() {
		add("created_at >= ?", Millis(f.From))
	}
	if !f.To.IsZero() {
		add("created_at < ?", Millis(f.To))
	}
	out, err := sqldb.Collect(ctx, s.db, scanContact, `SELECT `+contactColumns+` FROM contacts
		WHERE `+strings.Join(where, " AND ")+` ORDER BY seq DESC LIMIT ?`, append(args, f.Limit)...)
	if err != nil {
		return nil, "", err
	}
	next := ""
	switch {
	case len(out) == f.Limit:
		next = strconv.FormatInt(out[len(out)-1].Seq, 10)
	case f.ScanLimit > 0 && scanned == int64(f.ScanLimit):
		// The window ended before the page filled: look on below it.
		next = strconv.FormatInt(floor, 10)
	}
	return out, next, nil
}

// Contact returns one contact of appID with every call attempt made to it.
func (s *sqlStore) Contact(ctx context.Context, appID int64, id string) (*domain.ContactRecord, []domain.CallRecord, error) {
	c, err := scanContact(s.db.QueryRow(ctx, `SELECT `+contactColumns+` FROM contacts WHERE app_id = ? AND id = ?`, appID, id))
	if err != nil {
		return nil, nil, err
	}
	calls, err := sqldb.Collect(ctx, s.db, scanCall, `SELECT id, attempt, hotline, state, coalesce(outcome, ''), cause,
		started_at, answered_at, ended_at, duration, cost, answered_by, digits, result, steps, transcript, recording_bytes > 0
		FROM calls WHERE contact_seq = ? ORDER BY attempt`, c.Seq)
	if err != nil {
		return nil, nil, err
	}
	return c, calls, nil
}

func scanCall(row sqldb.Row) (domain.CallRecord, error) {
	var k domain.CallRecord
	var cause, answered, ended sql.NullInt64
	var started int64
	var steps, transcript string
	if err := row.Scan(&k.ID, &k.Attempt, &k.Hotline, &k.State, &k.Outcome, &cause, &started, &answered, &ended,
		&k.Duration, &k.Cost, &k.AnsweredBy, &k.Digits, &k.Result, &steps, &transcript, &k.Recorded); err != nil {
		return k, err
	}
	k.StartedAt, k.Steps, k.Transcript = FromMillis(started), json.RawMessage(steps), json.RawMessage(transcript)
	k.Cause, k.AnsweredAt, k.EndedAt = nullInt(cause), nullTime(answered), nullTime(ended)
	return k, nil
}

func nullInt(v sql.NullInt64) *int64 {
	if !v.Valid {
		return nil
	}
	return &v.Int64
}

func nullTime(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := FromMillis(v.Int64)
	return &t
}

const importColumns = `id, scenario_id, coalesce(campaign_id, ''), requested, added, skipped, code, created_at`

func scanImport(row sqldb.Row) (*domain.ImportRecord, error) {
	var im domain.ImportRecord
	var created int64
	err := row.Scan(&im.ID, &im.ScenarioID, &im.CampaignID, &im.Requested, &im.Added, &im.Skipped, &im.Code, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, domain.ErrNotFound
	}
	im.CreatedAt = FromMillis(created)
	return &im, err
}

// Imports returns the application's most recent imports, newest first.
func (s *sqlStore) Imports(ctx context.Context, appID int64, scenarioID string, limit int) ([]*domain.ImportRecord, error) {
	// Ties of created_at fall in the order the imports were made: SQLite's
	// rowid, PostgreSQL's seq (its imports have no rowid).
	made := "rowid"
	if s.db.Dialect() == sqldb.Postgres {
		made = "seq"
	}
	return sqldb.Collect(ctx, s.db, scanImport, `SELECT `+importColumns+` FROM imports
		WHERE app_id = ? AND (? = '' OR scenario_id = ?) ORDER BY created_at DESC, `+made+` DESC LIMIT ?`,
		appID, scenarioID, scenarioID, limit)
}

// ImportByID returns one import of appID.
func (s *sqlStore) ImportByID(ctx context.Context, appID int64, id string) (*domain.ImportRecord, error) {
	return scanImport(s.db.QueryRow(ctx, `SELECT `+importColumns+` FROM imports WHERE app_id = ? AND id = ?`, appID, id))
}
