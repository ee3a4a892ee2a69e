package admin

import (
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"encoding/json"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"
)

func (a *Admin) getWallet(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	return a.Wallet(r.Context(), app.ID)
}

type walletBody struct {
	Prepaid        *bool           `json:"prepaid"`
	Balance        *int64          `json:"balance"`
	ExpiresAt      json.RawMessage `json:"expires_at"` // RFC 3339, or null for never
	PricePerCall   *int64          `json:"price_per_call"`
	PricePerMinute *int64          `json:"price_per_minute"`
}

func (a *Admin) updateWallet(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	var b walletBody
	if err := httpx.DecodeJSON(r, &b, httpx.AdminBody); err != nil {
		return nil, err
	}
	for name, v := range map[string]*int64{"balance": b.Balance, "price_per_call": b.PricePerCall, "price_per_minute": b.PricePerMinute} {
		if v != nil && *v < 0 {
			return nil, domain.Invalid(name, "must not be negative")
		}
	}
	var expires *time.Time
	if len(b.ExpiresAt) > 0 {
		var err error
		if expires, err = optionalTime(b.ExpiresAt); err != nil {
			return nil, domain.Invalid("expires_at", "must be an RFC 3339 time like \"2030-01-01T00:00:00Z\", or null")
		}
	}
	w, err := a.apps.UpdateWallet(r.Context(), app.ID, func(w *domain.Wallet) {
		setIf(&w.Prepaid, b.Prepaid)
		setIf(&w.Balance, b.Balance)
		setIf(&w.PricePerCall, b.PricePerCall)
		setIf(&w.PricePerMinute, b.PricePerMinute)
		if len(b.ExpiresAt) > 0 {
			w.ExpiresAt = expires
		}
	}, a.now())
	if err != nil {
		return nil, err
	}
	a.wake(app.ID)
	return w, nil
}

// setIf sets *dst to *v when v is given.
func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

func optionalTime(raw json.RawMessage) (*time.Time, error) {
	var s *string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	if s == nil {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339, *s)
	t = t.UTC()
	return &t, err
}

func (a *Admin) topUp(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	var b struct {
		Amount *int64 `json:"amount"`
	}
	if err := httpx.DecodeJSON(r, &b, httpx.AdminBody); err != nil {
		return nil, err
	}
	if b.Amount == nil || *b.Amount <= 0 {
		return nil, domain.Invalid("amount", "is required and must be a positive number of VND")
	}
	if err := a.apps.TopUp(r.Context(), app.ID, *b.Amount, a.now()); err != nil {
		return nil, err
	}
	a.wake(app.ID)
	return a.Wallet(r.Context(), app.ID)
}
