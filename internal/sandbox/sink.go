package sandbox

import (
	"bytes"
	"context"
	"dialbox/internal/config"
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/julienschmidt/httprouter"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// Sink is the sandbox's own webhook receiver: POST /sink/{name} stores what
// arrives (in memory, the newest that fit in sink.max_messages and
// sink.max_bytes) with the result of checking its Standard Webhooks
// signature against sink.secret, so a developer sees call results without
// writing a receiver. It answers 204 to a delivery it kept: a bad signature
// is reported on the stored message, not by failing the delivery.
type Sink struct {
	verifier *standardwebhooks.Webhook
	max      int
	maxBytes int
	maxBody  int

	mu    sync.Mutex
	seq   int64
	msgs  []*SinkMessage // oldest first
	bytes int            // what msgs retain, by their retainedBytes
}

// SinkMessage is one webhook the sink received. Its body is kept as the
// bytes that arrived, in one of two fields: a JSON body is answered as
// itself under "body", any other under "body_base64" (base64 only when
// encoded; docs/sandbox.md#7-read-the-webhooks-the-sink).
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
	Body       json.RawMessage `json:"body"`                  // a JSON body; null otherwise
	BodyBase64 []byte          `json:"body_base64,omitempty"` // a body that is not JSON
}

// Raw is the body as received.
func (m *SinkMessage) Raw() []byte {
	if m.Body != nil {
		return m.Body
	}
	return m.BodyBase64
}

// retainedBytes is what a message keeps in memory: its body and strings as
// received, and about what the struct and its slot cost.
func (m *SinkMessage) retainedBytes() int {
	return len(m.Raw()) + len(m.Name) + len(m.WebhookID) + len(m.Timestamp) + len(m.Signature) +
		len(m.Error) + len(m.EventType) + 160
}

// The sink's name and signature headers are short in every real delivery;
// longer ones are refused, so one message is bounded by its body.
const (
	MaxSinkNameBytes   = 256
	maxSinkHeaderBytes = 1024
)

// NewSink returns an empty sink checking signatures against cfg's secret.
func NewSink(cfg config.SinkConfig) (*Sink, error) {
	v, err := standardwebhooks.NewWebhook(cfg.Secret)
	if err != nil {
		return nil, err
	}
	return &Sink{verifier: v, max: cfg.MaxMessages, maxBytes: cfg.MaxBytes, maxBody: cfg.MaxBodyBytes}, nil
}

// DemoApps is what SinkAccess asks of the store: the demo tenant, or
// domain.ErrNotFound.
type DemoApps interface {
	DemoApp(ctx context.Context) (*domain.Application, error)
}

// SinkAccess is who may post to the sink, sink.access with "auto" decided:
// open on a sandbox (the simulated dialer, or a database with the demo
// tenant, whose webhook is the sink), off on a server making real calls
// for its tenants only (docs/sandbox.md#who-may-post-to-the-sink).
func SinkAccess(ctx context.Context, cfg config.Config, store DemoApps) (string, error) {
	if cfg.Sink.Access != config.SinkAccessAuto {
		return cfg.Sink.Access, nil
	}
	if cfg.Dialer.Kind != config.DialerSIP {
		return config.SinkAccessOpen, nil
	}
	switch _, err := store.DemoApp(ctx); {
	case err == nil:
		return config.SinkAccessOpen, nil
	case errors.Is(err, domain.ErrNotFound):
		return config.SinkAccessOff, nil
	default:
		return "", err
	}
}

// Mount adds POST /sink/:name to router as access says: open, behind
// authorize (the admin token's check, which answers a refusal itself), or
// not at all.
func (s *Sink) Mount(router *httprouter.Router, access string, authorize func(http.ResponseWriter, *http.Request) bool) {
	switch access {
	case config.SinkAccessOpen:
		router.POST("/sink/:name", s.Receive)
	case config.SinkAccessAdmin:
		router.POST("/sink/:name", func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
			if authorize(w, r) {
				s.Receive(w, r, ps)
			}
		})
	}
}

// Receive is the handler of POST /sink/{name}.
func (s *Sink) Receive(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	name := ps.ByName("name")
	if len(name) > MaxSinkNameBytes {
		httpx.WriteJSON(w, http.StatusBadRequest, httpx.ErrorBody{Code: 400, Message: fmt.Sprintf("Sink name longer than %d bytes", MaxSinkNameBytes)})
		return
	}
	for _, h := range []string{standardwebhooks.HeaderWebhookID, standardwebhooks.HeaderWebhookTimestamp, standardwebhooks.HeaderWebhookSignature} {
		if len(r.Header.Get(h)) > maxSinkHeaderBytes {
			httpx.WriteJSON(w, http.StatusBadRequest, httpx.ErrorBody{Code: 400, Message: fmt.Sprintf("Header %s longer than %d bytes", h, maxSinkHeaderBytes)})
			return
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(s.maxBody)))
	if err != nil {
		httpx.WriteJSON(w, http.StatusRequestEntityTooLarge, httpx.ErrorBody{Code: 413, Message: "Webhook body too large"})
		return
	}
	// Copies of exactly what is counted: the name is a slice of the
	// request's path (and its query), the body's buffer may be twice its size.
	body = bytes.Clone(body)
	m := &SinkMessage{Name: strings.Clone(name), ReceivedAt: time.Now().UTC(),
		WebhookID: strings.Clone(r.Header.Get(standardwebhooks.HeaderWebhookID)),
		Timestamp: strings.Clone(r.Header.Get(standardwebhooks.HeaderWebhookTimestamp)),
		Signature: strings.Clone(r.Header.Get(standardwebhooks.HeaderWebhookSignature))}
	if err := s.verifier.Verify(body, r.Header); err != nil {
		m.Error = err.Error()
	} else {
		m.Verified = true
	}
	var event struct {
		Type string `json:"type"`
	}
	// JSON readers of the admin API must get valid UTF-8 back.
	if json.Valid(body) && utf8.Valid(body) {
		m.Body = body
		if json.Unmarshal(body, &event) == nil {
			m.EventType = event.Type
		}
	} else {
		m.BodyBase64 = body
	}
	s.Add(m)
	w.WriteHeader(http.StatusNoContent)
}

// Add keeps m and drops the oldest messages until the sink is within its
// bounds again.
func (s *Sink) Add(m *SinkMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	m.ID = s.seq
	s.msgs = append(s.msgs, m)
	s.bytes += m.retainedBytes()
	drop := 0
	for len(s.msgs)-drop > s.max || s.bytes > s.maxBytes {
		s.bytes -= s.msgs[drop].retainedBytes()
		drop++
	}
	if drop > 0 {
		s.msgs = append(s.msgs[:0:0], s.msgs[drop:]...)
	}
}

// Size is how many messages the sink keeps and the bytes they retain.
func (s *Sink) Size() (messages, bytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.msgs), s.bytes
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
		} else {
			s.bytes -= m.retainedBytes()
		}
	}
	clear(s.msgs[len(kept):])
	s.msgs = kept
}
