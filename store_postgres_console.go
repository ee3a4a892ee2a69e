package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// The web console's counts on PostgreSQL (docs/postgres.md#console-counts):
// statement triggers append each change of contacts and webhook messages
// to contact_count_changes and webhook_count_changes, which no two
// transactions contend for; a read sums the folded counts and the changes
// not yet folded in one snapshot, and foldCounts moves the changes into
// the counts every countFoldEvery.

// countFoldEvery is how often a node folds the changes into the counts;
// reads are exact whenever they run, this only bounds the rows they sum.
const countFoldEvery = 2 * time.Second

// countFoldLock is the advisory lock a fold takes, so one node folds at a
// time and the others skip their turn.
const countFoldLock = 7412002

func (s *PostgresStore) ContactProgress(ctx context.Context, appID int64, scenarioID, campaignID string) (Progress, error) {
	rows, err := s.pool.Query(ctx, `SELECT state, outcome, sum(n)::bigint FROM (
			SELECT state, outcome, n FROM contact_counts
			WHERE app_id = $1 AND scenario_id = $2 AND ($3 = '' OR campaign_id = $3)
			UNION ALL
			SELECT state, outcome, n FROM contact_count_changes
			WHERE app_id = $1 AND scenario_id = $2 AND ($3 = '' OR campaign_id = $3)
		) AS c GROUP BY state, outcome HAVING sum(n) <> 0`, appID, scenarioID, campaignID)
	if err != nil {
		return Progress{}, err
	}
	defer rows.Close()
	var p Progress
	for rows.Next() {
		var state, outcome string
		var n int64
		if err := rows.Scan(&state, &outcome, &n); err != nil {
			return Progress{}, err
		}
		p.add(state, outcome, n)
	}
	p.sortOutcomes()
	return p, rows.Err()
}

func (s *PostgresStore) Unfinished(ctx context.Context, appID int64) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(n), 0)::bigint FROM queued_contacts WHERE app_id = $1`, appID).Scan(&n)
	return n, err
}

func (s *PostgresStore) MessageStates(ctx context.Context, endpointID string) (map[string]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT state, sum(n)::bigint FROM (
			SELECT state, n FROM webhook_counts WHERE endpoint_id = $1
			UNION ALL
			SELECT state, n FROM webhook_count_changes WHERE endpoint_id = $1
		) AS c GROUP BY state`, endpointID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var state string
		var n int64
		if err := rows.Scan(&state, &n); err != nil {
			return nil, err
		}
		out[state] = n
	}
	return out, rows.Err()
}

func (s *PostgresStore) Outcomes(ctx context.Context, appID int64) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT outcome COLLATE "C" FROM (
			SELECT outcome, scenario_id, campaign_id, state, n FROM contact_counts WHERE app_id = $1 AND outcome <> ''
			UNION ALL
			SELECT outcome, scenario_id, campaign_id, state, n FROM contact_count_changes WHERE app_id = $1 AND outcome <> ''
		) AS c GROUP BY outcome, scenario_id, campaign_id, state HAVING sum(n) <> 0 ORDER BY 1`, appID)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if len(out) == 0 {
		out = nil // as SQLite's: no outcomes yet
	}
	return out, err
}

// foldCounts moves the changes into the counts in one transaction, so a
// read (one snapshot) sees them in one place or the other, never both; a
// change committed meanwhile waits for the next fold. It does nothing
// while another node folds.
func (s *PostgresStore) foldCounts(ctx context.Context) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var mine bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, countFoldLock).Scan(&mine); err != nil || !mine {
			return err
		}
		if _, err := tx.Exec(ctx, `WITH moved AS (DELETE FROM contact_count_changes
				RETURNING app_id, scenario_id, campaign_id, state, outcome, n)
			INSERT INTO contact_counts AS c (app_id, scenario_id, campaign_id, state, outcome, n)
				SELECT app_id, scenario_id, campaign_id, state, outcome, sum(n) FROM moved GROUP BY 1, 2, 3, 4, 5
			ON CONFLICT (app_id, scenario_id, campaign_id, state, outcome) DO UPDATE SET n = c.n + excluded.n`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `WITH moved AS (DELETE FROM webhook_count_changes RETURNING endpoint_id, state, n)
			INSERT INTO webhook_counts AS c (endpoint_id, state, n)
				SELECT endpoint_id, state, sum(n) FROM moved GROUP BY 1, 2
			ON CONFLICT (endpoint_id, state) DO UPDATE SET n = c.n + excluded.n`)
		return err
	})
}

// keepCountsFolded folds every countFoldEvery until the store closes.
func (s *PostgresStore) keepCountsFolded(stop <-chan struct{}) {
	defer s.done.Done()
	t := time.NewTicker(countFoldEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if err := s.foldCounts(ctx); err != nil {
				// Reads stay exact; the next fold takes these changes too.
				slog.Warn("database: folding the console's counts", "err", err)
			}
			cancel()
		}
	}
}
