package main

import (
	"context"
	"errors"
	"html"
	"io"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"dialbox/internal/config"
	"dialbox/internal/domain"
	"dialbox/internal/sandbox"
	"dialbox/internal/testtool"
)

// consoleClient is a browser without JavaScript: a cookie jar, and no
// following of redirects, so each POST-redirect-GET step is seen.
type consoleClient struct {
	t    testing.TB
	base string
	http *http.Client
}

func newConsoleClient(t testing.TB, base string) *consoleClient {
	jar, _ := cookiejar.New(nil)
	return &consoleClient{t: t, base: base, http: &http.Client{Jar: jar, Timeout: time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (c *consoleClient) get(path string) (*http.Response, string) {
	c.t.Helper()
	resp, err := c.http.Get(c.base + path)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func (c *consoleClient) post(path string, form url.Values) (*http.Response, string) {
	c.t.Helper()
	resp, err := c.http.PostForm(c.base+path, form)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the form token of the page at path.
func (c *consoleClient) csrf(path string) string {
	c.t.Helper()
	_, body := c.get(path)
	m := csrfInput.FindStringSubmatch(body)
	if m == nil {
		c.t.Fatalf("%s has no CSRF token:\n%s", path, body)
	}
	return m[1]
}

// signIn signs in with token and returns the sign-in's answer.
func (c *consoleClient) signIn(token string) *http.Response {
	c.t.Helper()
	resp, _ := c.post("/console/signin", url.Values{"csrf": {c.csrf("/console/signin")}, "token": {token}, "next": {"/console/"}})
	return resp
}

func signedIn(t testing.TB, s *testServer) *consoleClient {
	t.Helper()
	c := newConsoleClient(t, s.url)
	if resp := c.signIn(testAdminToken); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/" {
		t.Fatalf("sign-in answered %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return c
}

func TestConsoleSignInCookieAndHeaders(t *testing.T) {
	s := startSandbox(t)
	c := newConsoleClient(t, s.url)
	resp, _ := c.get("/console/")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/console/signin") {
		t.Fatalf("signed out, the overview answered %d to %q, want a redirect to sign in", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp := c.signIn("wrong-token-0123456789"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong token answered %d, want 401", resp.StatusCode)
	}
	resp = c.signIn(testAdminToken)
	var session *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == sessionCookie {
			session = ck
		}
	}
	if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Path != "/console/" || session.Secure {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, Path=/console/, not Secure over plain HTTP", session)
	}
	resp, body := c.get("/console/")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "QA tenant") {
		t.Fatalf("overview answered %d:\n%s", resp.StatusCode, body)
	}
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(body, "style=") || strings.Contains(body, "<script>") || strings.Contains(body, " on") && regexp.MustCompile(` on[a-z]+=`).MatchString(body) {
		t.Errorf("inline script or style in the page or the CSP")
	}
	// Signing out ends the session: the same cookie no longer opens pages.
	resp, _ = c.post("/console/signout", url.Values{"csrf": {c.csrf("/console/")}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out answered %d", resp.StatusCode)
	}
	if resp, _ := c.get("/console/"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("after sign-out the overview answered %d, want a redirect to sign in", resp.StatusCode)
	}
}

func TestConsoleRefusesFormsWithoutCSRF(t *testing.T) {
	s := startSandbox(t)
	c := signedIn(t, s)
	for _, form := range []url.Values{{}, {"csrf": {"forged"}}} {
		resp, body := c.post("/console/apps/qa-key/campaigns/camp-1/pause", form)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "security token") {
			t.Fatalf("a form with %v answered %d:\n%s", form, resp.StatusCode, body)
		}
	}
	if camp, _ := s.m.store.Campaign(context.Background(), 1, "camp-1"); camp.Paused {
		t.Fatal("a refused form paused the campaign")
	}
	// The sign-in form too: without its token nobody is signed in.
	fresh := newConsoleClient(t, s.url)
	if resp, _ := fresh.post("/console/signin", url.Values{"token": {testAdminToken}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a sign-in without its token answered %d, want 403", resp.StatusCode)
	}
	// With the token the same form works, as a POST-redirect-GET.
	resp, _ := c.post("/console/apps/qa-key/campaigns/camp-1/pause", url.Values{"csrf": {c.csrf("/console/")}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("pause answered %d", resp.StatusCode)
	}
	if _, body := c.get(resp.Header.Get("Location")); !strings.Contains(body, "Done: Paused") || !strings.Contains(body, "Resume campaign") {
		t.Fatalf("the campaign page after pausing:\n%s", body)
	}
}

func TestConsoleSessionExpires(t *testing.T) {
	s := startSandbox(t, "DIALBOX_CONSOLE_SESSION_MAX_AGE=1h")
	now := time.Now()
	s.m.console.now = func() time.Time { return now }
	c := signedIn(t, s)
	now = now.Add(59 * time.Minute)
	if resp, _ := c.get("/console/"); resp.StatusCode != http.StatusOK {
		t.Fatalf("before max age the overview answered %d", resp.StatusCode)
	}
	now = now.Add(time.Minute)
	if resp, _ := c.get("/console/"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("at max age the overview answered %d, want a redirect to sign in", resp.StatusCode)
	}
}

func TestConsoleRateLimitsWrongTokens(t *testing.T) {
	s := startSandbox(t)
	now := time.Now()
	s.m.console.now = func() time.Time { return now }
	c := newConsoleClient(t, s.url)
	for range config.DefaultConfig().Admin.WrongTokensPerAddress {
		if resp := c.signIn("wrong-token-0123456789"); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong token answered %d", resp.StatusCode)
		}
	}
	resp := c.signIn(testAdminToken)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("after %d wrong tokens the right one answered %d (Retry-After %q), want 429 with Retry-After",
			config.DefaultConfig().Admin.WrongTokensPerAddress, resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	now = now.Add(time.Minute)
	if resp := c.signIn(testAdminToken); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("a minute later the right token answered %d", resp.StatusCode)
	}
}

// Each reason a scenario is not dialled, as the scheduler's rule gives it.
func TestDialHoldReasons(t *testing.T) {
	now := time.Date(2026, 3, 2, 20, 0, 0, 0, time.UTC) // a Monday, 20:00 UTC = 03:00 in Ho Chi Minh City
	window := func(start, end string) *domain.ParsedCallWindow {
		w, err := domain.ParseCallWindow(domain.CallWindow{Start: start, End: end, Timezone: "Asia/Ho_Chi_Minh"})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	open := window("00:00", "24:00")
	paid := domain.Wallet{Prepaid: true, Balance: 5000, PricePerCall: 1000}
	expired := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   domain.DialInputs
		kind string
		text string
	}{
		{domain.DialInputs{Status: domain.StatusDraft, Window: open, Wallet: paid, EnabledHotlines: 1}, domain.HoldNotActive, "the scenario is DRAFT, not ACTIVE"},
		{domain.DialInputs{Status: domain.StatusActive, WindowErr: errors.New("bad"), Wallet: paid, EnabledHotlines: 1}, domain.HoldBadWindow, "cannot be read"},
		{domain.DialInputs{Status: domain.StatusActive, Window: window("08:00", "20:00"), Wallet: paid, EnabledHotlines: 1}, domain.HoldOutsideWindow, "outside the call window until Tue 08:00 +07"},
		{domain.DialInputs{Status: domain.StatusActive, Window: open, AdHours: window("08:00", "17:00"), Wallet: paid, EnabledHotlines: 1}, domain.HoldAdHours, "outside the advertising hours until Tue 08:00 +07"},
		// Inside its own window, before the hours open; then one that never meets them.
		{domain.DialInputs{Status: domain.StatusActive, Window: window("02:00", "12:00"), AdHours: window("08:00", "17:00"), Wallet: paid, EnabledHotlines: 1}, domain.HoldAdHours, "until Tue 08:00 +07"},
		{domain.DialInputs{Status: domain.StatusActive, Window: window("18:00", "24:00"), AdHours: window("08:00", "17:00"), Wallet: paid, EnabledHotlines: 1}, domain.HoldOutsideWindow, "outside the call window"},
		{domain.DialInputs{Status: domain.StatusActive, Window: window("02:00", "07:00"), AdHours: window("08:00", "17:00"), Wallet: paid, EnabledHotlines: 1}, domain.HoldAdHours, "never meets the advertising hours"},
		{domain.DialInputs{Status: domain.StatusActive, Window: open, Wallet: domain.Wallet{Prepaid: true, Balance: 999, PricePerCall: 1000}, EnabledHotlines: 1}, domain.HoldWalletEmpty, "wallet is empty"},
		{domain.DialInputs{Status: domain.StatusActive, Window: open, Wallet: domain.Wallet{Prepaid: true, Balance: 5000, ExpiresAt: &expired}, EnabledHotlines: 1}, domain.HoldWalletExpired, "wallet has expired"},
		{domain.DialInputs{Status: domain.StatusActive, Window: open, Wallet: paid, Pool: "POOL_X"}, domain.HoldNoHotline, "no enabled hotline in pool POOL_X"},
		{domain.DialInputs{Status: domain.StatusActive, Window: open, Wallet: domain.Wallet{Prepaid: false, Balance: -5}, EnabledHotlines: 1}, "", ""},
		{domain.DialInputs{Status: domain.StatusActive, Window: open, Wallet: domain.Wallet{Prepaid: true, Balance: -5}, EnabledHotlines: 1}, "", ""}, // free calls
	} {
		h, held := domain.DialHold(tc.in, now)
		if h.Kind != tc.kind || held != (tc.kind != "") || !strings.Contains(h.Text(), tc.text) {
			t.Errorf("%+v: held %v %q (%q), want %q saying %q", tc.in, held, h.Kind, h.Text(), tc.kind, tc.text)
		}
	}
	if got := (domain.Hold{Kind: domain.HoldPaused}).Text(); got != "not dialling: paused" {
		t.Errorf("paused reads %q", got)
	}
}

// The overview says why each scenario is not dialling, by dialHold.
func TestConsoleOverviewSaysWhyNotDialling(t *testing.T) {
	eachBackend(t, testConsoleOverviewSaysWhyNotDialling)
}

func testConsoleOverviewSaysWhyNotDialling(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	s.exec(t, `UPDATE scenarios SET status = 'DRAFT' WHERE id = 'sc-second'`)
	s.exec(t, `UPDATE wallets SET balance = 10 WHERE app_id = 1`)
	s.exec(t, `UPDATE hotlines SET enabled = 0 WHERE app_id = 2`)
	s.exec(t, `UPDATE wallets SET prepaid = 0 WHERE app_id = 2`)
	s.admin(t, "PATCH", "/apps/other-key/scenarios/sc-other", `{"call_config":{"call_window":{"start":"00:00","end":"24:00"}}}`, nil)
	s.m.catalog.mu.Lock()
	s.m.catalog.entries = nil // the updates above went around the store
	s.m.catalog.mu.Unlock()
	c := signedIn(t, s)
	_, body := c.get("/console/")
	for _, want := range []string{
		`data-hold="not_active">not dialling: the scenario is DRAFT, not ACTIVE`,
		`data-hold="wallet_empty">not dialling: the prepaid wallet is empty`,
		`data-hold="no_hotline">not dialling: no enabled hotline in pool POOL_SYSTEM`,
		`— no enabled hotline`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("overview lacks %q:\n%s", want, body)
		}
	}
}

// "Copy as curl" sends the same request again: run the command the page
// shows, and the journal's newest entry is the first one over again.
func TestConsoleCopyAsCurlReproducesTheRequest(t *testing.T) {
	testtool.Require(t, "curl", "curl")
	s := startSandbox(t)
	auth := bearer(t, "qa-key", "qa-secret")
	body := `{"contacts":[{"phone_number":"0900000009","ho_ten":"O'Brien \"quoted\" $HOME` + "`x`" + `"}]}`
	if status, b := s.do(t, "POST", "/api/v1/public-api/scenarios/sc-remind/calls?src=test&x=a%20b", auth, body); status != 200 {
		t.Fatalf("operation A answered %d %s", status, b)
	}
	first, _ := s.m.api.journal.Find(sandbox.JournalFilter{}, 1)
	c := signedIn(t, s)
	_, page := c.get("/console/journal/" + itoa(first[0].ID))
	m := regexp.MustCompile(`(?s)<textarea id="curl"[^>]*>(.*?)</textarea>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no curl command on the page:\n%s", page)
	}
	cmd := html.UnescapeString(m[1])
	if out, err := exec.Command("sh", "-c", cmd).CombinedOutput(); err != nil || !strings.Contains(string(out), `"status":1`) {
		t.Fatalf("%s\nanswered %s (%v)", cmd, out, err)
	}
	again, _ := s.m.api.journal.Find(sandbox.JournalFilter{}, 1)
	a, b := first[0], again[0]
	if a.ID == b.ID || a.Method != b.Method || a.Path != b.Path || a.Query != b.Query || a.RequestBody != b.RequestBody ||
		a.Authorization != b.Authorization || a.ContentType != b.ContentType || b.Tenant != "qa-key" {
		t.Fatalf("the command sent\n%+v\nnot the same request as\n%+v", b, a)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// The counts the console reads (kept by triggers: migration 8 on SQLite,
// 10 on PostgreSQL) equal count(*) after imports, calls ending, a pause
// and deletes; on PostgreSQL before and after the changes are folded.
func TestConsoleCountsMatchRows(t *testing.T) { eachBackend(t, testConsoleCountsMatchRows) }

func testConsoleCountsMatchRows(t *testing.T, backend string) {
	s := startSandboxOn(t, backend, "DIALBOX_ENGINE_ENABLED=true", "DIALBOX_SIMULATOR_TIME_SCALE=1000")
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer hook.Close()
	s.admin(t, "POST", "/apps/qa-key/webhooks", `{"url":"`+hook.URL+`"}`, nil)
	auth := bearer(t, "qa-key", "qa-secret")
	var contacts []string
	for _, p := range []string{"0900000001", "0900000002", "0900000003", "0900000009", "0912345678"} {
		contacts = append(contacts, `{"phone_number":"`+p+`","ho_ten":"A"}`)
	}
	if status, b := s.do(t, "POST", "/api/v1/public-api/scenarios/sc-remind/calls", auth, `{"contacts":[`+strings.Join(contacts, ",")+`]}`); status != 200 {
		t.Fatalf("A answered %d %s", status, b)
	}
	if status, b := s.do(t, "POST", "/api/v1/public-api/campaign", auth, `{"campaign_id":"camp-1","contacts":[{"phone_number":"0900000004","ho_ten":"B"}]}`); status != 200 {
		t.Fatalf("C answered %d %s", status, b)
	}
	waitFor(t, "every contact done", func() bool {
		return queryInt(t, s.m.store, `SELECT count(*) FROM contacts WHERE state <> 'done'`) == 0 &&
			queryInt(t, s.m.store, `SELECT count(*) FROM webhook_messages WHERE state = 'pending'`) == 0
	})
	ctx := context.Background()
	type key struct {
		app                int64
		scenario, campaign string
	}
	seen := map[key]bool{}
	endpoints := map[string]bool{}
	var check func(when string)
	check = func(when string) {
		t.Helper()
		// What the rows say, by scenario (campaign "") and by campaign.
		want := map[key]map[[2]string]int64{}
		queryRows(t, s.m.store, `SELECT app_id, scenario_id, coalesce(campaign_id, ''), state, coalesce(outcome, ''), count(*)
			FROM contacts GROUP BY 1, 2, 3, 4, 5`, nil, func(scan func(...any) error) error {
			var k key
			var state, outcome string
			var n int64
			if err := scan(&k.app, &k.scenario, &k.campaign, &state, &outcome, &n); err != nil {
				return err
			}
			keys := []key{k}
			if k.campaign != "" {
				keys = append(keys, key{k.app, k.scenario, ""})
			}
			for _, k := range keys {
				if want[k] == nil {
					want[k] = map[[2]string]int64{}
				}
				want[k][[2]string{state, outcome}] += n
				seen[k] = true
			}
			return nil
		})
		for k := range seen {
			p, err := s.m.store.ContactProgress(ctx, k.app, k.scenario, k.campaign)
			if err != nil {
				t.Fatal(err)
			}
			got := map[[2]string]int64{}
			if p.Queued != 0 {
				got[[2]string{domain.ContactQueued, ""}] = p.Queued
			}
			if p.Dialing != 0 {
				got[[2]string{domain.ContactDialing, ""}] = p.Dialing
			}
			for _, o := range p.Outcomes {
				got[[2]string{domain.ContactDone, o.Outcome}] = o.N
			}
			if !maps.Equal(got, want[k]) {
				t.Errorf("%s: counts of %+v %v, rows say %v", when, k, got, want[k])
			}
		}
		wantStates := map[string]map[string]int64{}
		queryRows(t, s.m.store, `SELECT endpoint_id, state, count(*) FROM webhook_messages GROUP BY 1, 2`, nil,
			func(scan func(...any) error) error {
				var ep, state string
				var n int64
				if err := scan(&ep, &state, &n); err != nil {
					return err
				}
				if wantStates[ep] == nil {
					wantStates[ep] = map[string]int64{}
				}
				wantStates[ep][state] = n
				endpoints[ep] = true
				return nil
			})
		for ep := range endpoints {
			got, err := s.m.store.MessageStates(ctx, ep)
			if err != nil {
				t.Fatal(err)
			}
			maps.DeleteFunc(got, func(_ string, n int64) bool { return n == 0 })
			if !maps.Equal(got, wantStates[ep]) && (len(got) != 0 || len(wantStates[ep]) != 0) {
				t.Errorf("%s: message counts of %s %v, rows say %v", when, ep, got, wantStates[ep])
			}
		}
		if pg, ok := s.m.store.(*PostgresStore); ok && !strings.HasSuffix(when, "folded") {
			if err := pg.foldCounts(ctx); err != nil {
				t.Fatal(err)
			}
			check(when + ", folded")
		}
	}
	check("after the calls")
	if len(endpoints) == 0 {
		t.Fatal("no webhook messages to count")
	}
	p, err := s.m.store.ContactProgress(ctx, 1, "sc-remind", "")
	if err != nil || p.Done != 6 || len(p.Outcomes) < 3 {
		t.Errorf("progress of sc-remind: %+v %v", p, err)
	}
	s.exec(t, `DELETE FROM scenarios WHERE id = 'sc-remind'`)
	check("after a delete")
	if p, err := s.m.store.ContactProgress(ctx, 1, "sc-remind", ""); err != nil || p.Total() != 0 {
		t.Errorf("progress of the deleted sc-remind: %+v %v", p, err)
	}
}

// The console's queries use indexes: the phone search and the counts never
// scan the contacts table.
func TestConsoleQueriesUseIndexes(t *testing.T) {
	s := startSandbox(t)
	plan := func(query string, args ...any) string {
		rows, err := sqliteOf(t, s.m.store).read.Query(`EXPLAIN QUERY PLAN `+query, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			rows.Scan(&id, &parent, &notused, &detail)
			out = append(out, detail)
		}
		return strings.Join(out, "; ")
	}
	for query, want := range map[string]string{
		`SELECT seq FROM contacts WHERE app_id = 1 AND phone = '+84900000009' AND seq < 100 ORDER BY seq DESC LIMIT 50`: "USING COVERING INDEX contacts_by_phone",
		`SELECT seq FROM contacts WHERE app_id = 1 AND seq < 100 ORDER BY seq DESC LIMIT 20000`:                         "contacts_by_app",
		// ContactProgress and MessageStates, as SQLite runs them (countRows).
		`SELECT state, outcome, CAST(sum(n) AS BIGINT) FROM (SELECT state, outcome, n FROM contact_counts
			WHERE app_id = 1 AND scenario_id = 'x' AND ('' = '' OR campaign_id = '')) AS c
			GROUP BY state, outcome HAVING sum(n) <> 0`: "PRIMARY KEY",
		`SELECT state, CAST(sum(n) AS BIGINT) FROM (SELECT state, n FROM webhook_counts WHERE endpoint_id = 'x') AS c GROUP BY state`: "PRIMARY KEY",
	} {
		if got := plan(query); !strings.Contains(got, want) {
			t.Errorf("%s\nplans %q, want %q", query, got, want)
		}
	}
}

// Every page of a tenant's data answers on each store, from the figures of
// the rows: the overview, a scenario and a campaign, the contacts (a
// filter, a phone search, one contact), the webhooks' counts and a
// message.
func TestConsolePagesOnEveryStore(t *testing.T) { eachBackend(t, testConsolePagesOnEveryStore) }

func testConsolePagesOnEveryStore(t *testing.T, backend string) {
	s := startSandboxOn(t, backend, "DIALBOX_ENGINE_ENABLED=true", "DIALBOX_SIMULATOR_TIME_SCALE=1000")
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer hook.Close()
	s.admin(t, "POST", "/apps/qa-key/webhooks", `{"url":"`+hook.URL+`"}`, nil)
	auth := bearer(t, "qa-key", "qa-secret")
	if status, b := s.do(t, "POST", "/api/v1/public-api/campaign", auth,
		`{"campaign_id":"camp-1","contacts":[{"phone_number":"0900000001","ho_ten":"A"},{"phone_number":"0900000002","ho_ten":"B"}]}`); status != 200 {
		t.Fatalf("C answered %d %s", status, b)
	}
	waitFor(t, "every contact done and its events delivered", func() bool {
		return queryInt(t, s.m.store, `SELECT count(*) FROM contacts WHERE state <> 'done'`) == 0 &&
			queryInt(t, s.m.store, `SELECT count(*) FROM webhook_messages WHERE state <> 'delivered'`) == 0
	})
	var contact, message string
	queryRows(t, s.m.store, `SELECT id FROM contacts WHERE phone = '+84900000001'`, nil,
		func(scan func(...any) error) error { return scan(&contact) })
	queryRows(t, s.m.store, `SELECT id FROM webhook_messages ORDER BY seq LIMIT 1`, nil,
		func(scan func(...any) error) error { return scan(&message) })
	delivered := queryInt(t, s.m.store, `SELECT count(*) FROM webhook_messages`)
	c := signedIn(t, s)
	for path, wants := range map[string][]string{
		"/console/": {"sc-remind"},
		"/console/apps/qa-key/scenarios/sc-remind":         {"ANSWERED"},
		"/console/apps/qa-key/campaigns/camp-1":            {"ANSWERED"},
		"/console/apps/qa-key/contacts?state=done":         {"&#43;84900000001", "&#43;84900000002"},
		"/console/apps/qa-key/contacts?phone=0900000001":   {"&#43;84900000001"},
		"/console/apps/qa-key/contacts/" + contact:         {"&#43;84900000001", "Attempt 1: ANSWERED"},
		"/console/apps/qa-key/webhooks":                    {">" + strconv.Itoa(delivered) + "</a>"},
		"/console/apps/qa-key/webhook-messages/" + message: {message},
	} {
		resp, body := c.get(path)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s answered %d", path, resp.StatusCode)
			continue
		}
		for _, want := range wants {
			if !strings.Contains(body, want) {
				t.Errorf("%s lacks %q", path, want)
			}
		}
	}
	if _, body := c.get("/console/apps/qa-key/contacts?state=queued"); strings.Contains(body, "&#43;84900000001") {
		t.Error("a done contact listed among the queued")
	}
	if _, body := c.get("/console/apps/qa-key/contacts?phone=0900000002"); strings.Contains(body, "&#43;84900000001") {
		t.Error("the phone search listed another number")
	}
}

// A huge form field or filter is refused, not echoed: neither the answer
// nor the next page's message (kept in the session) carries more than a
// short prefix of it, and a body over the console's bound is refused
// whole (docs/console.md#security).
func TestConsoleBoundsFormFields(t *testing.T) {
	s := startSandbox(t)
	c := signedIn(t, s)
	long := strings.Repeat("A", 5000)
	noEcho := func(what, body string) {
		t.Helper()
		if strings.Contains(body, strings.Repeat("A", 100)) {
			t.Errorf("%s echoed the field (%d bytes of answer)", what, len(body))
		}
	}
	refused := func(what string, resp *http.Response, body string, status int) {
		t.Helper()
		if resp.StatusCode != status {
			t.Errorf("%s answered %d, want %d", what, resp.StatusCode, status)
		}
		noEcho(what, body)
	}
	// A field over the bound, in a form whose action quotes that field.
	resp, body := c.post("/console/faults", url.Values{"csrf": {c.csrf("/console/faults")}, "kind": {"error"},
		"target": {"A:1402"}, "api_key": {long}})
	refused("a 5,000-byte api_key", resp, body, http.StatusBadRequest)
	if !strings.Contains(body, "api_key is longer than 1,000 bytes") {
		t.Errorf("the refusal does not say which field and the bound:\n%s", body)
	}
	_, body = c.get("/console/faults")
	noEcho("the page after it", body)
	// Under the bound, the admin API's own check quotes a short prefix only.
	resp, _ = c.post("/console/faults", url.Values{"csrf": {c.csrf("/console/faults")}, "kind": {"error"},
		"target": {"A:1402"}, "api_key": {strings.Repeat("A", 900)}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("a 900-byte api_key answered %d, want the redirect with its message", resp.StatusCode)
	}
	_, body = c.get(resp.Header.Get("Location"))
	noEcho("the message about a 900-byte api_key", body)
	if !strings.Contains(body, "is not an application") {
		t.Errorf("the page does not say why:\n%s", body)
	}
	// A whole body over the console's bound: refused before it is read.
	resp, body = c.post("/console/clock", url.Values{"csrf": {c.csrf("/console/clock")}, "time_scale": {"2"},
		"pad": {strings.Repeat("A", 5<<20)}})
	refused("a 5 MB form", resp, body, http.StatusRequestEntityTooLarge)
	if s.m.clock.TimeScale() == 2 {
		t.Error("the 5 MB form was acted on")
	}
	// Filters too: a page's query field over the bound.
	resp, body = c.get("/console/apps/qa-key/contacts?scenario_id=" + long)
	refused("a 5,000-byte filter", resp, body, http.StatusBadRequest)
	resp, body = c.get("/console/journal?app=" + long)
	refused("a 5,000-byte journal filter", resp, body, http.StatusBadRequest)
	resp, body = c.get("/console/journal?" + long + "=x")
	refused("a filter with a 5,000-byte name", resp, body, http.StatusBadRequest)
	resp, body = c.get("/console/live/journal?app=" + long)
	refused("a 5,000-byte live filter", resp, body, http.StatusBadRequest)
	// The sign-in form too.
	fresh := newConsoleClient(t, s.url)
	resp, body = fresh.post("/console/signin", url.Values{"csrf": {fresh.csrf("/console/signin")}, "token": {long}})
	refused("a 5,000-byte token", resp, body, http.StatusBadRequest)
}

// signInBehind signs in as a browser behind a proxy sending header (name,
// value pairs), and returns the sign-in form's cookie and the session's.
// It carries cookies itself: a jar keeps Secure ones from plain HTTP.
func signInBehind(t *testing.T, base string, header ...string) (form, session *http.Cookie) {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	send := func(method, body string, cookie *http.Cookie) (*http.Response, string) {
		req, err := http.NewRequest(method, base+"/console/signin", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		if cookie != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.AddCookie(&http.Cookie{Name: cookie.Name, Value: cookie.Value})
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	named := func(resp *http.Response, name string) *http.Cookie {
		for _, ck := range resp.Cookies() {
			if ck.Name == name {
				return ck
			}
		}
		t.Fatalf("no %s cookie in %v", name, resp.Header["Set-Cookie"])
		return nil
	}
	resp, page := send("GET", "", nil)
	form = named(resp, signinCookie)
	m := csrfInput.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token on the sign-in page:\n%s", page)
	}
	resp, _ = send("POST", url.Values{"csrf": {m[1]}, "token": {testAdminToken}}.Encode(), form)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in answered %d", resp.StatusCode)
	}
	return form, named(resp, sessionCookie)
}

// Behind the TLS proxy docs/console.md recommends, the console's cookies
// are Secure: when a trusted proxy says the browser spoke HTTPS, or always
// with console.secure_cookies; a client's own X-Forwarded-Proto does not
// count. "Copy as curl" names the scheme the browser spoke.
func TestConsoleSecureCookieBehindTLSProxy(t *testing.T) {
	const proto = "X-Forwarded-Proto"
	for _, tc := range []struct {
		name   string
		env    []string
		header []string
		secure bool
		scheme string
	}{
		{"trusted proxy saying https", []string{"DIALBOX_HTTP_TRUSTED_PROXIES=127.0.0.1"}, []string{proto, "https"}, true, "https"},
		{"trusted proxy saying http", []string{"DIALBOX_HTTP_TRUSTED_PROXIES=127.0.0.1"}, []string{proto, "http"}, false, "http"},
		{"untrusted X-Forwarded-Proto", nil, []string{proto, "https"}, false, "http"},
		{"console.secure_cookies", []string{"DIALBOX_CONSOLE_SECURE_COOKIES=true"}, nil, true, "http"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startSandbox(t, tc.env...)
			form, session := signInBehind(t, s.url, tc.header...)
			if form.Secure != tc.secure || session.Secure != tc.secure {
				t.Errorf("sign-in cookie Secure %v, session cookie Secure %v, want %v", form.Secure, session.Secure, tc.secure)
			}
			if !session.HttpOnly || session.SameSite != http.SameSiteStrictMode {
				t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict still", session)
			}
			s.do(t, "GET", pathB, "", "")
			entries, _ := s.m.api.journal.Find(sandbox.JournalFilter{}, 1)
			header := append([]string{"Cookie", session.Name + "=" + session.Value}, tc.header...)
			_, page, err := request("GET", s.url+"/console/journal/"+itoa(entries[0].ID), "", "", header...)
			if want := "curl -sS -X GET &#39;" + tc.scheme + "://"; err != nil || !strings.Contains(string(page), want) {
				t.Errorf("the page lacks %q (%v):\n%s", want, err, page)
			}
		})
	}
}
