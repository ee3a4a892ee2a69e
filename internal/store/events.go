package store

import (
	"dialbox/internal/domain"
	"encoding/json"
	"fmt"
	"time"
)

// How events are queued in the outbox, in the transaction that settles the
// call they tell of (internal/webhook delivers them).

// subscribedEndpoints lists the application's enabled endpoints with the
// events each wants.
func subscribedEndpoints(tx settleTx, appID int64) (map[string][]string, error) {
	out := map[string][]string{}
	err := tx.queryRows(`SELECT id, events FROM webhook_endpoints WHERE app_id = ? AND enabled = 1`, []any{appID},
		func(scan func(...any) error) error {
			var id, events string
			if err := scan(&id, &events); err != nil {
				return err
			}
			var list []string
			if err := json.Unmarshal([]byte(events), &list); err != nil {
				return fmt.Errorf("webhook endpoint %s events: %w", id, err)
			}
			out[id] = list
			return nil
		})
	return out, err
}

// enqueueEvent writes the event once per endpoint subscribed to it. The event id
// is shared by the copies; each copy has its own message id, which is its
// webhook-id.
func enqueueEvent(tx settleTx, endpoints map[string][]string, appID int64, eventType string, data any, now, firstTry time.Time) error {
	var payload []byte
	for ep, events := range endpoints {
		if !subscribed(events, eventType) {
			continue
		}
		if payload == nil {
			var err error
			if payload, err = domain.MarshalJSON(domain.Event{Type: eventType, ID: "evt_" + domain.NewV7(), Timestamp: domain.EventTime(now), Data: data}); err != nil {
				return err
			}
		}
		if err := tx.exec(`INSERT INTO webhook_messages (id, endpoint_id, app_id, event_type, payload, next_try_at, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, "msg_"+domain.NewV7(), ep, appID, eventType, string(payload),
			Millis(firstTry), Millis(now), Millis(now)); err != nil {
			return err
		}
	}
	return nil
}

func subscribed(events []string, eventType string) bool {
	if len(events) == 0 {
		return true
	}
	for _, e := range events {
		if e == eventType {
			return true
		}
	}
	return false
}
