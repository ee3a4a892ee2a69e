package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The charts of a scenario's and a campaign's page, and the overview's
// sparkline (docs/console.md#charts): calls at known minutes with known
// outcomes come out as the bars' numbers and their text alternatives, a
// hostile scenario name stays text, and the live stream redraws the charts
// when a call ends; on both stores.
func TestConsoleChartsCountKnownCalls(t *testing.T) { eachBackend(t, testConsoleChartsCountKnownCalls) }

func testConsoleChartsCountKnownCalls(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	// The sandbox's clock at half past a fixed hour: the known minutes stay
	// inside the charts' window however long the test runs (minutes).
	at := time.Now().UTC().Add(24 * time.Hour).Truncate(time.Hour).Add(30 * time.Minute)
	s.admin(t, "PUT", "/clock", `{"now":"`+at.Format(time.RFC3339)+`"}`, nil)
	const hostile = `<script>alert(1)</script> & "Q"`
	s.admin(t, "POST", "/apps/qa-key/scenarios", `{"id":"sc-chart","name":"<script>alert(1)</script> & \"Q\"","content":"x"}`, nil)
	s.admin(t, "POST", "/apps/qa-key/campaigns", `{"id":"camp-chart","name":"Chart","scenario_id":"sc-chart"}`, nil)
	appID := queryInt(t, s.m.store, `SELECT id FROM applications WHERE api_key = 'qa-key'`)
	n := 0
	// call adds a contact and one ended call, started and ended the given
	// minutes before the sandbox's time.
	call := func(campaign string, start, end int, outcome string) {
		t.Helper()
		n++
		id := fmt.Sprint("chart-", n)
		var camp any
		if campaign != "" {
			camp = campaign
		}
		db := outside(t, s.m.store).querier()
		ctx := context.Background()
		if _, err := db.Exec(ctx, `INSERT INTO contacts (id, app_id, scenario_id, campaign_id, import_id, phone, fields, unique_phone,
			next_attempt_at, created_at, updated_at) VALUES (?, ?, 'sc-chart', ?, 'imp', ?, '{}', 0, 0, 0, 0)`,
			id, appID, camp, fmt.Sprintf("+8491300%04d", n)); err != nil {
			t.Fatal(err)
		}
		seq := queryInt(t, s.m.store, `SELECT seq FROM contacts WHERE id = ?`, id)
		minute := func(m int) int64 { return at.Add(time.Duration(-m)*time.Minute + 5*time.Second).UnixMilli() }
		if _, err := db.Exec(ctx, `INSERT INTO calls (id, contact_seq, app_id, attempt, hotline, state, outcome, started_at, ended_at)
			VALUES (?, ?, ?, 1, ?, 'ended', ?, ?, ?)`, "call-"+id, seq, appID, fmt.Sprint("h", n), outcome, minute(start), minute(end)); err != nil {
			t.Fatal(err)
		}
	}
	call("", 10, 10, "BUSY")
	call("", 10, 9, "ANSWERED")
	call("camp-chart", 5, 4, "ANSWERED")
	call("", 200, 199, "ANSWERED") // before the window
	hhmm := func(m int) string { return at.Add(time.Duration(-m) * time.Minute).Format("15:04") }

	c := signedIn(t, s)
	for path, wants := range map[string][]string{
		"/console/apps/qa-key/scenarios/sc-chart": {
			`<title>` + hhmm(10) + `: 2 started</title>`, `<title>` + hhmm(10) + `: 1 ended</title>`,
			`<title>` + hhmm(9) + `: 1 ended</title>`, `<title>` + hhmm(5) + `: 1 started</title>`,
			`3 calls started and 3 ended`, `2 of 3 calls ended were answered (66.7%)`,
			`ANSWERED</td><td>2</td><td>66.7%</td>`, `BUSY</td><td>1</td><td>33.3%</td>`,
			`<title id="chart-calls-title">Calls of scenario &lt;script&gt;alert(1)&lt;/script&gt; &amp; &#34;Q&#34; started`,
			`aria-labelledby="chart-rate-title chart-rate-desc"`,
		},
		"/console/apps/qa-key/campaigns/camp-chart": {
			`<title>` + hhmm(5) + `: 1 started</title>`, `1 calls started and 1 ended`, `1 of 1 calls ended were answered (100.0%)`,
		},
		"/console/": {
			`3 calls in the last hour`, `/console/apps/qa-key/campaigns/camp-chart">Chart</a>`,
			`<td><a href="/console/apps/qa-key/scenarios/sc-chart">&lt;script&gt;alert(1)&lt;/script&gt; &amp; &#34;Q&#34;</a></td>`,
		},
	} {
		resp, body := c.get(path)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s answered %d", path, resp.StatusCode)
		}
		for _, want := range wants {
			if !strings.Contains(body, want) {
				t.Errorf("%s lacks %q", path, want)
			}
		}
		if strings.Contains(body, hostile) {
			t.Errorf("%s holds the scenario's name unescaped", path)
		}
	}
	if t.Failed() {
		return
	}

	// Live: the stream's charts fragment changes when another call ends.
	req, _ := http.NewRequest("GET", s.url+"/console/live/apps/qa-key/scenarios/sc-chart", nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := c.http.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := bufio.NewScanner(resp.Body)
	events.Buffer(make([]byte, 1<<20), 1<<20)
	charts := func(want string) {
		t.Helper()
		for events.Scan() {
			line := events.Text()
			if strings.HasPrefix(line, "data: ") && strings.Contains(line, `"id":"charts"`) && strings.Contains(line, want) {
				return
			}
		}
		t.Fatalf("the stream ended without charts saying %q: %v", want, events.Err())
	}
	charts("3 calls started and 3 ended")
	call("", 3, 2, "NO_ANSWER")
	charts("4 calls started and 4 ended")
}
