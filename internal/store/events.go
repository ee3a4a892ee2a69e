package store

import (
	"dialbox/internal/domain"
	"encoding/json"
	"fmt"
	"strings"
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

// outbox gathers the webhook messages a transaction queues, to insert
// with few statements (insert) rather than one a message.
type outbox struct{ args []any }

// outboxColumns are a message's values in insert's statement.
const outboxColumns = 8

// maxOutboxRows bounds the messages of one statement (a power of two),
// well under either database's limit of parameters.
const maxOutboxRows = 64

// add queues the event once per endpoint subscribed to it. The event id is
// shared by the copies; each copy has its own message id, which is its
// webhook-id. The payload is made now: data may change after.
func (o *outbox) add(endpoints map[string][]string, appID int64, eventType string, data any, now, firstTry time.Time) error {
	var payload string
	for ep, events := range endpoints {
		if !subscribed(events, eventType) {
			continue
		}
		if payload == "" {
			b, err := domain.MarshalJSON(domain.Event{Type: eventType, ID: "evt_" + domain.NewV7(), Timestamp: domain.EventTime(now), Data: data})
			if err != nil {
				return err
			}
			payload = string(b)
		}
		o.args = append(o.args, "msg_"+domain.NewV7(), ep, appID, eventType, payload, Millis(firstTry), Millis(now), Millis(now))
	}
	return nil
}

// insert writes the messages queued, in the order they were added (their
// seq, which delivery follows), and empties o.
func (o *outbox) insert(tx settleTx) error {
	for len(o.args) > 0 {
		part := o.args[:rowsPerStatement(len(o.args)/outboxColumns, maxOutboxRows)*outboxColumns]
		if err := tx.exec(`INSERT INTO webhook_messages (id, endpoint_id, app_id, event_type, payload, next_try_at, created_at, updated_at)
			VALUES `+strings.Repeat(", (?, ?, ?, ?, ?, ?, ?, ?)", len(part)/outboxColumns)[2:], part...); err != nil {
			return err
		}
		o.args = o.args[len(part):]
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
