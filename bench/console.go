package main

import (
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
	consoleTries = 7
	consoleToken = "bench-console-admin-token-0123456789"
)

var consoleCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (h *Harness) consolePhase(fixtures string) error {
	base := filepath.Join(h.scratch, "growth.db")
	stored, err := countContacts(base)
	if err != nil || stored < h.o.fill2 {
		// No growth database this run: make one of fill2 contacts.
		d, err := h.startDialbox("dialbox-console-base", base, fixtures, "")
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
	h.notes = append(h.notes, fmt.Sprintf("Console pages over HTTP with %s contacts stored, best / median of %d loads: %s; the slowest median %s (the bar: 100 ms).",
		num(float64(stored)), consoleTries, joinComma(rows), ms(worst)))
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
