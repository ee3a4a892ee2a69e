package store

import (
	"context"
	"time"

	"dialbox/internal/domain"
	"dialbox/internal/sqldb"
)

// The web console's reads beyond the admin API's: counts kept by the
// triggers of migration 8, so each is a few primary-key reads whatever the
// number of contacts (docs/console.md#fast-on-big-data); PostgreSQL's
// changes to them, and their fold, are in postgres_console.go.

// countRows selects, by where and its args, the rows of a table of counts
// that a read sums: on PostgreSQL the folded counts and the changes not yet
// folded, in the one snapshot of the read (docs/postgres.md#console-counts);
// SQLite's triggers keep the counts themselves, so its changes are none.
func countRows(d sqldb.Dialect, cols, counts, changes, where string, args ...any) (string, []any) {
	q := `SELECT ` + cols + ` FROM ` + counts + ` WHERE ` + where
	if d != sqldb.Postgres {
		return q, args
	}
	return q + ` UNION ALL SELECT ` + cols + ` FROM ` + changes + ` WHERE ` + where, append(args, args...)
}

// ContactProgress counts one application's contacts: of one scenario
// (campaignID "": all its contacts, campaigns included) or of one campaign.
// Outcomes are whatever the rows hold, so a new outcome shows up as it is.
func (s *sqlStore) ContactProgress(ctx context.Context, appID int64, scenarioID, campaignID string) (domain.Progress, error) {
	rows, args := countRows(s.db.Dialect(), `state, outcome, n`, `contact_counts`, `contact_count_changes`,
		`app_id = ? AND scenario_id = ? AND (? = '' OR campaign_id = ?)`, appID, scenarioID, campaignID, campaignID)
	var p domain.Progress
	err := s.db.Query(ctx, `SELECT state, outcome, CAST(sum(n) AS BIGINT) FROM (`+rows+`) AS c
		GROUP BY state, outcome HAVING sum(n) <> 0`, args, func(scan func(...any) error) error {
		var state, outcome string
		var n int64
		if err := scan(&state, &outcome, &n); err != nil {
			return err
		}
		p.Add(state, outcome, n)
		return nil
	})
	if err != nil {
		return domain.Progress{}, err
	}
	p.SortOutcomes()
	return p, nil
}

// Unfinished is an application's contacts queued or in a call.
func (s *sqlStore) Unfinished(ctx context.Context, appID int64) (int64, error) {
	var n int64
	err := s.db.QueryRow(ctx, `SELECT CAST(coalesce(sum(n), 0) AS BIGINT) FROM queued_contacts WHERE app_id = ?`, appID).Scan(&n)
	return n, err
}

// MessageStates counts an endpoint's webhook messages by state.
func (s *sqlStore) MessageStates(ctx context.Context, endpointID string) (map[string]int64, error) {
	rows, args := countRows(s.db.Dialect(), `state, n`, `webhook_counts`, `webhook_count_changes`, `endpoint_id = ?`, endpointID)
	return sqldb.CollectMap(ctx, s.db, sqldb.KeyValue[string, int64], `SELECT state, CAST(sum(n) AS BIGINT) FROM (`+rows+`) AS c GROUP BY state`, args...)
}

// Outcomes are the outcomes an application's contacts ended with, as
// stored: the console's filter offers what the data holds (nil: none yet).
func (s *sqlStore) Outcomes(ctx context.Context, appID int64) ([]string, error) {
	rows, args := countRows(s.db.Dialect(), `outcome, scenario_id, campaign_id, state, n`, `contact_counts`, `contact_count_changes`,
		`app_id = ? AND outcome <> ''`, appID)
	var out []string
	err := s.db.Query(ctx, `SELECT DISTINCT outcome`+s.db.Dialect().CollateC()+` FROM (`+rows+`) AS c
		GROUP BY outcome, scenario_id, campaign_id, state HAVING sum(n) <> 0 ORDER BY 1`, args,
		func(scan func(...any) error) error {
			var o string
			if err := scan(&o); err != nil {
				return err
			}
			out = append(out, o)
			return nil
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CallCounts counts an application's calls by minute since since: those
// started, and those ended by outcome; of one scenario (campaignID "": its
// campaigns' too), of one campaign, or with scenarioID "" of the whole
// application. They come from call_minutes, kept by the triggers of
// migration 16, so a chart reads a few rows a minute whatever the number
// of calls; on PostgreSQL (migration 19) with call_minute_changes, a row
// per call started or ended, not yet folded (docs/console.md#charts).
func (s *sqlStore) CallCounts(ctx context.Context, appID int64, scenarioID, campaignID string, since time.Time) ([]domain.CallCount, error) {
	var out []domain.CallCount
	rows, args := countRows(s.db.Dialect(), `minute, ended, outcome, n`, `call_minutes`, `call_minute_changes`,
		`app_id = ? AND minute >= ? AND (? = '' OR scenario_id = ?) AND (? = '' OR campaign_id = ?)`,
		appID, Millis(since)/60000, scenarioID, scenarioID, campaignID, campaignID)
	err := s.db.Query(ctx, `SELECT minute, ended, outcome, CAST(sum(n) AS BIGINT) FROM (`+rows+`) AS c
		GROUP BY minute, ended, outcome`, args,
		func(scan func(...any) error) error {
			var cc domain.CallCount
			var minute, ended int64
			if err := scan(&minute, &ended, &cc.Outcome, &cc.N); err != nil {
				return err
			}
			cc.Minute, cc.Ended = time.Unix(minute*60, 0).UTC(), ended == 1
			out = append(out, cc)
			return nil
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}
