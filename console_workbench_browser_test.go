package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"dialbox/internal/testtool"
)

// A supervisor's day in a real browser, on each store (docs/console.md#a-supervisors-day):
// sign in under a name, write a scenario with a script and try it, submit
// and approve it, create a campaign, upload its 10,000 contacts with their
// progress, start it and watch its charts move, pause it, take its results
// away (the admin API's contacts, row for row), stop it, and find all of
// it in the audit log. The simulator's clock runs 1000 times faster and
// the engine polls every 10 ms, so calls end within the test's seconds.
func TestConsoleWorkbenchInBrowser(t *testing.T) { eachBackend(t, testConsoleWorkbenchInBrowser) }

func testConsoleWorkbenchInBrowser(t *testing.T, backend string) {
	chromium := testtool.RequireBrowser(t)
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	s := startSandboxOn(t, backend, "DIALBOX_ENGINE_ENABLED=true", "DIALBOX_SIMULATOR_TIME_SCALE=1000",
		"DIALBOX_ENGINE_POLL_INTERVAL=10ms")
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 900))...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(cancelT)
	run := func(actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(ctx, actions...); err != nil {
			t.Fatal(err)
		}
	}
	// DIALBOX_SCREENSHOTS=1 writes docs/console/'s PNGs of these pages:
	// the part of the page shown by sel ("": all of it), to keep them small.
	shot := func(name, sel string) {
		t.Helper()
		if os.Getenv("DIALBOX_SCREENSHOTS") != "1" {
			return
		}
		var png []byte
		if sel == "" {
			run(chromedp.FullScreenshot(&png, 100)) // quality 100: PNG
		} else {
			run(chromedp.Screenshot(sel, &png, chromedp.ByQuery))
		}
		if err := os.WriteFile(filepath.Join("docs", "console", name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		var v string
		run(chromedp.Text(sel, &v, chromedp.ByQuery))
		return strings.TrimSpace(v)
	}

	run(chromedp.Navigate(s.url+"/console/"), chromedp.WaitVisible("#token", chromedp.ByID),
		chromedp.SendKeys("#token", testAdminToken, chromedp.ByID), chromedp.SendKeys("#name", "Lan", chromedp.ByID),
		chromedp.Submit("#token", chromedp.ByID), chromedp.WaitVisible("#tenants", chromedp.ByID))

	// A scenario with a script; the first try goes to a step there is not.
	run(chromedp.Navigate(s.url+"/console/apps/qa-key/new-scenario"), chromedp.WaitVisible("#scenario-form", chromedp.ByID),
		chromedp.SendKeys("#id", "sc-browser", chromedp.ByID), chromedp.SendKeys("#name", "Nhắc lịch", chromedp.ByID),
		chromedp.SetValue("#max_concurrent", "5", chromedp.ByID), // at any hour of the day the test runs:
		chromedp.SetValue("#window_start", "00:00", chromedp.ByID), chromedp.SetValue("#window_end", "24:00", chromedp.ByID),
		chromedp.SetValue("#script", `{"steps": [
  {"name": "hello", "say": {"text": "Xin chào", "next": "bye"}}
]}`, chromedp.ByID),
		chromedp.Submit("#scenario-form", chromedp.ByID), chromedp.WaitVisible("#listing", chromedp.ByID))
	if got := text("#listing tr.bad-line"); !strings.HasPrefix(got, "2") || !strings.Contains(got, "bye") {
		t.Fatalf("the problem is shown beside %q, not line 2", got)
	}
	shot("scenario-edit", "#listing")
	// Tried before it is saved: a callee pressing 2 and then saying "có".
	run(chromedp.SetValue("#script", `{"steps": [
  {"name": "menu", "gather": {"prompt": {"say": "Nhấn 1 để xác nhận"}, "max_digits": 1, "timeout": "5s", "branches": {"1": "yes", "2": "ask"}}},
  {"name": "ask", "gather": {"input": ["speech"], "prompt": {"say": "Anh có đến không?"}, "timeout": "5s", "branches": {"có": "yes"}}},
  {"name": "yes", "set": {"label": "confirmed", "next": "bye"}},
  {"name": "bye", "hangup": {}}
]}`, chromedp.ByID), chromedp.SendKeys("#try_digits", "2", chromedp.ByID), chromedp.SetValue("#try_says", "có", chromedp.ByID),
		chromedp.Click("#try-script", chromedp.ByID), chromedp.WaitVisible("#tried", chromedp.ByID))
	if got := text("#tried-result"); got != "confirmed" {
		t.Fatalf("the try's result is %q:\n%s", got, text("#tried"))
	}
	if got := text("#tried-transcript"); !strings.Contains(got, "callee: có") {
		t.Fatalf("the try's transcript: %q", got)
	}
	shot("scenario-try", "#tried")
	run(chromedp.SetValue("#script", `{"steps": [
  {"name": "hello", "say": {"text": "Xin chào", "next": "bye"}},
  {"name": "bye", "hangup": {}}
]}`, chromedp.ByID), chromedp.Submit("#scenario-form", chromedp.ByID), chromedp.WaitVisible("#transition-submit", chromedp.ByID))

	run(chromedp.Click("#transition-submit", chromedp.ByID), chromedp.WaitVisible("#transition-approve", chromedp.ByID),
		chromedp.Click("#transition-approve", chromedp.ByID), chromedp.WaitVisible("#transition-edit", chromedp.ByID))
	if got := text("#scenario-status"); got != "ACTIVE" {
		t.Fatalf("after approving, the scenario is %s", got)
	}
	run(chromedp.SendKeys("#campaign-name", "Tháng 12", chromedp.ByID), chromedp.SendKeys("#campaign-id", "camp-browser", chromedp.ByID),
		chromedp.Click("#create-campaign", chromedp.ByID), chromedp.WaitVisible("#resume", chromedp.ByID))
	// Its contacts come as a file of 10,000, with three rows that are no
	// phone number mixed in.
	var file strings.Builder
	file.WriteString("phone_number,ho_ten\n")
	bad := map[int]bool{10: true, 4321: true, 9990: true} // before the contact of that index
	for i := range 10000 {
		if bad[i] {
			file.WriteString("12,Sai\n")
		}
		fmt.Fprintf(&file, "0912%06d,Khách %d\n", i, i)
	}
	csvPath := filepath.Join(t.TempDir(), "contacts.csv")
	if err := os.WriteFile(csvPath, []byte(file.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	run(chromedp.SetUploadFiles("#contacts-file", []string{csvPath}, chromedp.ByID), chromedp.Click("#upload-csv", chromedp.ByID),
		chromedp.WaitVisible("#upload-done", chromedp.ByID))
	if got := text("#upload-summary"); got != "10,003 rows read: 10,000 contacts added, 3 skipped." {
		t.Fatalf("the upload says %q", got)
	}
	// A progress line per chunk of 1,000 rows, the counts growing.
	var lines []string
	run(chromedp.Evaluate(`[...document.querySelectorAll("#upload-progress li")].map(li => li.textContent.trim())`, &lines))
	if len(lines) != 11 || lines[0] != "1,000 rows read: 999 added, 1 skipped" ||
		lines[9] != "10,000 rows read: 9,997 added, 3 skipped" || lines[10] != "10,003 rows read: 10,000 added, 3 skipped" {
		t.Fatalf("the progress lines: %q", lines)
	}
	shot("upload", "")
	var skipped string
	run(chromedp.Evaluate(`(async () => (await fetch(document.getElementById("skipped-rows").href)).text())()`, &skipped,
		func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	// Row numbers count the header as row 1.
	if rows := strings.Split(strings.TrimSpace(skipped), "\n"); len(rows) != 4 || rows[0] != "row,reason,phone_number,ho_ten" ||
		!strings.HasPrefix(rows[1], "12,") || !strings.HasPrefix(rows[2], "4324,") || !strings.HasPrefix(rows[3], "9994,") ||
		!strings.HasSuffix(rows[3], ",12,Sai") {
		t.Fatalf("the skipped rows: %q", skipped)
	}

	// Started, its charts move as the calls end, without a reload.
	run(chromedp.Navigate(s.url+"/console/apps/qa-key/campaigns/camp-browser"), chromedp.WaitVisible("#resume", chromedp.ByID),
		chromedp.Poll(`document.getElementById("live-status").textContent.startsWith("Live")`, nil))
	var before string
	run(chromedp.Evaluate(`document.getElementById("chart-calls-desc").textContent`, &before))
	run(chromedp.Click("#resume", chromedp.ByID), chromedp.WaitVisible("#pause", chromedp.ByID))
	run(chromedp.Poll(`(() => { const m = document.getElementById("chart-calls-desc").textContent.match(/(\d+) ended/);
		return m !== null && Number(m[1]) >= 20; })()`, nil))
	var after string
	run(chromedp.Evaluate(`document.getElementById("chart-calls-desc").textContent`, &after))
	if after == before {
		t.Fatalf("the calls chart still says %q", after)
	}
	run(chromedp.Click("#pause", chromedp.ByID), chromedp.WaitVisible("#resume", chromedp.ByID))
	// The calls under way when it paused end; no other starts.
	waitFor(t, "the calls under way to end", func() bool {
		return queryInt(t, s.m.store, `SELECT count(*) FROM contacts WHERE state = 'dialing'`) == 0 &&
			queryInt(t, s.m.store, `SELECT count(*) FROM calls WHERE state <> 'ended'`) == 0
	})
	done := queryInt(t, s.m.store, `SELECT count(*) FROM contacts WHERE state = 'done'`)
	t.Logf("the calls chart said %q, then %q; %d contacts done at the pause", before, after, done)
	if done == 0 || done == 10000 {
		t.Fatalf("%d contacts done after the pause", done)
	}

	// The export the page's form downloads, all of it, is the admin API's
	// contacts, row for row.
	var got string
	run(chromedp.Evaluate(`(async () => { const f = document.getElementById("export");
			const r = await fetch(f.action + "?" + new URLSearchParams(new FormData(f))); return await r.text(); })()`, &got,
		func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	compareExportWithContacts(t, s, got, 10000, done)
	// A hand-made link with bad filters: the page again, every problem named.
	run(chromedp.Navigate(s.url+"/console/apps/qa-key/campaigns/camp-browser/results.csv?state=lost&from=monday"),
		chromedp.WaitVisible(".problems", chromedp.ByQuery))
	if got := text(".problems"); !strings.Contains(got, "state") || !strings.Contains(got, "from") {
		t.Fatalf("the problems shown: %q", got)
	}

	run(chromedp.Navigate(s.url+"/console/apps/qa-key/campaigns/camp-browser"), chromedp.WaitVisible("#stop", chromedp.ByID),
		chromedp.Click("#stop", chromedp.ByID), chromedp.WaitVisible(".flash.ok", chromedp.ByQuery))
	run(chromedp.Navigate(s.url+"/console/audit"), chromedp.WaitVisible("#audit", chromedp.ByID))
	shot("audit", "#audit")
	log := text("#audit")
	for _, want := range []string{"/new-scenario", "/new-scenario/try", "tried the script: 4 steps", "/scenarios/sc-browser/status", "/campaigns/camp-browser/resume", "/campaigns/camp-browser/pause", "/campaigns/camp-browser/upload",
		"/campaigns/camp-browser/stop", "Lan (sign-in"} {
		if !strings.Contains(log, want) {
			t.Errorf("the audit log lacks %q:\n%s", want, log)
		}
	}
}

// compareExportWithContacts checks a campaign's results CSV, as the
// browser read it (no byte order mark), against every one of the admin
// API's contacts of camp-browser, paged: the export is oldest first, the
// list newest first, so row i is the list's contact n-1-i. done is how
// many of them are done.
func compareExportWithContacts(t *testing.T, s *testServer, export string, n, done int) {
	t.Helper()
	type contact struct {
		ID         string            `json:"id"`
		CampaignID string            `json:"campaign_id"`
		Phone      string            `json:"phone"`
		Fields     map[string]string `json:"fields"`
		State      string            `json:"state"`
		Outcome    string            `json:"outcome"`
		Attempts   int               `json:"attempts"`
	}
	var contacts []contact
	for cursor := ""; ; {
		var page struct {
			Contacts   []contact `json:"contacts"`
			NextCursor string    `json:"next_cursor"`
		}
		s.admin(t, "GET", "/apps/qa-key/contacts?campaign_id=camp-browser&limit=500&cursor="+cursor, "", &page)
		contacts = append(contacts, page.Contacts...)
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	rows, err := csv.NewReader(strings.NewReader(export)).ReadAll()
	if err != nil {
		t.Fatalf("the export is no CSV: %v", err)
	}
	if len(contacts) != n || len(rows) != n+1 {
		t.Fatalf("%d contacts listed, %d rows exported; want %d", len(contacts), len(rows)-1, n)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	fieldCols := rows[0][col["phone"]+1 : col["other_fields"]] // the scenario's personalized fields
	doneRows := 0
	for i, row := range rows[1:] {
		c := contacts[n-1-i]
		fields := map[string]string{}
		if err := json.Unmarshal([]byte(row[col["other_fields"]]), &fields); row[col["other_fields"]] != "" && err != nil {
			t.Fatalf("row %d's other_fields: %v", i+1, err)
		}
		for j, name := range fieldCols {
			if v := row[col["phone"]+1+j]; v != "" {
				fields[name] = v
			}
		}
		exported := contact{ID: row[col["contact_id"]], CampaignID: row[col["campaign_id"]], Phone: row[col["phone"]], Fields: fields,
			State: row[col["state"]], Outcome: row[col["outcome"]]}
		exported.Attempts, _ = strconv.Atoi(row[col["attempts"]])
		if !reflect.DeepEqual(exported, c) {
			t.Fatalf("row %d of the export is\n%+v\nthe admin API's contact\n%+v", i+1, exported, c)
		}
		if c.State == "done" {
			doneRows++
		}
	}
	if doneRows != done {
		t.Fatalf("%d rows done, %d contacts", doneRows, done)
	}
}
