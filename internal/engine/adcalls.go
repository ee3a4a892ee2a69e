package engine

import (
	"context"
	"dialbox/internal/domain"
	"time"
)

// The scheduler's part of the advertising rules (docs/compliance.md#advertising-calls):
// an advertising scenario dials only inside its call window intersected
// with the tenant's advertising hours, and a number only while the
// tenant's answered advertising calls to it in the last 24 hours are under
// its limit. A contact the rules make wait is delayed, never dropped: its
// next attempt moves to when dialRules.wait says it may be dialled, with
// its audit row, once per wait.

// phoneKey is one number of one tenant.
type phoneKey struct {
	app   int64
	phone string
}

// adDelayBatch bounds the contacts delayed in one tick while the
// advertising hours are closed; the rest are delayed in the next ticks.
const adDelayBatch = 500

// adRules are an advertising scenario's rules; nil for a care scenario.
func (e *Engine) adRules(ctx context.Context, sc *domain.Scenario) (*domain.DialRules, error) {
	if sc.CallConfig.Purpose != domain.PurposeAdvertising {
		return nil, nil
	}
	ads, err := e.store.AdSettings(ctx, sc.AppID)
	if err != nil {
		return nil, err
	}
	r, err := domain.DialRulesOf(sc.CallConfig, ads, e.Window)
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// adWaits splits an advertising scenario's due contacts into those that
// may be dialled now and those delayed. A contact whose number has an
// advertising call up is neither: it is looked at again when that call
// ends (answered, it is then delayed 24 hours; not, it is dialled). So
// two calls to one number never run at once, even claimed in one tick.
func (e *Engine) adWaits(ctx context.Context, sc *domain.Scenario, rules *domain.DialRules, due []domain.DueContact, now time.Time) (dial []domain.DueContact, delays []domain.CallDelay, err error) {
	if len(due) == 0 {
		return nil, nil, nil
	}
	phones := make([]string, len(due))
	up := map[string]int{}
	e.mu.Lock()
	for i, c := range due {
		phones[i] = c.Phone
		up[c.Phone] = e.adUp[phoneKey{sc.AppID, c.Phone}]
	}
	e.mu.Unlock()
	// Read after the calls up: a call that ended meanwhile committed its
	// answer before it stopped counting as up, so this read sees it.
	answered, err := e.store.AnsweredAdCalls(ctx, sc.AppID, phones, now.Add(-domain.AdDay))
	if err != nil {
		return nil, nil, err
	}
	for _, c := range due {
		w := rules.Wait(now, domain.ContactTiming{Answered: answered[c.Phone], Up: up[c.Phone]})
		switch {
		case w == nil:
			dial = append(dial, c)
			up[c.Phone]++ // a second contact with this number in the batch waits for this call
		case w.Until != nil:
			delays = append(delays, domain.CallDelay{AppID: sc.AppID, Contact: c, Reason: w.Reason, Until: *w.Until})
		}
	}
	return dial, delays, nil
}

// delayOutsideHours delays the due contacts of an advertising scenario
// whose own window is open but whose advertising hours are not, each once
// (to the hours' opening, or later by the daily limit).
func (e *Engine) delayOutsideHours(ctx context.Context, sc *domain.Scenario, rules *domain.DialRules, now time.Time, later func(time.Time)) ([]domain.CallDelay, error) {
	if open, ok := rules.Window.Next(now); ok {
		later(open)
	}
	due, err := e.store.DueContacts(ctx, sc.AppID, sc.ID, now, adDelayBatch)
	if err != nil {
		return nil, err
	}
	if len(due) == adDelayBatch {
		later(now)
	}
	_, delays, err := e.adWaits(ctx, sc, rules, due, now)
	return delays, err
}
