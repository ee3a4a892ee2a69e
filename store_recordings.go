package main

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"
)

// The queries of calls' recordings (recordings.go): calls.recording_bytes
// lists a call's recording, 0 when it has none.

func (s *SQLiteStore) setRecordings(f RecordingFiles) { s.recordings = f }

// recordingOf is the size of a call's recording, 0 when it has none;
// errNotFound when the application has no such contact with such a call.
func (s *SQLiteStore) recordingOf(ctx context.Context, appID int64, contactID, callID string) (int64, error) {
	var n int64
	err := s.read.QueryRowContext(ctx, `SELECT c.recording_bytes FROM calls c JOIN contacts k ON k.seq = c.contact_seq
		WHERE k.app_id = ? AND k.id = ? AND c.id = ?`, appID, contactID, callID).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, errNotFound
	}
	return n, err
}

// expireRecordings unlists up to limit recordings of calls that ended
// before, oldest first, and returns their calls, whose files the caller
// removes.
func (s *SQLiteStore) expireRecordings(ctx context.Context, before time.Time, limit int) ([]string, error) {
	var ids []string
	err := s.WriteData(ctx, func(tx *sql.Tx) error {
		var err error
		ids, err = queryStrings(ctx, tx, `UPDATE calls SET recording_bytes = 0 WHERE id IN (SELECT id FROM calls
			WHERE recording_bytes > 0 AND ended_at < ? ORDER BY ended_at LIMIT ?) RETURNING id`, ms(before), limit)
		return err
	})
	return ids, err
}

// keptRecording is what a call says of its recording file: it is up (its
// file may be being written, or written and not yet listed), or it lists
// one.
type keptRecording struct{ up, listed bool }

// recordingsKept reads, of calls ids, those that are up or list a
// recording; calls missing (deleted) are left out.
func (s *SQLiteStore) recordingsKept(ctx context.Context, ids []string) (map[string]keptRecording, error) {
	out := map[string]keptRecording{}
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := s.read.QueryContext(ctx, `SELECT id, state = 'dialing', recording_bytes > 0 FROM calls
		WHERE id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var k keptRecording
		if err := rows.Scan(&id, &k.up, &k.listed); err != nil {
			return nil, err
		}
		out[id] = k
	}
	return out, rows.Err()
}

// deleteWithRecordings runs a write that deletes calls (with their
// contacts, scenario or application) and removes the recordings they
// listed once it has committed. recorded selects, before the delete, the
// calls with a recording that it deletes.
func (s *SQLiteStore) deleteWithRecordings(ctx context.Context, recorded string, args []any, del func(tx *sql.Tx) error) error {
	var ids []string
	err := s.Write(ctx, func(tx *sql.Tx) error {
		var err error
		if ids, err = queryStrings(ctx, tx, recorded, args...); err != nil {
			return err
		}
		return del(tx)
	})
	if err == nil {
		s.recordings.Remove(ids)
	}
	return err
}

// queryStrings reads a query's one text column, on a transaction or the
// database.
func queryStrings(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
