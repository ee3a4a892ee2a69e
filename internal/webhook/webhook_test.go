package webhook

import (
	"context"
	"dialbox/internal/config"
	"dialbox/internal/domain"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"": 0, "7": 7 * time.Second, "-1": 0, "soon": 0,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Hour).Format(http.TimeFormat):       0,
	} {
		if got := parseRetryAfter(in, now); got != want {
			t.Errorf("Retry-After %q: %v, want %v", in, got, want)
		}
	}
}

// memOutbox is an outbox in memory that, like SQLite's, leases nothing: a
// message stays due until its attempt is recorded.
type memOutbox struct {
	mu        sync.Mutex
	msgs      []domain.OutMessage
	state     map[int64]string
	reads     int
	delivered chan int64
}

func (o *memOutbox) DueMessages(_ context.Context, _ time.Time, limit, perEndpoint int, skip []string) ([]domain.OutMessage, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.reads++
	var out []domain.OutMessage
	for _, m := range o.msgs {
		if o.state[m.Seq] == domain.MessagePending && !slices.Contains(skip, m.EndpointID) && len(out) < min(limit, perEndpoint) {
			out = append(out, m)
		}
	}
	return out, nil
}

func (o *memOutbox) ReleaseMessages(context.Context, []int64) error { return nil }

func (o *memOutbox) NextMessageDue(context.Context, time.Time) (time.Time, bool, error) {
	return time.Time{}, false, nil
}

func (o *memOutbox) RecordAttempts(_ context.Context, attempts []domain.DeliveryAttempt) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, a := range attempts {
		o.state[a.Seq] = a.State
		if a.State == domain.MessageDelivered {
			o.delivered <- a.Seq
		}
	}
	return nil
}

// TestDeliverReadsOnceForManyAttempts: a backlog goes out once per message,
// each recorded delivered, from a read of the outbox per many messages,
// not one a message (docs/webhooks.md#fair-delivery).
func TestDeliverReadsOnceForManyAttempts(t *testing.T) {
	const n = 600
	var mu sync.Mutex
	got := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.Header.Get("webhook-id")]++
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	o := &memOutbox{state: map[int64]string{}, delivered: make(chan int64, n)}
	for i := range n {
		seq := int64(i + 1)
		o.msgs = append(o.msgs, domain.OutMessage{Seq: seq, ID: fmt.Sprintf("msg_%d", seq), EndpointID: "ep",
			URL: srv.URL, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", Payload: []byte(`{}`)})
		o.state[seq] = domain.MessagePending
	}
	cfg := config.WebhooksConfig{Workers: 8, MaxInFlightPerEndpoint: 8, Timeout: config.Duration{Duration: 10 * time.Second},
		RetrySchedule: []config.Duration{{}, {Duration: time.Second}}}
	d := New(o, nil, slog.New(slog.DiscardHandler), cfg, "", "dialbox/test", prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"}))
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	deadline := time.After(30 * time.Second)
	for range n {
		select {
		case <-o.delivered:
		case <-deadline:
			t.Fatal("the backlog was not delivered within 30 s")
		}
	}
	d.Stop()
	mu.Lock()
	defer mu.Unlock()
	for id, k := range got {
		if k != 1 {
			t.Errorf("%s sent %d times", id, k)
		}
	}
	if len(got) != n {
		t.Errorf("%d messages sent, want %d", len(got), n)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.reads > n/10 {
		t.Errorf("%d reads of the outbox for %d messages, want at most %d", o.reads, n, n/10)
	}
}
