package main

import (
	"context"
)

// The calling rules checked just before a dial (docs/compliance.md#how-dialbox-enforces-it):
// the scheduler screens each scenario's due contacts after reading them and
// before reserving the trunk, so a number listed after its contact was
// added is still never dialled. The tenant's list screens every scenario
// of the tenant; the national register, which restricts advertising calls
// only, screens advertising scenarios.

// Why an attempt was kept from being dialled: call_blocks.reason and the
// reason label of dialbox_calls_blocked_total.
const (
	ReasonDNCNational = "dnc_national" // on the national Do-Not-Call register, in an advertising scenario
	ReasonDNCTenant   = "dnc_tenant"   // on the tenant's own list (an opt-out, or added by the tenant)
)

// callHold is a due contact a calling rule keeps from being dialled, and
// why. A do-not-call hold ends the contact DO_NOT_CALL (Store.holdContacts).
type callHold struct {
	AppID      int64
	ScenarioID string
	Contact    dueContact
	Reason     string
}

// screen splits a scenario's due contacts into those that may be dialled
// now and those a rule holds, looking every number up at once in the lists
// that screen the scenario.
// On an error nothing is dialled: a list that cannot be read blocks.
func (e *Engine) screen(ctx context.Context, sc *Scenario, due []dueContact) (dial []dueContact, held []callHold, err error) {
	if len(due) == 0 {
		return due, nil, nil
	}
	phones := make([]string, len(due))
	for i, c := range due {
		phones[i] = c.Phone
	}
	listed, err := e.Store.dncListings(ctx, sc.AppID, phones, sc.CallConfig.Purpose == PurposeAdvertising)
	if err != nil {
		return nil, nil, err
	}
	if len(listed) == 0 {
		return due, nil, nil
	}
	dial = due[:0:0]
	for _, c := range due {
		if reason := listed[c.Phone]; reason != "" {
			held = append(held, callHold{AppID: sc.AppID, ScenarioID: sc.ID, Contact: c, Reason: reason})
		} else {
			dial = append(dial, c)
		}
	}
	return dial, held, nil
}
