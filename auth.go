package main

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// tokenParser accepts HS256 only: "none" and every other algorithm fail
// signature checking. exp and nbf are enforced when present.
var tokenParser = jwt.NewParser(jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}))

// authenticate checks an Authorization header in the order DESIGN §2 fixes:
// malformed -> 401, unknown or disabled application -> 1201, bad signature,
// algorithm or expiry -> 401.
func authenticate(ctx context.Context, store *Store, header string) (*Application, *APIError, error) {
	raw, ok := strings.CutPrefix(header, "Bearer ")
	raw = strings.TrimSpace(raw)
	if !ok || raw == "" {
		return nil, errUnauthorized, nil
	}
	claims := jwt.MapClaims{}
	if _, _, err := tokenParser.ParseUnverified(raw, claims); err != nil {
		return nil, errUnauthorized, nil
	}
	apiKey, ok := claims["apiKey"].(string)
	if !ok {
		return nil, errUnauthorized, nil
	}
	app, err := store.AppByKey(ctx, apiKey)
	if errors.Is(err, errNotFound) {
		return nil, errAppNotFound, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if app.Disabled {
		return nil, errAppNotFound, nil
	}
	_, err = tokenParser.Parse(raw, func(*jwt.Token) (any, error) { return []byte(app.APISecret), nil })
	if err != nil {
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
