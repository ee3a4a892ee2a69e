package cli

import (
	"context"
	"dialbox/internal/admin"
	"dialbox/internal/domain"
	"errors"
	"fmt"
	"io"
	"time"
)

// The CLI counterparts of the admin API's common actions. They change the
// database directly; a server running on it sees each change at its next
// request, and its engine at its next poll
// (docs/design.md#other-processes-changes-are-seen-at-once).

// setAppDisabled disables or enables an application, as
// POST /admin/v1/apps/:app/disable and /enable do.
func setAppDisabled(ctx context.Context, s Store, out io.Writer, apiKey string, disabled bool) error {
	app, err := s.UpdateApp(ctx, apiKey, domain.AppPatch{Disabled: &disabled}, time.Now())
	if errors.Is(err, domain.ErrNotFound) {
		return fmt.Errorf("no application has API key %q", apiKey)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "api_key:  %s\ndisabled: %t\n", app.APIKey, app.Disabled)
	return nil
}

// appDelete removes an application and everything it owns, as
// DELETE /admin/v1/apps/:app does.
func appDelete(ctx context.Context, s Store, out io.Writer, apiKey string) error {
	err := s.DeleteApp(ctx, apiKey)
	if errors.Is(err, domain.ErrNotFound) {
		return fmt.Errorf("no application has API key %q", apiKey)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "deleted: %s\n", apiKey)
	return nil
}

func walletShow(ctx context.Context, s Store, out io.Writer, apiKey string) error {
	app, err := appByKey(ctx, s, apiKey)
	if err != nil {
		return err
	}
	return printWallet(ctx, s, out, app.ID)
}

// topUp adds amount VND to the balance, as
// POST /admin/v1/apps/:app/wallet/topup does.
func topUp(ctx context.Context, s Store, out io.Writer, apiKey string, amount int64) error {
	app, err := appByKey(ctx, s, apiKey)
	if err != nil {
		return err
	}
	if err := s.TopUp(ctx, app.ID, amount, time.Now()); err != nil {
		return err
	}
	return printWallet(ctx, s, out, app.ID)
}

func printWallet(ctx context.Context, s Store, out io.Writer, appID int64) error {
	w, err := s.Wallet(ctx, appID)
	if err != nil {
		return err
	}
	expires := "never"
	if w.ExpiresAt != nil {
		expires = w.ExpiresAt.Format(time.RFC3339)
	}
	fmt.Fprintf(out, "prepaid:          %t\nbalance:          %d\nexpires_at:       %s\nprice_per_call:   %d\nprice_per_minute: %d\n",
		w.Prepaid, w.Balance, expires, w.PricePerCall, w.PricePerMinute)
	return nil
}

// transition moves a scenario along the transition named (submit,
// approve), with the admin API's rules and wording.
func transition(ctx context.Context, s Store, out io.Writer, apiKey, scenarioID, name string) error {
	app, err := appByKey(ctx, s, apiKey)
	if err != nil {
		return err
	}
	t := transitionNamed(name)
	err = s.TransitionScenario(ctx, app.ID, scenarioID, t.From, t.To, time.Now())
	var bad domain.ErrBadTransition
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return errors.New(domain.NotFound("Scenario").Message)
	case errors.As(err, &bad):
		return errors.New(t.Refused(bad.Status))
	case err != nil:
		return err
	}
	fmt.Fprintf(out, "id:     %s\nstatus: %s\n", scenarioID, t.To)
	return nil
}

func transitionNamed(name string) admin.Transition {
	for _, t := range admin.Transitions {
		if t.Name == name {
			return t
		}
	}
	panic("no scenario transition " + name)
}

// requireFlag is the usage error of sub when flag was not given a value.
func requireFlag(sub, flag, value string) error {
	if value == "" {
		return fmt.Errorf("%s: %s is required\n%s", sub, flag, appUsage)
	}
	return nil
}
