package main

import (
	"bytes"
	"context"
	"dialbox/internal/config"
	"dialbox/internal/domain"
	"dialbox/internal/ops"
	"dialbox/internal/sandbox"
	"dialbox/internal/sqldb"
	"dialbox/internal/store"
	"dialbox/internal/webhook"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// whSecret is the Standard Webhooks example secret.
const whSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// whEvent is one verified delivery.
type whEvent struct {
	WebhookID string
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Timestamp string          `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// whReceiver is a webhook endpoint that checks every request with the
// Standard Webhooks library and answers what status says (204 when nil).
type whReceiver struct {
	srv    *httptest.Server
	status atomic.Pointer[func(r *http.Request) (int, http.Header)]

	mu     sync.Mutex
	events map[string]whEvent // by webhook-id: a redelivery is not a new event
	seen   map[string]int     // requests per webhook-id
	bad    []string
}

func newWHReceiver(t testing.TB) *whReceiver {
	r := &whReceiver{events: map[string]whEvent{}, seen: map[string]int{}}
	verifier, err := standardwebhooks.NewWebhook(whSecret)
	if err != nil {
		t.Fatal(err)
	}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if f := r.status.Load(); f != nil {
			if code, h := (*f)(req); code != 0 {
				for k, v := range h {
					w.Header()[k] = v
				}
				w.WriteHeader(code)
				return
			}
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		id := req.Header.Get("webhook-id")
		r.seen[id]++
		if err := verifier.Verify(body, req.Header); err != nil {
			r.bad = append(r.bad, id+": "+err.Error())
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		var ev whEvent
		if err := json.Unmarshal(body, &ev); err != nil || ev.Type == "" || ev.ID == "" || ev.Timestamp == "" || len(ev.Data) == 0 {
			r.bad = append(r.bad, id+": bad payload "+string(body))
		}
		ev.WebhookID = id
		r.events[id] = ev
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *whReceiver) URL() string { return r.srv.URL + "/hook" }

func (r *whReceiver) answer(f func(*http.Request) (int, http.Header)) { r.status.Store(&f) }

func (r *whReceiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

func (r *whReceiver) all() []whEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]whEvent, 0, len(r.events))
	for _, e := range r.events {
		out = append(out, e)
	}
	return out
}

func (r *whReceiver) failures() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bad...)
}

// waitFor waits until n distinct messages arrived, and checks no more do.
func (r *whReceiver) waitFor(t testing.TB, n int) {
	t.Helper()
	waitFor(t, "webhook deliveries", func() bool { return r.count() >= n })
	if got := r.count(); got != n {
		t.Errorf("receiver got %d distinct messages, want %d", got, n)
	}
}

// whStart starts delivery on s, under faults (nil: none), with 4 workers
// and a fast retry schedule, unless setup changes them.
func whStart(t testing.TB, s Store, faults *sandbox.Faults, setup func(*config.WebhooksConfig)) *webhook.Deliverer {
	t.Helper()
	return whStartMetered(t, s, faults, setup, ops.NewMetrics("").EndpointsAtShare)
}

// whStartMetered is whStart showing on atShare how many endpoints are at
// their share.
func whStartMetered(t testing.TB, s Store, faults *sandbox.Faults, setup func(*config.WebhooksConfig), atShare prometheus.Gauge) *webhook.Deliverer {
	t.Helper()
	cfg := config.DefaultConfig().Webhooks
	cfg.Workers = 4
	cfg.Timeout = config.Duration{Duration: 5 * time.Second}
	cfg.RetrySchedule = config.Durations("0s", "10ms", "20ms", "50ms", "100ms")
	if setup != nil {
		setup(&cfg)
	}
	w := NewWebhooks(s, faults, discardLog(), cfg, "", atShare)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

// whEnqueue queues n events for the tenant's enabled endpoints, one
// message per endpoint, as a call's end would (internal/store/events.go).
func whEnqueue(t testing.TB, s Store, appID int64, n int) {
	t.Helper()
	whEnqueueData(t, s, appID, n, func(i int) any { return map[string]int{"n": i} })
}

// whEnqueueData is whEnqueue with data(i) the i-th event's data.
func whEnqueueData(t testing.TB, s Store, appID int64, n int, data func(i int) any) {
	t.Helper()
	outsideWrite(t, s, func(tx sqldb.Querier) error {
		ctx := context.Background()
		endpoints, err := sqldb.Collect(ctx, tx, func(r sqldb.Row) (string, error) {
			var id string
			return id, r.Scan(&id)
		}, `SELECT id FROM webhook_endpoints WHERE app_id = ? AND enabled = 1`, appID)
		if err != nil {
			return err
		}
		now := time.Now()
		for i := range n {
			payload, err := domain.MarshalJSON(domain.Event{Type: domain.EventCallCompleted, ID: "evt_" + domain.NewV7(),
				Timestamp: domain.EventTime(now), Data: data(i)})
			if err != nil {
				return err
			}
			for _, ep := range endpoints {
				if _, err := tx.Exec(ctx, `INSERT INTO webhook_messages (id, endpoint_id, app_id, event_type, payload, next_try_at, created_at, updated_at)
					VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, "msg_"+domain.NewV7(), ep, appID, domain.EventCallCompleted, string(payload),
					store.Millis(now), store.Millis(now), store.Millis(now)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

type whMessage struct {
	State           string
	Attempts, Tries int
}

func whMessages(t testing.TB, s Store) map[string]whMessage {
	t.Helper()
	out := map[string]whMessage{}
	queryRows(t, s, `SELECT id, state, attempts, tries FROM webhook_messages`, nil, func(scan func(...any) error) error {
		var id string
		var m whMessage
		err := scan(&id, &m.State, &m.Attempts, &m.Tries)
		out[id] = m
		return err
	})
	return out
}

func whTenant(urls ...string) *store.FixtureApp {
	app := engTenant()
	for _, u := range urls {
		app.Webhooks = append(app.Webhooks, store.FixtureWebhook{URL: u, Secret: whSecret})
	}
	return app
}

func TestWebhooksReceiverDownThenUp(t *testing.T) { eachBackend(t, testWebhooksReceiverDownThenUp) }

func testWebhooksReceiverDownThenUp(t *testing.T, backend string) {
	rcv := newWHReceiver(t)
	var down atomic.Bool
	down.Store(true)
	var refused atomic.Int64
	rcv.answer(func(*http.Request) (int, http.Header) {
		if down.Load() {
			refused.Add(1)
			return http.StatusBadGateway, nil
		}
		return 0, nil
	})
	s, ids := fixtureStoreOn(t, backend, whTenant(rcv.URL()))
	// Enough tries that none dies while the receiver is down.
	whStart(t, s, nil, func(cfg *config.WebhooksConfig) {
		cfg.RetrySchedule = make([]config.Duration, 200)
		for i := range cfg.RetrySchedule[1:] {
			cfg.RetrySchedule[i+1] = config.Duration{Duration: 5 * time.Millisecond}
		}
	})
	whEnqueue(t, s, ids[0], 20)
	waitFor(t, "every message tried at least three times", func() bool {
		return queryInt(t, s, `SELECT count(*) FROM webhook_messages WHERE attempts >= 3`) == 20
	})
	down.Store(false)
	rcv.waitFor(t, 20)
	waitFor(t, "all delivered", func() bool {
		return queryInt(t, s, `SELECT count(*) FROM webhook_messages WHERE state = 'delivered'`) == 20
	})
	for id, m := range whMessages(t, s) {
		if m.Attempts < 4 {
			t.Errorf("message %s: %d attempts, want at least 4 (three refused, then delivered)", id, m.Attempts)
		}
		if got := queryInt(t, s, `SELECT count(*) FROM webhook_attempts a JOIN webhook_messages m ON m.seq = a.message_seq
			WHERE m.id = ?`, id); got != m.Attempts {
			t.Errorf("message %s: %d attempts recorded, %d counted", id, got, m.Attempts)
		}
	}
	if bad := rcv.failures(); len(bad) > 0 {
		t.Errorf("verification failures: %v", bad)
	}
}

func TestWebhooksDeadGoneAndRetryAfter(t *testing.T) {
	eachBackend(t, testWebhooksDeadGoneAndRetryAfter)
}

func testWebhooksDeadGoneAndRetryAfter(t *testing.T, backend string) {
	failing, gone, slow := newWHReceiver(t), newWHReceiver(t), newWHReceiver(t)
	failing.answer(func(*http.Request) (int, http.Header) { return 500, nil })
	gone.answer(func(*http.Request) (int, http.Header) { return 410, nil })
	var throttled atomic.Bool
	slow.answer(func(*http.Request) (int, http.Header) {
		if throttled.CompareAndSwap(false, true) {
			return 429, http.Header{"Retry-After": {"1"}}
		}
		return 0, nil
	})
	s, ids := fixtureStoreOn(t, backend, whTenant(failing.URL(), gone.URL(), slow.URL()))
	var cfg config.WebhooksConfig
	whStart(t, s, nil, func(c *config.WebhooksConfig) { cfg = *c })
	whEnqueue(t, s, ids[0], 1)
	waitFor(t, "messages settled", func() bool {
		return queryInt(t, s, `SELECT count(*) FROM webhook_messages WHERE state <> 'pending'`) == 3
	})
	rows := map[string]struct {
		state    string
		attempts int
		enabled  bool
	}{}
	queryRows(t, s, `SELECT e.url, m.state, m.attempts, e.enabled <> 0 FROM webhook_messages m JOIN webhook_endpoints e ON e.id = m.endpoint_id`,
		nil, func(scan func(...any) error) error {
			var url, state string
			var attempts int
			var enabled bool
			err := scan(&url, &state, &attempts, &enabled)
			rows[url] = struct {
				state    string
				attempts int
				enabled  bool
			}{state, attempts, enabled}
			return err
		})
	if got := rows[failing.URL()]; got.state != domain.MessageDead || got.attempts != len(cfg.RetrySchedule) || !got.enabled {
		t.Errorf("always 500: %+v, want dead after %d attempts", got, len(cfg.RetrySchedule))
	}
	if got := rows[gone.URL()]; got.state != domain.MessageDead || got.attempts != 1 || got.enabled {
		t.Errorf("410: %+v, want dead after 1 attempt and the endpoint disabled", got)
	}
	if got := rows[slow.URL()]; got.state != domain.MessageDelivered || got.attempts != 2 {
		t.Errorf("429 then 204: %+v, want delivered on the second attempt", got)
	}
	// The retry after the 429 waited the second Retry-After asked for, not
	// the 10 ms the schedule says.
	var first, second int64
	queryRows(t, s, `SELECT min(a.at), max(a.at) FROM webhook_attempts a
		JOIN webhook_messages m ON m.seq = a.message_seq JOIN webhook_endpoints e ON e.id = m.endpoint_id
		WHERE e.url = ?`, []any{slow.URL()}, func(scan func(...any) error) error { return scan(&first, &second) })
	if second-first < 1000 {
		t.Errorf("retry %d ms after a 429 with Retry-After: 1", second-first)
	}
	var status int
	var errText string
	queryRows(t, s, `SELECT a.status_code, a.error FROM webhook_attempts a
		JOIN webhook_messages m ON m.seq = a.message_seq JOIN webhook_endpoints e ON e.id = m.endpoint_id
		WHERE e.url = ? AND a.attempt = 1`, []any{failing.URL()}, func(scan func(...any) error) error { return scan(&status, &errText) })
	if status != 500 || errText == "" {
		t.Errorf("first attempt of the failing endpoint recorded as %d %q", status, errText)
	}
	// A disabled endpoint gets no new messages.
	whEnqueue(t, s, ids[0], 1)
	if n := queryInt(t, s, `SELECT count(*) FROM webhook_messages`); n != 5 {
		t.Errorf("%d messages after a second event, want 5 (none for the disabled endpoint)", n)
	}
}

func TestWebhooksBeforeSendAndSameIDOnRetry(t *testing.T) {
	eachBackend(t, testWebhooksBeforeSendAndSameIDOnRetry)
}

func testWebhooksBeforeSendAndSameIDOnRetry(t *testing.T, backend string) {
	rcv := newWHReceiver(t)
	s, ids := fixtureStoreOn(t, backend, whTenant(rcv.URL()))
	// The first ten tries fail as if the receiver said 503.
	faults := sandbox.NewFaults(s)
	faults.Add(&sandbox.FaultRule{Kind: sandbox.FaultWebhook, Status: 503, Times: 10, Remaining: 10, Probability: 1})
	whStart(t, s, faults, nil)
	whEnqueue(t, s, ids[0], 5)
	rcv.waitFor(t, 5)
	waitFor(t, "all delivered", func() bool {
		return queryInt(t, s, `SELECT count(*) FROM webhook_messages WHERE state = 'delivered'`) == 5
	})
	msgs := whMessages(t, s)
	for _, ev := range rcv.all() {
		if _, ok := msgs[ev.WebhookID]; !ok {
			t.Errorf("webhook-id %s is not a stored message id", ev.WebhookID)
		}
	}
	if n := queryInt(t, s, `SELECT count(*) FROM webhook_attempts WHERE status_code = 503`); n != 10 {
		t.Errorf("%d forced 503 attempts recorded, want 10", n)
	}
}

func TestWebhooksResumeAfterRestart(t *testing.T) { eachBackend(t, testWebhooksResumeAfterRestart) }

func testWebhooksResumeAfterRestart(t *testing.T, backend string) {
	rcv := newWHReceiver(t)
	s, ids := fixtureStoreOn(t, backend, whTenant(rcv.URL()))
	// Messages queued while nothing delivers (a crash before delivery) go
	// out when delivery starts, each once.
	whEnqueue(t, s, ids[0], 30)
	w := whStart(t, s, nil, nil)
	rcv.waitFor(t, 30)
	// Stop once every attempt is recorded: one still waiting on its answer
	// would be abandoned and rightly sent again (at least once).
	waitFor(t, "the 30 deliveries recorded", func() bool {
		return queryInt(t, s, `SELECT count(*) FROM webhook_messages WHERE state = 'delivered'`) == 30
	})
	w.Stop()
	whEnqueue(t, s, ids[0], 10)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	rcv.waitFor(t, 40)
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for id, n := range rcv.seen {
		if n != 1 {
			t.Errorf("%s delivered %d times with a healthy receiver", id, n)
		}
	}
}

// A receiver that accepts and never answers holds only its share of the
// workers (webhooks.max_in_flight_per_endpoint): another tenant's endpoint
// gets every message while the slow one is still stuck, even though the
// slow one's messages were queued first.
func TestWebhooksSlowEndpointTakesOnlyItsShare(t *testing.T) {
	eachBackend(t, testWebhooksSlowEndpointTakesOnlyItsShare)
}

func testWebhooksSlowEndpointTakesOnlyItsShare(t *testing.T, backend string) {
	slow, fast := newWHReceiver(t), newWHReceiver(t)
	// Closed before the receiver's server is (cleanups run last first), so
	// its requests end and the test does.
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var stuck, most atomic.Int64
	slow.answer(func(r *http.Request) (int, http.Header) {
		n := stuck.Add(1)
		defer stuck.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return http.StatusServiceUnavailable, nil
	})
	other := whTenant(fast.URL())
	other.Name, other.APIKey, other.APISecret = "other tenant", "other-key", "other-secret"
	other.HotlinePools[0].Numbers = []string{"02873000009"}
	other.Scenarios[0].ID = "sc-other"
	s, ids := fixtureStoreOn(t, backend, whTenant(slow.URL()), other)
	// Workers to spare beyond the share, and a timeout the test never
	// reaches: the slow receiver holds every attempt it is given.
	var cfg config.WebhooksConfig
	atShare := ops.NewMetrics("").EndpointsAtShare
	whStartMetered(t, s, nil, func(c *config.WebhooksConfig) {
		c.Timeout = config.Duration{Duration: time.Hour}
		cfg = *c
	}, atShare)
	share := int64(cfg.MaxInFlightPerEndpoint) // the default, 2 of whStart's 4 workers
	if share != 2 || cfg.Workers != 4 {
		t.Fatalf("%d in flight per endpoint, %d workers; the test wants 2 of 4", share, cfg.Workers)
	}
	whEnqueue(t, s, ids[0], 20)
	waitFor(t, "the slow receiver holding attempts", func() bool { return stuck.Load() >= share })
	whEnqueue(t, s, ids[1], 20)
	fast.waitFor(t, 20)
	waitFor(t, "the fast endpoint's messages recorded as delivered", func() bool {
		return queryInt(t, s, `SELECT count(*) FROM webhook_messages m JOIN webhook_endpoints e ON e.id = m.endpoint_id
			WHERE e.url = ? AND m.state = 'delivered'`, fast.URL()) == 20
	})
	waitFor(t, "the metric showing the slow endpoint at its share", func() bool {
		return testutil.ToFloat64(atShare) == 1
	})
	if n := stuck.Load(); n != share {
		t.Errorf("the slow receiver holds %d attempts after the fast one got all, want %d (still stuck)", n, share)
	}
	if n := most.Load(); n > share {
		t.Errorf("the slow receiver held %d attempts at once, more than its share of %d", n, share)
	}
	if n := queryInt(t, s, `SELECT count(*) FROM webhook_attempts`); n != 20 {
		t.Errorf("%d attempts recorded, want the fast endpoint's 20 alone", n)
	}
}

// whBareHTTP is the machine's own limit: n POSTs of body from workers
// goroutines to a local net/http server that answers 204, per second.
func whBareHTTP(b *testing.B, n, workers int, body []byte) float64 {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	defer client.CloseIdleConnections()
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				resp, err := client.Post(srv.URL, "application/json", bytes.NewReader(body))
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

// BenchmarkWebhookDeliveries measures signed deliveries per second from
// the outbox (read, sign, POST, record the attempt) to a local receiver
// that answers 204, next to a bare net/http loop with as many workers and
// the same body.
func BenchmarkWebhookDeliveries(b *testing.B) {
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		got.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	s, ids := fixtureStore(b, whTenant(srv.URL))
	data := domain.EventData{ContactID: domain.NewV7(), Fields: json.RawMessage(`{"ho_ten":"Nguyen Van A","so_dien_thoai":"+84912345678"}`),
		Phone: "+84912345678", ScenarioID: "sc", Attempt: 1, Hotline: "02873000001", Outcome: domain.OutcomeAnswered, Cause: 200}
	whEnqueueData(b, s, ids[0], b.N, func(int) any { return data })
	var body []byte
	queryRow(b, s, `SELECT payload FROM webhook_messages LIMIT 1`, nil, &body)
	workers := config.DefaultConfig().Webhooks.Workers
	b.ResetTimer()
	begin := time.Now()
	whStart(b, s, nil, func(cfg *config.WebhooksConfig) { cfg.Workers = workers })
	for got.Load() < int64(b.N) {
		time.Sleep(2 * time.Millisecond)
	}
	elapsed := time.Since(begin)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(whBareHTTP(b, max(b.N, 2000), workers, body), "bare_http_req/s")
}
