package engine

import (
	"context"

	"dialbox/internal/destinations"
	"dialbox/internal/domain"
)

// The calling rules checked just before a dial (docs/compliance.md#how-dialbox-enforces-it):
// the scheduler screens each scenario's due contacts after reading them and
// before reserving the trunk, so a number listed after its contact was
// added is still never dialled. The destination policy screens every
// number first (docs/compliance.md#destinations); then the tenant's list
// screens every scenario of the tenant, and the national register, which
// restricts advertising calls only, screens advertising scenarios.

// screen splits a scenario's due contacts into those that may be dialled
// now and those a rule holds: the destination policy first, then every
// remaining number looked up at once in the lists that screen the
// scenario. A number both rules hold gets the destination's reason.
// On an error nothing is dialled: rules that cannot be read block.
func (e *Engine) screen(ctx context.Context, sc *domain.Scenario, due []domain.DueContact) (dial []domain.DueContact, held []domain.CallHold, err error) {
	if len(due) == 0 {
		return due, nil, nil
	}
	tenant, err := e.store.AppDestinations(ctx, sc.AppID)
	if err != nil {
		return nil, nil, err
	}
	hold := func(c domain.DueContact, reason string) {
		held = append(held, domain.CallHold{AppID: sc.AppID, ScenarioID: sc.ID, Contact: c, Reason: reason})
	}
	dial = due[:0:0]
	for _, c := range due {
		if reason := e.destinations.Check(c.Phone, tenant); reason != destinations.Allowed {
			hold(c, string(reason))
		} else {
			dial = append(dial, c)
		}
	}
	if len(dial) == 0 {
		return dial, held, nil
	}
	phones := make([]string, len(dial))
	for i, c := range dial {
		phones[i] = c.Phone
	}
	listed, err := e.store.DNCListings(ctx, sc.AppID, phones, sc.CallConfig.Purpose == domain.PurposeAdvertising)
	if err != nil {
		return nil, nil, err
	}
	if len(listed) == 0 {
		return dial, held, nil
	}
	allowed := dial
	dial = dial[:0:0]
	for _, c := range allowed {
		if reason := listed[c.Phone]; reason != "" {
			hold(c, reason)
		} else {
			dial = append(dial, c)
		}
	}
	return dial, held, nil
}
