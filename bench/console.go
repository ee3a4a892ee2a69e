package main

import (
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// The console phase times each page of the web console over HTTP, signed
// in, against a database of fill2 contacts (the growth phase's, when it
// ran): each page's best and median of consoleTries loads, which the
// console's quality bar wants under 100 ms (docs/console.md#fast-on-big-data).

const (
	// consoleCalls are the calls the charts of the scenario's page count:
	// all inside their 3-hour window, its worst case (docs/console.md#charts).
	consoleCalls = 1_000_000
	consoleTries = 7
	consoleToken = "bench-console-admin-token-0123456789"
)

var consoleCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (h *Harness) consolePhase(fixtures string) error {
	base := filepath.Join(h.scratch, "growth.db")
	stored, err := countContacts(base)
	if err != nil || stored < h.o.fill2 {
		// No growth database this run: make one of fill2 contacts.
		d, err := h.startBase("dialbox-console-base", base, fixtures)
		if err != nil {
			return err
		}
		if status, body, err := fetch(d.Addr, d.opA(1)[0]); err != nil || status != 200 {
			d.Stop(30 * time.Second)
			return fmt.Errorf("console: operation A: HTTP %d %.200s %v", status, body, err)
		}
		d.Stop(30 * time.Second)
		logf("console: filling to %s contacts", num(float64(h.o.fill2)))
		if _, err := sqlFill(base, 0, h.o.fill2-1); err != nil {
			return err
		}
		if stored, err = countContacts(base); err != nil {
			return err
		}
	}
	work := filepath.Join(h.scratch, "console.db")
	if err := copyDB(base, work); err != nil {
		return err
	}
	defer removeDB(work)
	took, err := callsFill(work, consoleCalls)
	if err != nil {
		return err
	}
	logf("console: %s calls ended over the last 3 hours added in %s, for the charts", num(float64(consoleCalls)), took.Round(time.Second))
	// The engine stays off: the pages are timed alone, not beside millions
	// of calls starting.
	config := filepath.Join(h.scratch, "config-console.toml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf("[admin]\ntoken = %q\n[engine]\nenabled = false\n[limits]\nmax_queued_contacts = 0\n", consoleToken)), 0o644); err != nil {
		return err
	}
	d, err := h.startDialbox("dialbox-console", work, fixtures, config)
	if err != nil {
		return err
	}
	defer d.Stop(30 * time.Second)
	base = "http://" + d.Addr
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Timeout: time.Minute}
	get := func(path string) (int, string, error) {
		resp, err := client.Get(base + path)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	_, page, err := get("/console/signin")
	if err != nil {
		return err
	}
	m := consoleCSRF.FindStringSubmatch(page)
	if m == nil {
		return fmt.Errorf("console: no sign-in form")
	}
	resp, err := client.PostForm(base+"/console/signin", url.Values{"csrf": {m[1]}, "token": {consoleToken}})
	if err != nil {
		return err
	}
	resp.Body.Close()
	contact := regexp.MustCompile(`/console/apps/[^/]+/contacts/([0-9a-f-]+)"`)
	_, list, err := get("/console/apps/" + benchAPIKey + "/contacts")
	if err != nil {
		return err
	}
	cm := contact.FindStringSubmatch(list)
	if cm == nil {
		return fmt.Errorf("console: the contacts page lists no contact")
	}
	// A campaign on the bench scenario, for its page (its contacts are
	// few: the page's queries must not read the scenario's millions).
	req, _ := http.NewRequest("POST", base+"/admin/v1/apps/"+benchAPIKey+"/campaigns",
		strings.NewReader(`{"id":"camp-bench","name":"Bench","scenario_id":"`+benchScenarioID+`"}`))
	req.Header.Set("Authorization", "Bearer "+consoleToken)
	req.Header.Set("Content-Type", "application/json")
	if resp, err = client.Do(req); err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return fmt.Errorf("console: creating a campaign: HTTP %d", resp.StatusCode)
	}
	app := "/console/apps/" + benchAPIKey
	pages := []struct{ label, path string }{
		{"overview", "/console/"},
		{"scenario", app + "/scenarios/" + benchScenarioID},
		{"scenario editor", app + "/scenarios/" + benchScenarioID + "/edit"},
		{"new scenario", app + "/new-scenario"},
		{"campaign", app + "/campaigns/camp-bench"},
		{"audit log", "/console/audit"},
		{"contacts, first page", app + "/contacts"},
		{"contacts by phone", app + "/contacts?phone=0912000123"},
		{"contacts by outcome (none match)", app + "/contacts?outcome=BUSY"},
		{"contacts by state and date", app + "/contacts?state=queued&from=2020-01-01"},
		{"a contact", app + "/contacts/" + cm[1]},
		{"webhook deliveries", app + "/webhooks"},
		{"journal", "/console/journal"},
		{"fault rules", "/console/faults"},
		{"sink", "/console/sink"},
	}
	logf("console: timing %d pages with %s contacts stored", len(pages), num(float64(stored)))
	var worst time.Duration
	var rows []string
	for _, p := range pages {
		var took []time.Duration
		for range consoleTries {
			start := time.Now()
			status, _, err := get(p.path)
			if err != nil || status != 200 {
				return fmt.Errorf("console: GET %s: HTTP %d %v", p.path, status, err)
			}
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		worst = max(worst, took[len(took)/2])
		rows = append(rows, fmt.Sprintf("%s %s / %s", p.label, ms(took[0]), ms(took[len(took)/2])))
		logf("  %-34s best %s, median %s", p.label, ms(took[0]), ms(took[len(took)/2]))
	}
	h.notes = append(h.notes, fmt.Sprintf("Console pages over HTTP with %s, best / median of %d loads: %s; the slowest median %s (the bar: 100 ms).",
		num(float64(stored))+" contacts stored and "+num(float64(consoleCalls))+" calls in the charts' window", consoleTries, joinComma(rows), ms(worst)))
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += "; "
		}
		out += x
	}
	return out
}

// callsFill adds n ended calls to the first n contacts of the bench's
// scenario (direct SQL on the stopped server's database), started over the
// last 3 hours, a third answered: what a scenario's charts read.
func callsFill(dbPath string, n int64) (time.Duration, error) {
	start := time.Now()
	db, err := sql.Open("sqlite", sqliteDSN(dbPath))
	if err != nil {
		return 0, err
	}
	defer db.Close()
	now := time.Now().UnixMilli()
	_, err = db.Exec(`INSERT INTO calls (id, contact_seq, app_id, attempt, hotline, state, outcome, started_at, ended_at, duration)
		SELECT 'bench-call-' || seq, seq, app_id, 1, '0287300000' || (seq % 10), 'ended',
			CASE seq % 3 WHEN 0 THEN 'ANSWERED' WHEN 1 THEN 'NO_ANSWER' ELSE 'BUSY' END,
			? - (seq % 10800) * 1000 - 30000, ? - (seq % 10800) * 1000, 20
		FROM contacts WHERE scenario_id = ? ORDER BY seq LIMIT ?`, now, now, benchScenarioID, n)
	return time.Since(start), err
}
