package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"dialbox/internal/testtool"
)

// The charts in a real browser (Debian's chromium, headless): a campaign's
// page has its three charts with their text alternatives, and they move,
// without a reload, when calls end. DIALBOX_SCREENSHOTS=1 also writes
// docs/console/charts.png.
func TestConsoleChartsInBrowser(t *testing.T) {
	chromium := testtool.RequireBrowser(t)
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	s := startSandbox(t, "DIALBOX_ENGINE_ENABLED=true", "DIALBOX_SIMULATOR_TIME_SCALE=20")
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 1400))...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	ctx, cancelT := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancelT)
	run := func(actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(ctx, actions...); err != nil {
			t.Fatal(err)
		}
	}
	run(chromedp.Navigate(s.url+"/console/"), chromedp.WaitVisible("#token", chromedp.ByID),
		chromedp.SendKeys("#token", testAdminToken, chromedp.ByID), chromedp.Submit("#token", chromedp.ByID),
		chromedp.WaitVisible("#tenants", chromedp.ByID))
	// A first call, so the campaign exists.
	auth := bearer(t, "qa-key", "qa-secret")
	if status, b := s.do(t, "POST", "/api/v1/public-api/campaign", auth,
		`{"campaign_id":"camp-1","contacts":[{"phone_number":"0900000001","ho_ten":"A"}]}`); status != 200 {
		t.Fatalf("operation C: %d %s", status, b)
	}
	waitFor(t, "the first call to end", func() bool {
		return queryInt(t, s.m.store, `SELECT count(*) FROM calls WHERE state = 'ended'`) == 1
	})
	run(chromedp.Navigate(s.url+"/console/apps/qa-key/campaigns/camp-1"), chromedp.WaitVisible("#chart-calls", chromedp.ByID),
		chromedp.Poll(`document.getElementById("live-status").textContent.startsWith("Live")`, nil))
	var alt string
	run(chromedp.Evaluate(`["chart-calls", "chart-rate", "chart-mix"].map(id => {
		const svg = document.getElementById(id);
		const ids = (svg.getAttribute("aria-labelledby") || "").split(" ");
		return svg.getAttribute("role") + "|" + ids.map(i => document.getElementById(i).textContent.trim()).join("|");
	}).join("\n") + "\n" + document.getElementById("chart-calls-text").textContent + "\n" +
		document.getElementById("chart-mix-table").textContent`, &alt))
	for _, want := range []string{"img|Calls of campaign camp-1 started and ended per minute|1 started and 1 ended",
		"img|Answer rate of campaign camp-1", "img|Outcomes of the calls of campaign camp-1", "1 calls started and 1 ended", "ANSWERED"} {
		if !strings.Contains(alt, want) {
			t.Errorf("the charts' text alternatives lack %q:\n%s", want, alt)
		}
	}
	var bars int
	run(chromedp.Evaluate(`document.querySelectorAll("#chart-calls rect").length`, &bars))
	if bars == 0 {
		t.Fatal("the calls chart draws no bar")
	}
	var contacts []string
	for range 5 {
		contacts = append(contacts, `{"phone_number":"0900000002","ho_ten":"B"}`)
	}
	if status, b := s.do(t, "POST", "/api/v1/public-api/campaign", auth,
		`{"campaign_id":"camp-1","contacts":[`+strings.Join(contacts, ",")+`]}`); status != 200 {
		t.Fatalf("operation C: %d %s", status, b)
	}
	// Not reloaded: the stream redraws the charts as the calls end.
	run(chromedp.Poll(`document.getElementById("chart-calls-desc").textContent.includes("6 ended")`, nil))
	if os.Getenv("DIALBOX_SCREENSHOTS") == "1" {
		var png []byte
		run(chromedp.ScrollIntoView("#charts", chromedp.ByID), chromedp.Screenshot("#charts", &png, chromedp.ByID))
		if err := os.WriteFile(filepath.Join("docs", "console", "charts.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
