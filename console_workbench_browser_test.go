package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"dialbox/internal/testtool"
)

// A supervisor's day in a real browser, on each store: sign in under a
// name, write a scenario with a script, submit and approve it, create a
// campaign, upload its contacts, start it, take its results away (the CSV
// the admin API gives), stop it, and find all of it in the audit log.
func TestConsoleWorkbenchInBrowser(t *testing.T) { eachBackend(t, testConsoleWorkbenchInBrowser) }

func testConsoleWorkbenchInBrowser(t *testing.T, backend string) {
	chromium := testtool.RequireBrowser(t)
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	s := startSandboxOn(t, backend, "DIALBOX_ENGINE_ENABLED=true", "DIALBOX_SIMULATOR_TIME_SCALE=1000")
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
	// Its contacts come as a file, one row of which is no phone number.
	var file strings.Builder
	file.WriteString("phone_number,ho_ten\n")
	for i := range 20 {
		fmt.Fprintf(&file, "09123456%02d,Khách %d\n", i, i)
	}
	file.WriteString("12,Sai\n")
	csvPath := filepath.Join(t.TempDir(), "contacts.csv")
	if err := os.WriteFile(csvPath, []byte(file.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	run(chromedp.SetUploadFiles("#contacts-file", []string{csvPath}, chromedp.ByID), chromedp.Click("#upload-csv", chromedp.ByID),
		chromedp.WaitVisible("#upload-done", chromedp.ByID))
	if got := text("#upload-summary"); got != "21 rows read: 20 contacts added, 1 skipped." {
		t.Fatalf("the upload says %q", got)
	}
	shot("upload", "")
	var skipped string
	run(chromedp.Evaluate(`(async () => (await fetch(document.getElementById("skipped-rows").href)).text())()`, &skipped,
		func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	if !strings.HasPrefix(skipped, "row,reason,phone_number,ho_ten\n22,") {
		t.Fatalf("the skipped rows: %q", skipped)
	}
	run(chromedp.Navigate(s.url+"/console/apps/qa-key/campaigns/camp-browser"), chromedp.WaitVisible("#resume", chromedp.ByID))
	run(chromedp.Click("#resume", chromedp.ByID), chromedp.WaitVisible("#pause", chromedp.ByID),
		chromedp.Poll(`Number(document.getElementById("n-done").textContent.replace(/,/g, "")) === 20`, nil))

	// The export the page's form downloads is the admin API's.
	var got string
	run(chromedp.SetValue("#export-state", "done", chromedp.ByID),
		chromedp.Evaluate(`(async () => { const f = document.getElementById("export");
			const r = await fetch(f.action + "?" + new URLSearchParams(new FormData(f))); return await r.text(); })()`, &got,
			func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	_, want := s.do(t, "GET", "/admin/v1/apps/qa-key/campaigns/camp-browser/results.csv?state=done&outcome=&from=&to=", adminAuth, "")
	// (The browser reads the text without its byte order mark.)
	if got != strings.TrimPrefix(string(want), "\uFEFF") || strings.Count(got, "\n") != 21 {
		t.Fatalf("the console's export differs from the admin API's:\n%.300q\n%.300q", got, want)
	}
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
	for _, want := range []string{"/new-scenario", "/new-scenario/try", "tried the script: 4 steps", "/scenarios/sc-browser/status", "/campaigns/camp-browser/resume", "/campaigns/camp-browser/upload",
		"/campaigns/camp-browser/stop", "Lan (sign-in"} {
		if !strings.Contains(log, want) {
			t.Errorf("the audit log lacks %q:\n%s", want, log)
		}
	}
}
