package main

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Calls' recordings on PostgreSQL: store_recordings.go's queries. The files
// are on each node's disk (recordings.dir), so on several nodes that
// folder is one shared by all (docs/postgres.md#status).

func (s *PostgresStore) setRecordings(f RecordingFiles) { s.recordings = f }

func (s *PostgresStore) recordingOf(ctx context.Context, appID int64, contactID, callID string) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT c.recording_bytes FROM calls c JOIN contacts k ON k.seq = c.contact_seq
		WHERE k.app_id = $1 AND k.id = $2 AND c.id = $3`, appID, contactID, callID).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, errNotFound
	}
	return n, err
}

func (s *PostgresStore) expireRecordings(ctx context.Context, before time.Time, limit int) ([]string, error) {
	rows, err := s.pool.Query(ctx, `UPDATE calls SET recording_bytes = 0 WHERE id IN (SELECT id FROM calls
		WHERE recording_bytes > 0 AND ended_at < $1 ORDER BY ended_at LIMIT $2) RETURNING id`, ms(before), limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

func (s *PostgresStore) recordingsKept(ctx context.Context, ids []string) (map[string]keptRecording, error) {
	out := map[string]keptRecording{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT id, state = 'dialing', recording_bytes > 0 FROM calls WHERE id = ANY($1)`, ids)
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
