package main

import (
	"context"
	"sort"
)

// The web console's reads beyond the admin API's: counts kept by the
// triggers of migration 8, so each is a few primary-key reads whatever the
// number of contacts (docs/console.md#fast-on-big-data); PostgreSQL's are
// in store_postgres_console.go.

// Progress is a scenario's or a campaign's contacts by state, and the
// finished ones by outcome.
type Progress struct {
	Queued, Dialing, Done int64
	Outcomes              []OutcomeCount // of the done ones, most first
}

// OutcomeCount is how many finished contacts ended with one outcome.
type OutcomeCount struct {
	Outcome string
	N       int64
}

// Total is every contact counted.
func (p Progress) Total() int64 { return p.Queued + p.Dialing + p.Done }

// Answered is the share of finished contacts whose outcome is ANSWERED,
// in percent; ok is false before any finished.
func (p Progress) Answered() (pct float64, ok bool) {
	if p.Done == 0 {
		return 0, false
	}
	for _, o := range p.Outcomes {
		if o.Outcome == OutcomeAnswered {
			return 100 * float64(o.N) / float64(p.Done), true
		}
	}
	return 0, true
}

// ContactProgress counts one application's contacts: of one scenario
// (campaignID "": all its contacts, campaigns included) or of one campaign.
// Outcomes are whatever the rows hold, so a new outcome shows up as it is.
func (s *SQLiteStore) ContactProgress(ctx context.Context, appID int64, scenarioID, campaignID string) (Progress, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT state, outcome, sum(n) FROM contact_counts
		WHERE app_id = ? AND scenario_id = ? AND (? = '' OR campaign_id = ?) AND n <> 0
		GROUP BY state, outcome`, appID, scenarioID, campaignID, campaignID)
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

// Unfinished is an application's contacts queued or in a call.
func (s *SQLiteStore) Unfinished(ctx context.Context, appID int64) (int64, error) {
	var n int64
	err := s.read.QueryRowContext(ctx, `SELECT coalesce(sum(n), 0) FROM queued_contacts WHERE app_id = ?`, appID).Scan(&n)
	return n, err
}

// MessageStates counts an endpoint's webhook messages by state.
func (s *SQLiteStore) MessageStates(ctx context.Context, endpointID string) (map[string]int64, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT state, n FROM webhook_counts WHERE endpoint_id = ?`, endpointID)
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

// Outcomes are the outcomes an application's contacts ended with, as
// stored: the console's filter offers what the data holds.
func (s *SQLiteStore) Outcomes(ctx context.Context, appID int64) ([]string, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT DISTINCT outcome FROM contact_counts
		WHERE app_id = ? AND outcome <> '' AND n <> 0 ORDER BY outcome`, appID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// add counts n contacts in state, and under their outcome once done.
func (p *Progress) add(state, outcome string, n int64) {
	switch state {
	case ContactQueued:
		p.Queued += n
	case ContactDialing:
		p.Dialing += n
	default:
		p.Done += n
		p.Outcomes = append(p.Outcomes, OutcomeCount{outcome, n})
	}
}

// sortOutcomes puts the most common outcome first, ties by name.
func (p *Progress) sortOutcomes() {
	sort.Slice(p.Outcomes, func(i, j int) bool {
		a, b := p.Outcomes[i], p.Outcomes[j]
		return a.N > b.N || (a.N == b.N && a.Outcome < b.Outcome)
	})
}
