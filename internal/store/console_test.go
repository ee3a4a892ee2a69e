package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"dialbox/internal/domain"
	"dialbox/internal/sqldb"
)

// TestCallCountsByMinute puts calls at known minutes with known outcomes
// and reads them back as the console's charts do, on both stores.
func TestCallCountsByMinute(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		app := tenant()
		s := openSQLite(t, app)
		checkCallCounts(t, &s.sqlStore, app.ID, func() {})
	})
	t.Run("postgres", func(t *testing.T) {
		nodes, appID := pgNodes(t, 1)
		// The fold moves the calls' changes into call_minutes; the charts
		// read the same counts before and after it.
		checkCallCounts(t, &nodes[0].sqlStore, appID, func() {
			if err := nodes[0].foldCounts(context.Background()); err != nil {
				t.Fatal(err)
			}
			var left int
			if err := nodes[0].pool.QueryRow(context.Background(), `SELECT count(*) FROM call_minute_changes`).Scan(&left); err != nil || left != 0 {
				t.Fatalf("%d changes left after the fold (%v)", left, err)
			}
		})
	})
}

func checkCallCounts(t *testing.T, s *sqlStore, appID int64, fold func()) {
	ctx := context.Background()
	base := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	type call struct {
		campaign   string
		start, end int // minutes after base; end -1: still up
		outcome    string
	}
	calls := []call{
		{"", 0, 1, domain.OutcomeAnswered},
		{"", 0, 0, domain.OutcomeBusy},
		{"cmp", 0, 2, domain.OutcomeAnswered},
		{"cmp", 2, -1, ""},
		{"", -30, -25, domain.OutcomeAnswered}, // before the window
	}
	err := s.writeData(ctx, func(tx sqldb.Querier) error {
		for i, c := range calls {
			id := fmt.Sprint("k", i)
			var campaign any
			if c.campaign != "" {
				campaign = c.campaign
			}
			if _, err := tx.Exec(ctx, `INSERT INTO contacts (id, app_id, scenario_id, campaign_id, import_id, phone, fields, unique_phone,
				next_attempt_at, created_at, updated_at) VALUES (?, ?, 'sc', ?, 'imp', ?, '{}', 0, 0, 0, 0)`,
				id, appID, campaign, fmt.Sprintf("+8491300%04d", i)); err != nil {
				return err
			}
			var seq int64
			if err := tx.QueryRow(ctx, `SELECT seq FROM contacts WHERE id = ?`, id).Scan(&seq); err != nil {
				return err
			}
			started := Millis(base.Add(time.Duration(c.start)*time.Minute + 10*time.Second))
			if c.end < 0 && c.start >= 0 {
				_, err := tx.Exec(ctx, `INSERT INTO calls (id, contact_seq, app_id, attempt, hotline, started_at)
					VALUES (?, ?, ?, 1, ?, ?)`, "call"+id, seq, appID, fmt.Sprint("h", i), started)
				if err != nil {
					return err
				}
				continue
			}
			ended := Millis(base.Add(time.Duration(c.end)*time.Minute + 50*time.Second))
			if _, err := tx.Exec(ctx, `INSERT INTO calls (id, contact_seq, app_id, attempt, hotline, state, outcome, started_at, ended_at)
				VALUES (?, ?, ?, 1, ?, 'ended', ?, ?, ?)`, "call"+id, seq, appID, fmt.Sprint("h", i), c.outcome, started, ended); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	read := func(scenario, campaign string) map[string]int64 {
		t.Helper()
		counts, err := s.CallCounts(ctx, appID, scenario, campaign, base)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for _, c := range counts {
			key := fmt.Sprintf("+%d start", int(c.Minute.Sub(base).Minutes()))
			if c.Ended {
				key = fmt.Sprintf("+%d %s", int(c.Minute.Sub(base).Minutes()), c.Outcome)
			}
			got[key] += c.N
		}
		return got
	}
	check := func(what string, got, want map[string]int64) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: got %v, want %v", what, got, want)
		}
	}
	check("the scenario", read("sc", ""), map[string]int64{"+0 start": 3, "+2 start": 1,
		"+0 BUSY": 1, "+1 ANSWERED": 1, "+2 ANSWERED": 1})
	check("the campaign", read("sc", "cmp"), map[string]int64{"+0 start": 1, "+2 start": 1, "+2 ANSWERED": 1})
	check("the application", read("", ""), map[string]int64{"+0 start": 3, "+2 start": 1,
		"+0 BUSY": 1, "+1 ANSWERED": 1, "+2 ANSWERED": 1})
	check("another scenario", read("other", ""), map[string]int64{})
	fold()
	check("the scenario, folded", read("sc", ""), map[string]int64{"+0 start": 3, "+2 start": 1,
		"+0 BUSY": 1, "+1 ANSWERED": 1, "+2 ANSWERED": 1})

	// The call still up ends: it counts in the minute it ended.
	err = s.writeData(ctx, func(tx sqldb.Querier) error {
		_, err := tx.Exec(ctx, `UPDATE calls SET state = 'ended', outcome = 'BUSY', ended_at = ? WHERE id = 'callk3'`,
			Millis(base.Add(3*time.Minute)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	check("the campaign, its last call ended", read("sc", "cmp"), map[string]int64{"+0 start": 1, "+2 start": 1, "+2 ANSWERED": 1, "+3 BUSY": 1})
}
