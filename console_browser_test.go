package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"dialbox/internal/sandbox"
	"dialbox/internal/testtool"
)

// The console in a real browser (Debian's chromium, headless): one browser
// and one dialbox for every step, which wait for what the page shows,
// never for a duration. DIALBOX_SCREENSHOTS=1 also writes the PNGs of
// docs/console/ from the same pages.
func TestConsoleInBrowser(t *testing.T) {
	chromium := testtool.RequireBrowser(t)
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	s := startSandbox(t, "DIALBOX_ENGINE_ENABLED=true", "DIALBOX_SIMULATOR_TIME_SCALE=4")
	shots := os.Getenv("DIALBOX_SCREENSHOTS") == "1"

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 900))...)
	t.Cleanup(cancelAlloc)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Run(browser); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	// tab opens a tab of the shared browser, bounded so a hung step fails.
	tab := func(t *testing.T) context.Context {
		ctx, cancel := chromedp.NewContext(browser)
		t.Cleanup(cancel)
		ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
		t.Cleanup(cancelT)
		return ctx
	}
	run := func(t *testing.T, ctx context.Context, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(ctx, actions...); err != nil {
			t.Fatal(err)
		}
	}
	shot := func(t *testing.T, ctx context.Context, name string) {
		t.Helper()
		if !shots {
			return
		}
		var png []byte
		run(t, ctx, chromedp.FullScreenshot(&png, 100)) // quality 100: PNG
		if err := os.WriteFile(filepath.Join("docs", "console", name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	signIn := func(t *testing.T, ctx context.Context) {
		t.Helper()
		run(t, ctx, chromedp.Navigate(s.url+"/console/"), chromedp.WaitVisible("#token", chromedp.ByID),
			chromedp.SendKeys("#token", testAdminToken, chromedp.ByID))
		shot(t, ctx, "signin")
		run(t, ctx, chromedp.Submit("#token", chromedp.ByID), chromedp.WaitVisible("#tenants", chromedp.ByID))
	}
	text := func(t *testing.T, ctx context.Context, sel string) string {
		t.Helper()
		var v string
		run(t, ctx, chromedp.Text(sel, &v, chromedp.ByQuery))
		return strings.TrimSpace(v)
	}
	number := func(t *testing.T, ctx context.Context, id string) int {
		n, _ := strconv.Atoi(strings.ReplaceAll(text(t, ctx, "#"+id), ",", ""))
		return n
	}
	auth := bearer(t, "qa-key", "qa-secret")
	var contacts []string
	for range 60 {
		contacts = append(contacts, `{"phone_number":"0900000009","ho_ten":"A"}`)
	}
	// A webhook endpoint on the sink, so calls leave messages to look at.
	if status, b := s.do(t, "POST", "/admin/v1/apps/qa-key/webhooks", adminAuth, `{"url":"`+s.url+`/sink/qa"}`); status != 200 {
		t.Fatalf("webhook endpoint: %d %s", status, b)
	}

	ctx := tab(t)
	t.Run("sign in", func(t *testing.T) {
		signIn(t, ctx)
		if shots {
			run(t, ctx, chromedp.EmulateViewport(360, 740))
			shot(t, ctx, "overview-360")
			run(t, ctx, chromedp.EmulateViewport(1280, 900))
		}
		shot(t, ctx, "overview")
	})

	t.Run("counters move live, pause stops dialling", func(t *testing.T) {
		run(t, ctx, chromedp.Navigate(s.url+"/console/apps/qa-key/campaigns/camp-1"), chromedp.WaitVisible("#pause", chromedp.ByID),
			chromedp.Poll(`document.getElementById("live-status").textContent.startsWith("Live")`, nil))
		before := number(t, ctx, "n-done")
		if status, b := s.do(t, "POST", "/api/v1/public-api/campaign", auth,
			`{"campaign_id":"camp-1","contacts":[`+strings.Join(contacts, ",")+`]}`); status != 200 {
			t.Fatalf("operation C: %d %s", status, b)
		}
		// The page is not reloaded: the numbers change through the stream.
		run(t, ctx, chromedp.Poll(`Number(document.getElementById("n-done").textContent.replace(/,/g, "")) > `+strconv.Itoa(before)+
			` && Number(document.getElementById("n-queued").textContent.replace(/,/g, "")) > 0`, nil))
		shot(t, ctx, "campaign")
		run(t, ctx, chromedp.Click("#pause", chromedp.ByID), chromedp.WaitVisible("#resume", chromedp.ByID),
			chromedp.Poll(`document.getElementById("n-dialing").textContent === "0"`, nil),
			chromedp.Poll(`document.getElementById("state").textContent.includes("paused")`, nil))
		queued := number(t, ctx, "n-queued")
		if queued == 0 || queryInt(t, s.m.store, `SELECT count(*) FROM contacts WHERE state = 'dialing'`) != 0 {
			t.Fatalf("after pausing: %d queued shown, want some left and none dialling", queued)
		}
		s.m.engine.Notify(1)
		if n := queryInt(t, s.m.store, `SELECT count(*) FROM contacts WHERE campaign_id = 'camp-1' AND state = 'queued'`); n != queued {
			t.Fatalf("paused, yet %d contacts are queued where the page showed %d", n, queued)
		}
	})

	t.Run("open a contact", func(t *testing.T) {
		run(t, ctx, chromedp.Navigate(s.url+"/console/apps/qa-key/contacts"), chromedp.WaitVisible("#phone", chromedp.ByID),
			chromedp.SendKeys("#phone", "0900 000 009", chromedp.ByID), chromedp.SetValue("#state", "done", chromedp.ByID),
			chromedp.Submit("#phone", chromedp.ByID),
			// The unfiltered list has contact links too: wait for the
			// filtered page (its phone field holds the search as sent)
			// before clicking one, or the click may open another contact
			// of the list the submit is leaving.
			chromedp.WaitVisible(`#phone[value="0900 000 009"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`tbody a[href*="/contacts/"]`, chromedp.ByQuery),
			chromedp.Click(`tbody a[href*="/contacts/"]`, chromedp.ByQuery), chromedp.WaitVisible("#contact-state", chromedp.ByID))
		if got := text(t, ctx, "#contact-state"); got != "done" {
			t.Fatalf("contact state %q", got)
		}
		if body := text(t, ctx, "main"); !strings.Contains(body, "Attempt 1: ANSWERED") || !strings.Contains(body, "Hotline") {
			t.Fatalf("the contact's page lacks its call:\n%s", body)
		}
		shot(t, ctx, "contact")
	})

	t.Run("resend a dead webhook", func(t *testing.T) {
		waitFor(t, "a delivered message", func() bool {
			return queryInt(t, s.m.store, `SELECT count(*) FROM webhook_messages WHERE state = 'delivered'`) > 0
		})
		var id string
		if err := sqliteAt(t, s.m.Config.Database).QueryRow(`SELECT id FROM webhook_messages WHERE state = 'delivered' LIMIT 1`).Scan(&id); err != nil {
			t.Fatal(err)
		}
		s.exec(t, `UPDATE webhook_messages SET state = 'dead' WHERE id = ?`, id)
		page := s.url + "/console/apps/qa-key/webhook-messages/" + id
		run(t, ctx, chromedp.Navigate(page), chromedp.WaitVisible("#resend", chromedp.ByID))
		if got := text(t, ctx, "#message-state"); got != "dead (failed)" {
			t.Fatalf("state shown %q, want it said in words", got)
		}
		run(t, ctx, chromedp.Click("#resend", chromedp.ByID), chromedp.WaitVisible(".flash.ok", chromedp.ByQuery))
		waitFor(t, "the message delivered again", func() bool {
			return queryInt(t, s.m.store, `SELECT count(*) FROM webhook_messages WHERE id = ? AND state = 'delivered'`, id) == 1
		})
		run(t, ctx, chromedp.Navigate(page), chromedp.WaitVisible("#message-state", chromedp.ByID))
		if got := text(t, ctx, "#message-state"); got != "delivered" {
			t.Fatalf("after resending the page says %q", got)
		}
		shot(t, ctx, "message")
	})

	t.Run("a fault rule shows in the journal", func(t *testing.T) {
		run(t, ctx, chromedp.Navigate(s.url+"/console/faults"), chromedp.WaitVisible("#target", chromedp.ByID),
			chromedp.SetValue("#target", "A:1402", chromedp.ByID), chromedp.SetValue("#e-times", "2", chromedp.ByID),
			chromedp.Submit("#target", chromedp.ByID), chromedp.WaitVisible("tr.rule", chromedp.ByQuery))
		status, _ := s.do(t, "POST", "/api/v1/public-api/scenarios/sc-remind/calls", auth, `{"contacts":[{"phone_number":"0900000009","ho_ten":"A"}]}`)
		if status != 500 {
			t.Fatalf("the rule did not answer: HTTP %d", status)
		}
		run(t, ctx, chromedp.Navigate(s.url+"/console/faults"), chromedp.WaitVisible("tr.rule", chromedp.ByQuery))
		shot(t, ctx, "faults")
		run(t, ctx, chromedp.Navigate(s.url+"/console/journal?code=1402"), chromedp.WaitVisible("tr.entry", chromedp.ByQuery))
		if got := text(t, ctx, "tr.entry td.code"); got != "1402 (error)" {
			t.Fatalf("journal shows code %q", got)
		}
		shot(t, ctx, "journal")
	})

	t.Run("copy as curl reproduces the request", func(t *testing.T) {
		testtool.Require(t, "curl", "curl")
		before := s.m.api.journal.Latest()
		var cmd string
		run(t, ctx, chromedp.Navigate(s.url+"/console/journal"), chromedp.Click("tr.entry a", chromedp.ByQuery),
			chromedp.WaitVisible("#curl", chromedp.ByID), chromedp.Value("#curl", &cmd, chromedp.ByID))
		first, _ := s.m.api.journal.Find(sandbox.JournalFilter{BeforeID: before + 1}, 1)
		if out, err := exec.Command("sh", "-c", cmd).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v %s", cmd, err, out)
		}
		again, _ := s.m.api.journal.Find(sandbox.JournalFilter{}, 1)
		a, b := first[0], again[0]
		if b.ID == a.ID || a.Method != b.Method || a.Path != b.Path || a.RequestBody != b.RequestBody || a.Authorization != b.Authorization {
			t.Fatalf("the command sent %+v, not %+v", b, a)
		}
	})

	t.Run("a form without its CSRF token is refused", func(t *testing.T) {
		var body string
		run(t, ctx, chromedp.Navigate(s.url+"/console/apps/qa-key/campaigns/camp-1"), chromedp.WaitVisible("#resume", chromedp.ByID),
			chromedp.Evaluate(`document.querySelectorAll('input[name="csrf"]').forEach(e => e.remove())`, nil),
			chromedp.Click("#resume", chromedp.ByID), chromedp.WaitVisible(".flash.failed", chromedp.ByQuery),
			chromedp.Text("main", &body, chromedp.ByQuery))
		if !strings.Contains(body, "security token") {
			t.Fatalf("refusal page:\n%s", body)
		}
		if camp, _ := s.m.store.Campaign(context.Background(), 1, "camp-1"); !camp.Paused {
			t.Fatal("the forged form resumed the campaign")
		}
	})

	t.Run("pages work with JavaScript off", func(t *testing.T) {
		nojs := tab(t)
		// Tabs share cookies: sign out first, to sign in with JavaScript off.
		run(t, nojs, network.ClearBrowserCookies(), emulation.SetScriptExecutionDisabled(true))
		signIn(t, nojs)
		var hidden bool
		run(t, nojs, chromedp.Navigate(s.url+"/console/apps/qa-key/campaigns/camp-1"), chromedp.WaitVisible("#resume", chromedp.ByID),
			chromedp.Evaluate(`document.getElementById("live-toggle").hidden`, &hidden))
		if !hidden {
			t.Fatal("the live toggle shows without JavaScript")
		}
		// The sink's reset asks for its box to be ticked first.
		kept := s.m.sink.Find(sandbox.SinkFilter{})
		if len(kept) == 0 {
			t.Fatal("no webhook in the sink to reset")
		}
		last := kept[len(kept)-1].ID
		run(t, nojs, chromedp.Navigate(s.url+"/console/sink"), chromedp.WaitVisible("#confirm", chromedp.ByID),
			chromedp.Click("#confirm", chromedp.ByID), chromedp.Click("#reset-sink", chromedp.ByID),
			chromedp.WaitVisible(".flash.ok", chromedp.ByQuery))
		if left := s.m.sink.Find(sandbox.SinkFilter{}); len(left) > 0 && left[0].ID <= last {
			t.Fatalf("after the confirmed reset the sink still holds message %d", left[0].ID)
		}
		run(t, nojs, chromedp.Navigate(s.url+"/console/apps/qa-key/campaigns/camp-1"), chromedp.WaitVisible("#resume", chromedp.ByID),
			chromedp.Click("#resume", chromedp.ByID), chromedp.WaitVisible("#pause", chromedp.ByID),
			chromedp.WaitVisible(".flash.ok", chromedp.ByQuery))
		if camp, _ := s.m.store.Campaign(context.Background(), 1, "camp-1"); camp.Paused {
			t.Fatal("resume without JavaScript did not resume")
		}
	})

	t.Run("a call's transcript reads as a conversation, escaped", func(t *testing.T) {
		s.admin(t, "PATCH", "/apps/qa-key/scenarios/sc-remind", `{"script":{"steps":[
			{"name":"ask","gather":{"input":["speech"],"prompt":{"say":"Chào {{ho_ten}}, anh có đến không?"},"timeout":"5s",
				"branches":{"có":"yes"}}},
			{"name":"yes","say":{"text":"Cảm ơn anh."}}]}}`, nil)
		s.admin(t, "POST", "/faults", `{"kind":"dial","phone":"0912000777","says":["<b>Có</b> ạ"],"times":1}`, nil)
		if status, b := s.do(t, "POST", "/api/v1/public-api/scenarios/sc-remind/calls", auth,
			`{"contacts":[{"phone_number":"0912000777","ho_ten":"<i>An</i>"}]}`); status != 200 {
			t.Fatalf("operation A: %d %s", status, b)
		}
		waitFor(t, "the call done", func() bool {
			return queryInt(t, s.m.store, `SELECT count(*) FROM contacts WHERE phone = '+84912000777' AND state = 'done'`) == 1
		})
		run(t, ctx, chromedp.Navigate(s.url+"/console/apps/qa-key/contacts?phone=0912000777"), chromedp.WaitVisible(`tbody a[href*="/contacts/"]`, chromedp.ByQuery),
			chromedp.Click(`tbody a[href*="/contacts/"]`, chromedp.ByQuery), chromedp.WaitVisible(".transcript", chromedp.ByQuery))
		var said []string
		var tags int
		run(t, ctx, chromedp.Evaluate(`[...document.querySelectorAll(".transcript .turn")].map(li => li.classList[1] + ": " + li.querySelector(".said").textContent)`, &said),
			chromedp.Evaluate(`document.querySelectorAll(".transcript b, .transcript i").length`, &tags))
		want := []string{"bot: Chào <i>An</i>, anh có đến không?", "callee: <b>Có</b> ạ", "bot: Cảm ơn anh."}
		if strings.Join(said, "|") != strings.Join(want, "|") || tags != 0 {
			t.Fatalf("the page shows %q (%d tags made of the text), want %q", said, tags, want)
		}
		shot(t, ctx, "transcript")
	})
}
