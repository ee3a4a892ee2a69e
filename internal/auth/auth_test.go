package auth

// The verified-token cache, against a store answering AppByKey alone (the
// stores' own AppByKey is tested with the public API on both stores).

import (
	"context"
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// appsByKey is a store of applications by API key.
type appsByKey struct {
	mu   sync.Mutex
	apps map[string]domain.Application
}

func (s *appsByKey) AppByKey(_ context.Context, apiKey string) (*domain.Application, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	app, ok := s.apps[apiKey]
	if !ok {
		return nil, domain.ErrNotFound
	}
	return &app, nil
}

func (s *appsByKey) set(app domain.Application) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apps[app.APIKey] = app
}

func signed(t testing.TB, claims jwt.MapClaims, secret string) string {
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestTokenCacheBoundedInBytes: what the cache retains does not depend on
// the token's size, and it stays within its byte bound.
func TestTokenCacheBoundedInBytes(t *testing.T) {
	store := &appsByKey{apps: map[string]domain.Application{"k": {ID: 1, Name: "t", APIKey: "k", APISecret: "s"}}}
	ctx := context.Background()
	// A tenant can sign tokens of any size: 200 distinct ones of ~130 KB
	// each would pin 26 MB if the cache kept their text.
	pad := strings.Repeat("x", 100_000)
	var last string
	cache := &Cache{}
	for i := range 200 {
		last = signed(t, jwt.MapClaims{"apiKey": "k", "pad": pad, "n": i}, "s")
		if app, apiErr, err := cache.Authenticate(ctx, store, "Bearer "+last); err != nil || apiErr != nil || app.APIKey != "k" {
			t.Fatalf("token %d: %v %v", i, apiErr, err)
		}
	}
	entries, retained := cache.Size()
	if entries == 0 || retained > maxCachedTokenBytes || retained/entries > 256 {
		t.Errorf("cache keeps %d tokens in %d bytes; want at most %d bytes, and no token's text", entries, retained, maxCachedTokenBytes)
	}
	if _, ok, err := cache.lookup(ctx, store, last, time.Now()); !ok || err != nil {
		t.Errorf("the last verified token is not answered from the cache: %v", err)
	}
}

// TestTokenCache: a token verified once is answered from the cache, but a
// new secret, a disabled application and the token's own exp/nbf still
// decide as the long way would.
func TestTokenCache(t *testing.T) {
	ctx := context.Background()
	app := domain.Application{ID: 1, Name: "t", APIKey: "k", APISecret: "s1"}
	s := &appsByKey{apps: map[string]domain.Application{"k": app}}
	token, _ := MintToken(&app, time.Now())
	tokens := &Cache{}
	check := func(step string, wantCode int) {
		t.Helper()
		_, apiErr, err := tokens.Authenticate(ctx, s, "Bearer "+token)
		code := 0
		if apiErr != nil {
			code = apiErr.Code
		}
		if err != nil || code != wantCode {
			t.Errorf("%s: code %d, err %v; want code %d", step, code, err, wantCode)
		}
	}
	check("first use", 0)
	if _, ok := tokens.entries[digestToken(token)]; !ok {
		t.Fatal("a verified token was not remembered")
	}
	check("second use, from the cache", 0)
	// A remembered token is answered without the parser: this one could
	// not be parsed at all.
	tokens.entries[digestToken("remembered, not a JWT")] = verifiedToken{apiKey: "k", secret: "s1"}
	if app, apiErr, err := tokens.Authenticate(ctx, s, "Bearer remembered, not a JWT"); app == nil || apiErr != nil || err != nil {
		t.Errorf("a remembered token was not answered from the cache: %v %v", apiErr, err)
	}

	app.Disabled = true
	s.set(app)
	check("application disabled", httpx.ErrAppNotFound.Code)
	app.Disabled, app.APISecret = false, "s2"
	s.set(app)
	check("secret changed", httpx.ErrUnauthorized.Code)

	// exp is exclusive and nbf inclusive, as the parser's validator has them.
	now := time.Unix(1_800_000_000, 0)
	tokens.entries[digestToken("timed")] = verifiedToken{apiKey: "k", secret: "s2", exp: now.Add(time.Hour), nbf: now}
	for _, c := range []struct {
		at   time.Time
		want bool
	}{{now.Add(-time.Second), false}, {now, true}, {now.Add(time.Hour - time.Second), true}, {now.Add(time.Hour), false}} {
		if _, ok, _ := tokens.lookup(ctx, s, "timed", c.at); ok != c.want {
			t.Errorf("token valid from %v to %v, at %v: cached %v, want %v", now, now.Add(time.Hour), c.at, ok, c.want)
		}
	}
}
