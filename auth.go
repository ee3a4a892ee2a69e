package main

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// tokenParser parses, verifies and checks exp/nbf in one pass; the
// algorithm is checked in the key function, after the application lookup,
// so that an unknown application is 1201 whatever the token's algorithm.
var tokenParser = jwt.NewParser()

// authFailure carries what the key function found out to authenticate.
type authFailure struct {
	apiErr *APIError
	err    error // an internal error (the store failed)
}

func (f *authFailure) Error() string { return "authentication failed" }

// authenticate checks an Authorization header in the order DESIGN §2 fixes:
// malformed -> 401, unknown or disabled application -> 1201, bad signature,
// algorithm other than HS256 (none included) or expiry -> 401.
func authenticate(ctx context.Context, store *Store, header string) (*Application, *APIError, error) {
	raw, ok := strings.CutPrefix(header, "Bearer ")
	raw = strings.TrimSpace(raw)
	if !ok || raw == "" {
		return nil, errUnauthorized, nil
	}
	var app *Application
	_, err := tokenParser.Parse(raw, func(t *jwt.Token) (any, error) {
		claims, _ := t.Claims.(jwt.MapClaims)
		apiKey, ok := claims["apiKey"].(string)
		if !ok {
			return nil, &authFailure{apiErr: errUnauthorized}
		}
		var err error
		app, err = store.AppByKey(ctx, apiKey)
		switch {
		case errors.Is(err, errNotFound) || (err == nil && app.Disabled):
			return nil, &authFailure{apiErr: errAppNotFound}
		case err != nil:
			return nil, &authFailure{err: err}
		case t.Method != jwt.SigningMethodHS256:
			return nil, &authFailure{apiErr: errUnauthorized}
		}
		return []byte(app.APISecret), nil
	})
	var failure *authFailure
	switch {
	case errors.As(err, &failure):
		return nil, failure.apiErr, failure.err
	case err != nil: // malformed, bad signature, expired
		return nil, errUnauthorized, nil
	}
	return app, nil, nil
}

// MintToken makes an ACCESS_TOKEN for an application, as a customer would:
// HS256 over {"apiKey": ..., "iat": ...}, no expiry.
func MintToken(app *Application, now time.Time) (string, error) {
	return jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"apiKey": app.APIKey,
		"iat":    now.Unix(),
	}).SignedString([]byte(app.APISecret))
}
