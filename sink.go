package main

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// Sink is the sandbox's own webhook receiver: POST /sink/{name} stores what
// arrives (in memory, the newest max_messages) with the result of checking
// its Standard Webhooks signature against sink.secret, so a developer sees
// call results without writing a receiver. It always answers 204: a bad
// signature is reported on the stored message, not by failing the delivery.
type Sink struct {
	verifier *standardwebhooks.Webhook
	max      int

	mu   sync.Mutex
	seq  int64
	msgs []*SinkMessage // oldest first
}

// SinkMessage is one webhook the sink received.
type SinkMessage struct {
	ID         int64           `json:"id"`
	Name       string          `json:"name"` // the {name} of /sink/{name}
	ReceivedAt time.Time       `json:"received_at"`
	WebhookID  string          `json:"webhook_id"`
	Timestamp  string          `json:"webhook_timestamp"`
	Signature  string          `json:"webhook_signature"`
	Verified   bool            `json:"verified"`
	Error      string          `json:"error,omitempty"` // why the signature did not verify
	EventType  string          `json:"event_type"`
	Body       json.RawMessage `json:"body"`
}

// maxSinkBody bounds one received webhook.
const maxSinkBody = 1 << 20

func NewSink(cfg SinkConfig) (*Sink, error) {
	v, err := standardwebhooks.NewWebhook(cfg.Secret)
	if err != nil {
		return nil, err
	}
	return &Sink{verifier: v, max: cfg.MaxMessages}, nil
}

// localSinkPrefix starts a webhook URL naming the built-in sink of
// whichever node delivers the message, resolved to that node's own
// address at each attempt: such a webhook works from every node of a
// cluster and on any --listen (docs/sandbox.md#7-read-the-webhooks-the-sink).
const localSinkPrefix = "/sink/"

// localSinkURL is the webhook URL of this server's sink of name.
func localSinkURL(name string) string { return localSinkPrefix + url.PathEscape(name) }

// checkWebhookURL is the one rule for a webhook endpoint's URL, in the
// admin API and in fixtures: an http(s) URL, or /sink/{name}.
func checkWebhookURL(s string) error {
	u, err := url.Parse(s)
	if err == nil && u.Scheme == "" && u.Host == "" && u.RawQuery == "" && u.Fragment == "" && !u.ForceQuery {
		name, ok := strings.CutPrefix(u.Path, localSinkPrefix)
		if ok && name != "" && !strings.Contains(name, "/") {
			return nil
		}
	}
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an http:// or https:// URL, or /sink/{name} for the built-in sink of the node that delivers")
	}
	return nil
}

func (s *Sink) receive(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSinkBody))
	if err != nil {
		writeJSON(w, http.StatusRequestEntityTooLarge, errorBody{Code: 413, Message: "Webhook body too large"})
		return
	}
	m := &SinkMessage{Name: ps.ByName("name"), ReceivedAt: time.Now().UTC(),
		WebhookID: r.Header.Get(standardwebhooks.HeaderWebhookID), Timestamp: r.Header.Get(standardwebhooks.HeaderWebhookTimestamp),
		Signature: r.Header.Get(standardwebhooks.HeaderWebhookSignature)}
	if err := s.verifier.Verify(body, r.Header); err != nil {
		m.Error = err.Error()
	} else {
		m.Verified = true
	}
	var event struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(body, &event) == nil {
		m.EventType = event.Type
		m.Body = body
	} else {
		m.Body, _ = marshalJSON(string(body)) // not JSON: kept as a string
	}
	s.mu.Lock()
	s.seq++
	m.ID = s.seq
	if len(s.msgs) == s.max {
		s.msgs = append(s.msgs[:0:0], s.msgs[1:]...)
	}
	s.msgs = append(s.msgs, m)
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// SinkFilter selects received webhooks; zero fields match all.
type SinkFilter struct {
	Name, EventType, WebhookID string
	Verified                   *bool
	Since                      time.Time
}

func (f SinkFilter) match(m *SinkMessage) bool {
	return (f.Name == "" || f.Name == m.Name) && (f.EventType == "" || f.EventType == m.EventType) &&
		(f.WebhookID == "" || f.WebhookID == m.WebhookID) && (f.Verified == nil || *f.Verified == m.Verified) &&
		(f.Since.IsZero() || !m.ReceivedAt.Before(f.Since))
}

// Find returns the matching messages, oldest first.
func (s *Sink) Find(f SinkFilter) []*SinkMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []*SinkMessage{}
	for _, m := range s.msgs {
		if f.match(m) {
			out = append(out, m)
		}
	}
	return out
}

// Clear forgets the messages of name, or every message when name is "".
func (s *Sink) Clear(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := s.msgs[:0]
	for _, m := range s.msgs {
		if name != "" && m.Name != name {
			kept = append(kept, m)
		}
	}
	clear(s.msgs[len(kept):])
	s.msgs = kept
}
