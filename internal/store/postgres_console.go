package store

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// The web console's counts on PostgreSQL (docs/postgres.md#console-counts):
// statement triggers append each change of contacts and webhook messages
// to contact_count_changes and webhook_count_changes, and row triggers each
// call's start and end to call_minute_changes, which no two
// transactions contend for; a read sums the folded counts and the changes
// not yet folded in one snapshot (countRows, console.go), and
// foldCounts moves the changes into the counts every countFoldEvery.

// countFoldEvery is how often a node folds the changes into the counts;
// reads are exact whenever they run, this only bounds the rows they sum.
const countFoldEvery = 2 * time.Second

// countFoldLock is the advisory lock a fold takes, so one node folds at a
// time and the others skip their turn.
const countFoldLock = 7412002

// foldCounts moves the changes into the counts in one transaction, so a
// read (one snapshot) sees them in one place or the other, never both; a
// change committed meanwhile waits for the next fold. It does nothing
// while another node folds.
func (s *Postgres) foldCounts(ctx context.Context) error {
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
		if _, err := tx.Exec(ctx, `WITH moved AS (DELETE FROM webhook_count_changes RETURNING endpoint_id, state, n)
			INSERT INTO webhook_counts AS c (endpoint_id, state, n)
				SELECT endpoint_id, state, sum(n) FROM moved GROUP BY 1, 2
			ON CONFLICT (endpoint_id, state) DO UPDATE SET n = c.n + excluded.n`); err != nil {
			return err
		}
		// The charts' calls by minute (docs/console.md#charts): only the
		// fold, one node at a time, updates call_minutes' shared rows.
		_, err := tx.Exec(ctx, `WITH moved AS (DELETE FROM call_minute_changes
				RETURNING app_id, scenario_id, minute, campaign_id, ended, outcome, n)
			INSERT INTO call_minutes AS c (app_id, scenario_id, minute, campaign_id, ended, outcome, n)
				SELECT app_id, scenario_id, minute, campaign_id, ended, outcome, sum(n) FROM moved GROUP BY 1, 2, 3, 4, 5, 6
			ON CONFLICT (app_id, scenario_id, minute, campaign_id, ended, outcome) DO UPDATE SET n = c.n + excluded.n`)
		return err
	})
}

// keepCountsFolded folds every countFoldEvery until the store closes.
func (s *Postgres) keepCountsFolded(stop <-chan struct{}) {
	s.every(stop, countFoldEvery, time.Minute, func(ctx context.Context) {
		if err := s.foldCounts(ctx); err != nil {
			// Reads stay exact; the next fold takes these changes too.
			slog.Warn("database: folding the console's counts", "err", err)
		}
	})
}
