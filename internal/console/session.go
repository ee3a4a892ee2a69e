package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"dialbox/internal/httpx"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/julienschmidt/httprouter"
)

// The console's sign-in: the admin token, given once, is exchanged for a
// session kept in memory (a restart signs everyone out), named by an
// HttpOnly, SameSite=Strict cookie; every form carries the session's CSRF
// token (docs/console.md#security).

const (
	sessionCookie = "dialbox_console"
	// signinCookie carries the sign-in form's own CSRF token, before there
	// is a session to hold one.
	signinCookie = "dialbox_console_signin"
	csrfField    = "csrf"
)

type session struct {
	csrf    string
	expires time.Time
	// who names the sign-in in the audit log: the name given, the
	// session's short id, the client's address (docs/console.md#audit-log).
	who string

	mu    sync.Mutex
	flash *flash // said once, on the page after an action
}

// flash is the outcome of the last action, in words.
type flash struct {
	Failed bool
	Text   string
}

func (s *session) setFlash(f *flash) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flash = f
}

func (s *session) takeFlash() *flash {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.flash
	s.flash = nil
	return f
}

func (s *session) checkCSRF(r *http.Request) bool { return s.validCSRF(r.PostFormValue(csrfField)) }

// validCSRF says whether got is the session's CSRF token.
func (s *session) validCSRF(got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) == 1
}

// sessions are the signed-in browsers, by the SHA-256 of their cookie (a
// memory dump does not hand out live cookies).
type sessions struct {
	maxAge time.Duration
	mu     sync.Mutex
	m      map[[sha256.Size]byte]*session
}

func newSessions(maxAge time.Duration) *sessions {
	return &sessions{maxAge: maxAge, m: map[[sha256.Size]byte]*session{}}
}

func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// create starts a session for who (a name, or "") signing in from addr,
// and returns its cookie value.
func (ss *sessions) create(now time.Time, who, addr string) (string, *session) {
	id := randomToken()
	key := sha256.Sum256([]byte(id))
	// The short id is of the cookie's hash: it names the session in the
	// log without being its cookie.
	tag := "sign-in " + hex.EncodeToString(key[:4]) + " from " + addr
	if who != "" {
		tag = who + " (" + tag + ")"
	}
	s := &session{csrf: randomToken(), expires: now.Add(ss.maxAge), who: tag}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for k, old := range ss.m { // forget expired ones as new ones come
		if !now.Before(old.expires) {
			delete(ss.m, k)
		}
	}
	ss.m[key] = s
	return id, s
}

// get is the request's live session, or nil.
func (ss *sessions) get(r *http.Request, now time.Time) *session {
	ck, err := r.Cookie(sessionCookie)
	if err != nil || ck.Value == "" {
		return nil
	}
	key := sha256.Sum256([]byte(ck.Value))
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.m[key]
	if s == nil {
		return nil
	}
	if !now.Before(s.expires) {
		delete(ss.m, key)
		return nil
	}
	return s
}

func (ss *sessions) end(r *http.Request) {
	if ck, err := r.Cookie(sessionCookie); err == nil {
		ss.mu.Lock()
		delete(ss.m, sha256.Sum256([]byte(ck.Value)))
		ss.mu.Unlock()
	}
}

type signinData struct {
	Next  string
	Error string
}

func (c *Console) signinPage(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	c.headers(w)
	if c.sessions.get(r, c.now()) != nil {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	c.renderSignin(w, r, http.StatusOK, signinData{Next: safeNext(r.URL.Query().Get("next"))})
}

func (c *Console) renderSignin(w http.ResponseWriter, r *http.Request, status int, d signinData) {
	token := randomToken()
	http.SetCookie(w, &http.Cookie{Name: signinCookie, Value: token, Path: "/console/", HttpOnly: true,
		Secure: c.secure(r), SameSite: http.SameSiteStrictMode, MaxAge: 3600})
	c.render(w, status, layoutData{view: view{Page: "signin", Title: "Sign in", Data: d}, CSRF: token, Status: status})
}

func (c *Console) signin(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	c.headers(w)
	now := c.now()
	if !c.readForm(w, r, nil) {
		return
	}
	ck, err := r.Cookie(signinCookie)
	if err != nil || !(&session{csrf: ck.Value}).checkCSRF(r) {
		c.render(w, http.StatusForbidden, layoutData{view: view{Page: "error", Title: "Refused",
			Data: "This sign-in form was refused: it did not carry the console's security token. Open the sign-in page again."}, Status: 403})
		return
	}
	next := safeNext(r.PostFormValue("next"))
	right, retryAfter := c.sandbox.CheckToken(r, r.PostFormValue("token"), now)
	if retryAfter > 0 {
		secs := httpx.RetryAfterSeconds(retryAfter)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		c.renderSignin(w, r, http.StatusTooManyRequests, signinData{Next: next,
			Error: "Too many wrong tokens: try again in " + strconv.Itoa(secs) + " seconds."})
		return
	}
	if !right {
		c.renderSignin(w, r, http.StatusUnauthorized, signinData{Next: next, Error: "That is not the admin token."})
		return
	}
	id, s := c.sessions.create(now, signinName(r.PostFormValue("name")), c.proxies.ClientAddr(r))
	c.audit(r, s, "", "signed in")
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/console/", HttpOnly: true,
		Secure: c.secure(r), SameSite: http.SameSiteStrictMode, MaxAge: int(c.sessions.maxAge.Seconds())})
	http.SetCookie(w, &http.Cookie{Name: signinCookie, Value: "", Path: "/console/", MaxAge: -1, Secure: c.secure(r)})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// secure reports whether the console's cookies must be Secure: always with
// console.secure_cookies, else when the browser spoke HTTPS, to dialbox or
// to a trusted proxy saying so (docs/console.md#security).
func (c *Console) secure(r *http.Request) bool {
	return c.secureCookies || c.proxies.HTTPS(r)
}

func (c *Console) signout(r *http.Request, _ httprouter.Params, _ *session) (string, string, error) {
	c.sessions.end(r)
	return "/console/signin", "", nil
}

// signinName is the name given at sign-in, as the audit log keeps it: at
// most 60 characters, none of them a control character.
func signinName(name string) string {
	name = strings.Join(strings.FieldsFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if r := []rune(name); len(r) > 60 {
		name = string(r[:60])
	}
	return name
}

// safeNext keeps a redirect after sign-in inside the console.
func safeNext(next string) string {
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || !strings.HasPrefix(u.Path, "/console/") || strings.HasPrefix(next, "//") {
		return "/console/"
	}
	return u.RequestURI()
}
