package console

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"dialbox/internal/config"
	"dialbox/internal/domain"
	"dialbox/internal/tokenlimit"

	"github.com/julienschmidt/httprouter"
)

// signinAdmin checks the token as the admin API does, behind the same
// wrong-token limit, and shows the clock page; the sign-in tests ask
// nothing else of the admin.
type signinAdmin struct {
	Sandbox // nil: any other call fails the test with a panic
	limit   *tokenlimit.Limiter
}

const signinToken = "right-token-0123456789"

func (a signinAdmin) CheckToken(r *http.Request, token string, now time.Time) (bool, time.Duration) {
	right := token == signinToken
	if retryAfter := a.limit.Check(r.RemoteAddr, right, now); retryAfter > 0 {
		return false, retryAfter
	}
	return right, 0
}

func (signinAdmin) ClockState() domain.ClockState { return domain.ClockState{TimeScale: 1} }
func (signinAdmin) RealTime() bool                { return false }

// auditLog keeps what the console writes to the audit log; its other
// actions are nil.
type auditLog struct {
	Actions
	entries *[]domain.AuditEntry
}

func (l auditLog) Audit(_ context.Context, e domain.AuditEntry) error {
	*l.entries = append(*l.entries, e)
	return nil
}

// signinConsole is a console over signinAdmin, whose clock the test sets
// through now.
func signinConsole(t *testing.T, env ...string) (http.Handler, *time.Time) {
	t.Helper()
	cfg, err := config.LoadConfig("", env)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	limit := tokenlimit.New(tokenlimit.Config{PerAddress: cfg.Admin.WrongTokensPerAddress, Overall: cfg.Admin.WrongTokensOverall,
		Backoff: cfg.Admin.WrongTokenBackoff.Duration, MaxAddresses: 10}, log)
	now := time.Now()
	c, err := New(Parts{Sandbox: signinAdmin{limit: limit}, Actions: auditLog{entries: &[]domain.AuditEntry{}}, Config: cfg.Console, Log: log,
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	r := httprouter.New()
	c.Routes(r)
	return r, &now
}

// signinAs posts token to the sign-in form and returns the answer.
func signinAs(h http.Handler, token string) *httptest.ResponseRecorder {
	form := httptest.NewRecorder()
	h.ServeHTTP(form, httptest.NewRequest("GET", "/console/signin", nil))
	req := httptest.NewRequest("POST", "/console/signin", strings.NewReader(url.Values{"token": {token}, csrfField: {cookieOf(form, signinCookie)}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: signinCookie, Value: cookieOf(form, signinCookie)})
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func cookieOf(w *httptest.ResponseRecorder, name string) string {
	for _, ck := range w.Result().Cookies() {
		if ck.Name == name {
			return ck.Value
		}
	}
	return ""
}

// clockPage is the status of the clock page opened with session.
func clockPage(h http.Handler, session string) int {
	req := httptest.NewRequest("GET", "/console/clock", nil)
	req.AddCookie(&http.Cookie{Name: sessionCookie, Value: session})
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w.Code
}

func TestConsoleSessionExpires(t *testing.T) {
	h, now := signinConsole(t, "DIALBOX_CONSOLE_SESSION_MAX_AGE=1h")
	w := signinAs(h, signinToken)
	session := cookieOf(w, sessionCookie)
	if w.Code != http.StatusSeeOther || session == "" {
		t.Fatalf("sign-in answered %d with session %q", w.Code, session)
	}
	*now = now.Add(59 * time.Minute)
	if code := clockPage(h, session); code != http.StatusOK {
		t.Fatalf("before max age the clock page answered %d", code)
	}
	*now = now.Add(time.Minute)
	if code := clockPage(h, session); code != http.StatusSeeOther {
		t.Fatalf("at max age the clock page answered %d, want a redirect to sign in", code)
	}
}

func TestConsoleRateLimitsWrongTokens(t *testing.T) {
	h, now := signinConsole(t)
	for range config.DefaultConfig().Admin.WrongTokensPerAddress {
		if w := signinAs(h, "wrong-token-0123456789"); w.Code != http.StatusUnauthorized {
			t.Fatalf("wrong token answered %d", w.Code)
		}
	}
	w := signinAs(h, signinToken)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
		t.Fatalf("after %d wrong tokens the right one answered %d (Retry-After %q), want 429 with Retry-After",
			config.DefaultConfig().Admin.WrongTokensPerAddress, w.Code, w.Header().Get("Retry-After"))
	}
	*now = now.Add(time.Minute)
	if w := signinAs(h, signinToken); w.Code != http.StatusSeeOther {
		t.Fatalf("a minute later the right token answered %d", w.Code)
	}
}

// A sign-in is in the audit log under the name given, its short id and
// its address; a name is kept short and on one line.
func TestConsoleSignInIsAudited(t *testing.T) {
	var entries []domain.AuditEntry
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	limit := tokenlimit.New(tokenlimit.Config{PerAddress: 5, Overall: 100, Backoff: time.Second, MaxAddresses: 10}, log)
	c, err := New(Parts{Sandbox: signinAdmin{limit: limit}, Actions: auditLog{entries: &entries}, Log: log, Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	h := httprouter.New()
	c.Routes(h)
	form := httptest.NewRecorder()
	h.ServeHTTP(form, httptest.NewRequest("GET", "/console/signin", nil))
	name := "Lan\nNguyễn " + strings.Repeat("x", 100)
	req := httptest.NewRequest("POST", "/console/signin", strings.NewReader(url.Values{"token": {signinToken}, "name": {name},
		csrfField: {cookieOf(form, signinCookie)}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: signinCookie, Value: cookieOf(form, signinCookie)})
	req.RemoteAddr = "192.0.2.7:5000"
	h.ServeHTTP(httptest.NewRecorder(), req)
	if len(entries) != 1 {
		t.Fatalf("audit log %+v, want the sign-in", entries)
	}
	e := entries[0]
	if !strings.HasPrefix(e.Actor, "Lan Nguyễn xxx") || !strings.Contains(e.Actor, " from 192.0.2.7)") ||
		strings.Contains(e.Actor, "\n") || len([]rune(e.Actor)) > 60+40 || e.Action != "POST /console/signin" || e.Detail != "signed in" {
		t.Errorf("sign-in audited as %+v", e)
	}
}
