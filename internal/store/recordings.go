package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"dialbox/internal/domain"
	"dialbox/internal/recordings"
	"dialbox/internal/sqldb"
)

// The queries of calls' recordings (internal/recordings): calls.recording_bytes
// lists a call's recording, 0 when it has none. The files are on each
// node's disk (recordings.dir), so on several nodes that folder is one
// shared by all (docs/postgres.md#status); each store holds where it is.

// RecordingOf is the size of a call's recording, 0 when it has none;
// errNotFound when the application has no such contact with such a call.
func (s *sqlStore) RecordingOf(ctx context.Context, appID int64, contactID, callID string) (int64, error) {
	var n int64
	err := s.db.QueryRow(ctx, `SELECT c.recording_bytes FROM calls c JOIN contacts k ON k.seq = c.contact_seq
		WHERE k.app_id = ? AND k.id = ? AND c.id = ?`, appID, contactID, callID).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, domain.ErrNotFound
	}
	return n, err
}

// ExpireRecordings unlists up to limit recordings of calls that ended
// before, oldest first, and returns their calls, whose files the caller
// removes.
func (s *sqlStore) ExpireRecordings(ctx context.Context, before time.Time, limit int) ([]string, error) {
	var ids []string
	err := s.writeData(ctx, func(tx sqldb.Querier) error {
		var err error
		ids, err = QueryStrings(ctx, tx, `UPDATE calls SET recording_bytes = 0 WHERE id IN (SELECT id FROM calls
			WHERE recording_bytes > 0 AND ended_at < ? ORDER BY ended_at LIMIT ?) RETURNING id`, Millis(before), limit)
		return err
	})
	return ids, err
}

// RecordingsKept reads, of calls ids, those that are up or list a
// recording; calls missing (deleted) are left out. The sweeper asks for
// 500 at most at once, well within either database's count of arguments.
func (s *sqlStore) RecordingsKept(ctx context.Context, ids []string) (map[string]recordings.Kept, error) {
	out := map[string]recordings.Kept{}
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return sqldb.CollectMap(ctx, s.db, func(r sqldb.Row) (id string, k recordings.Kept, err error) {
		err = r.Scan(&id, &k.Up, &k.Listed)
		return id, k, err
	}, `SELECT id, state = 'dialing', recording_bytes > 0 FROM calls
		WHERE id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)`, args...)
}

// deleteWithRecordings runs a write that deletes calls (with their
// contacts, scenario or application) and removes the recordings they
// listed once it has committed. recorded selects, before the delete, the
// calls with a recording that it deletes.
func (s *SQLite) deleteWithRecordings(ctx context.Context, recorded string, args []any, del func(tx sqldb.SQLQueryer) error) error {
	var ids []string
	err := s.Write(ctx, func(tx sqldb.SQLQueryer) error {
		var err error
		if ids, err = QueryStrings(ctx, sqldb.SQLShared(tx), recorded, args...); err != nil {
			return err
		}
		return del(tx)
	})
	if err == nil {
		s.recordings.Remove(ids)
	}
	return err
}
