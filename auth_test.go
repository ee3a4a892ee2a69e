package main

// The verified-token cache: what it retains does not depend on the token's
// size, and it stays within its byte bound.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestTokenCacheBoundedInBytes(t *testing.T) { eachBackend(t, testTokenCacheBoundedInBytes) }

func testTokenCacheBoundedInBytes(t *testing.T, backend string) {
	store, _ := fixtureStoreOn(t, backend, &FixtureApp{Name: "t", APIKey: "k", APISecret: "s"})
	ctx := context.Background()
	// A tenant can sign tokens of any size: 200 distinct ones of ~130 KB
	// each would pin 26 MB if the cache kept their text.
	pad := strings.Repeat("x", 100_000)
	var last string
	cache := &tokenCache{}
	for i := range 200 {
		last = mustSign(jwt.MapClaims{"apiKey": "k", "pad": pad, "n": i}, "s")
		if app, apiErr, err := cache.authenticate(ctx, store, "Bearer "+last); err != nil || apiErr != nil || app.APIKey != "k" {
			t.Fatalf("token %d: %v %v", i, apiErr, err)
		}
	}
	entries, retained := cache.size()
	if entries == 0 || retained > maxCachedTokenBytes || retained/entries > 256 {
		t.Errorf("cache keeps %d tokens in %d bytes; want at most %d bytes, and no token's text", entries, retained, maxCachedTokenBytes)
	}
	if _, ok, err := cache.lookup(ctx, store, last, time.Now()); !ok || err != nil {
		t.Errorf("the last verified token is not answered from the cache: %v", err)
	}
}
