package main

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"dialbox/internal/config"
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
		if ck.Name == "dialbox_console" {
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

// The console's sign-in and the admin API count wrong tokens together
// (docs/admin.md#wrong-tokens): after the admin API's, the console
// refuses the right token too.
func TestConsoleSharesTheAdminWrongTokenLimit(t *testing.T) {
	s := startSandbox(t, "DIALBOX_ADMIN_WRONG_TOKEN_BACKOFF=1m")
	for range config.DefaultConfig().Admin.WrongTokensPerAddress {
		req, _ := http.NewRequest("GET", s.url+"/admin/v1/apps", nil)
		req.Header.Set("Authorization", "Bearer wrong-token-0123456789")
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong token answered %d", resp.StatusCode)
		}
	}
	resp := newConsoleClient(t, s.url).signIn(testAdminToken)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("after %d wrong tokens on the admin API the console's sign-in answered %d (Retry-After %q), want 429 with Retry-After",
			config.DefaultConfig().Admin.WrongTokensPerAddress, resp.StatusCode, resp.Header.Get("Retry-After"))
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
	form = named(resp, "dialbox_console_signin")
	m := csrfInput.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token on the sign-in page:\n%s", page)
	}
	resp, _ = send("POST", url.Values{"csrf": {m[1]}, "token": {testAdminToken}}.Encode(), form)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in answered %d", resp.StatusCode)
	}
	return form, named(resp, "dialbox_console")
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
