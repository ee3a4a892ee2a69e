// Package auth owns the public API's authentication: the ACCESS_TOKEN
// check in its fixed order (docs/design.md#authentication-checks-in-a-fixed-order),
// the cache of tokens already verified, and MintToken, which makes a token
// as a customer would. It is a package of its own rather than part of
// internal/httpx because it is the public API's alone (the admin API and
// the console have their own token) and it brings the JWT library, which
// nothing else at the edge needs. It imports internal/domain, for the
// application, and internal/httpx, for the 401 and 1201 bodies it answers.
package auth

import (
	"context"
	"crypto/sha256"
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// tokenParser parses, verifies and checks exp/nbf in one pass; the
// algorithm is checked in the key function, after the application lookup,
// so that an unknown application is 1201 whatever the token's algorithm.
var tokenParser = jwt.NewParser()

// authFailure carries what the key function found out to authenticate.
type authFailure struct {
	apiErr *httpx.Error
	err    error // an internal error (the store failed)
}

func (f *authFailure) Error() string { return "authentication failed" }

// Store is what authentication reads of the store.
type Store interface {
	AppByKey(ctx context.Context, apiKey string) (*domain.Application, error)
}

// Authenticate checks an Authorization header in the order docs/design.md#authentication-checks-in-a-fixed-order fixes:
// malformed -> 401, unknown or disabled application -> 1201, bad signature,
// algorithm other than HS256 (none included) or expiry -> 401.
func (c *Cache) Authenticate(ctx context.Context, store Store, header string) (*domain.Application, *httpx.Error, error) {
	raw, ok := strings.CutPrefix(header, "Bearer ")
	raw = strings.TrimSpace(raw)
	if !ok || raw == "" {
		return nil, httpx.ErrUnauthorized, nil
	}
	if app, ok, err := c.lookup(ctx, store, raw, time.Now()); ok || err != nil {
		return app, nil, err
	}
	var app *domain.Application
	token, err := tokenParser.Parse(raw, func(t *jwt.Token) (any, error) {
		claims, _ := t.Claims.(jwt.MapClaims)
		apiKey, ok := claims["apiKey"].(string)
		if !ok {
			return nil, &authFailure{apiErr: httpx.ErrUnauthorized}
		}
		var err error
		app, err = store.AppByKey(ctx, apiKey)
		switch {
		case errors.Is(err, domain.ErrNotFound) || (err == nil && app.Disabled):
			return nil, &authFailure{apiErr: httpx.ErrAppNotFound}
		case err != nil:
			return nil, &authFailure{err: err}
		case t.Method != jwt.SigningMethodHS256:
			return nil, &authFailure{apiErr: httpx.ErrUnauthorized}
		}
		return []byte(app.APISecret), nil
	})
	var failure *authFailure
	switch {
	case errors.As(err, &failure):
		return nil, failure.apiErr, failure.err
	case err != nil: // malformed, bad signature, expired
		return nil, httpx.ErrUnauthorized, nil
	}
	c.remember(raw, app, token.Claims)
	return app, nil, nil
}

// Cache remembers tokens already verified: a client sends the same
// token with every request, and checking its HMAC and decoding its claims
// is most of what operation B costs otherwise. Only a verified token gets
// in, keyed by the SHA-256 of its exact text (a tenant may sign tokens of
// any size; the cache must not keep them), and it counts only while its
// application keeps the secret that verified it and its exp/nbf still
// allow it.
type Cache struct {
	mu      sync.RWMutex
	entries map[tokenDigest]verifiedToken
	bytes   int // what the entries retain, by cachedTokenBytes
}

type tokenDigest [sha256.Size]byte

func digestToken(raw string) tokenDigest { return sha256.Sum256([]byte(raw)) }

type verifiedToken struct {
	apiKey, secret string
	exp, nbf       time.Time // zero when the token has no such claim
}

// The cache starts over when it would hold more than maxCachedTokens
// tokens or maxCachedTokenBytes bytes (an application's key and secret have
// no length limit of their own).
const (
	maxCachedTokens     = 10_000
	maxCachedTokenBytes = 4 << 20
)

// cachedTokenBytes is what one entry retains: its digest, the strings it
// holds and about what a map slot and the struct cost.
func cachedTokenBytes(v verifiedToken) int {
	return sha256.Size + len(v.apiKey) + len(v.secret) + 96
}

// Size is how many tokens the cache holds and the bytes they retain.
func (c *Cache) Size() (entries, bytes int) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries), c.bytes
}

// lookup authenticates a token verified before; ok is false when the token
// must be verified (again) the long way.
func (c *Cache) lookup(ctx context.Context, store Store, raw string, now time.Time) (*domain.Application, bool, error) {
	digest := digestToken(raw)
	c.mu.RLock()
	v, ok := c.entries[digest]
	c.mu.RUnlock()
	// The same tests as the parser's validator: exp is exclusive, nbf inclusive.
	if !ok || (!v.exp.IsZero() && !now.Before(v.exp)) || (!v.nbf.IsZero() && now.Before(v.nbf)) {
		return nil, false, nil
	}
	app, err := store.AppByKey(ctx, v.apiKey)
	switch {
	case errors.Is(err, domain.ErrNotFound) || (err == nil && (app.Disabled || app.APISecret != v.secret)):
		return nil, false, nil // the long way gives the right answer
	case err != nil:
		return nil, false, err
	}
	return app, true, nil
}

func (c *Cache) remember(raw string, app *domain.Application, claims jwt.Claims) {
	v := verifiedToken{apiKey: app.APIKey, secret: app.APISecret}
	if exp, err := claims.GetExpirationTime(); err == nil && exp != nil {
		v.exp = exp.Time
	}
	if nbf, err := claims.GetNotBefore(); err == nil && nbf != nil {
		v.nbf = nbf.Time
	}
	digest := digestToken(raw)
	size := cachedTokenBytes(v)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[digest]; ok {
		c.bytes -= cachedTokenBytes(old)
	} else if c.entries == nil || len(c.entries) >= maxCachedTokens || c.bytes+size > maxCachedTokenBytes {
		c.entries, c.bytes = map[tokenDigest]verifiedToken{}, 0
	}
	c.entries[digest] = v
	c.bytes += size
}

// MintToken makes an ACCESS_TOKEN for an application, as a customer would:
// HS256 over {"apiKey": ..., "iat": ...}, no expiry.
func MintToken(app *domain.Application, now time.Time) (string, error) {
	return jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"apiKey": app.APIKey,
		"iat":    now.Unix(),
	}).SignedString([]byte(app.APISecret))
}
