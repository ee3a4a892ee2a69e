// Package webhook owns the delivery of webhook messages: the dispatcher
// and its workers, each endpoint's share of them, signing per Standard
// Webhooks, retries and Retry-After, and sending a local sink's URLs
// (/sink/{name}) to this node (docs/webhooks.md). It reads and records
// through Outbox, the part of the store it calls, and may import only
// internal/config and internal/domain of dialbox.
package webhook

import (
	"bytes"
	"context"
	"dialbox/internal/config"
	"dialbox/internal/domain"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// webhookIdle bounds how long the dispatcher sleeps with nothing due, so
// changes made without Notify (an endpoint enabled again) are seen.
const webhookIdle = time.Second

// maxRetryAfter caps a receiver's Retry-After so one answer cannot park a
// message for ever.
const maxRetryAfter = 24 * time.Hour

// Outbox is what delivery asks of the store; the root's Store includes it
// (docs/postgres.md#the-store-interface).
type Outbox interface {
	// DueMessages returns (on a store that leases messages, claims) up to
	// limit messages due at now, the longest waiting first, at most
	// perEndpoint of each endpoint's, none of the endpoints in skip (each
	// has its share under way).
	DueMessages(ctx context.Context, now time.Time, limit, perEndpoint int, skip []string) ([]domain.OutMessage, error)
	// ReleaseMessages gives back messages DueMessages returned that the
	// caller will not try now (an attempt of this process at them is still
	// being recorded), so they are due again at once; a store that leases
	// messages (docs/postgres.md#claiming-calls) ends their leases.
	ReleaseMessages(ctx context.Context, seqs []int64) error
	NextMessageDue(ctx context.Context, now time.Time) (time.Time, bool, error)
	// RecordAttempts stores attempts, each at a different message, in one
	// commit.
	RecordAttempts(ctx context.Context, attempts []domain.DeliveryAttempt) error
}

// Faults may answer for a receiver (the admin API's webhook rules,
// docs/sandbox.md#5-force-call-outcomes-and-webhook-failures): forced,
// and then nothing is sent.
type Faults interface {
	BeforeSend(endpointID string) (status int, forced bool)
}

// Deliverer delivers the outbox: a dispatcher reads due messages into a
// queue, from which a pool of workers takes them, each signing per
// Standard Webhooks and sending, and a recorder stores their attempts. Delivery is at least once: a message is marked delivered
// only after its 2xx, so a crash in between sends it again, with the same
// webhook-id. No endpoint has more than maxInFlight attempts under way at
// once, so a receiver that never answers holds only that many workers and
// the others serve every other endpoint (docs/webhooks.md#fair-delivery).
type Deliverer struct {
	outbox      Outbox
	log         *slog.Logger
	workers     int
	maxInFlight int // per endpoint: webhooks.max_in_flight_per_endpoint
	timeout     time.Duration
	schedule    []time.Duration
	client      *http.Client
	// selfURL is this node's own address, where a webhook URL of the form
	// /sink/{name} is delivered (docs/sandbox.md#7-read-the-webhooks-the-sink).
	selfURL string
	// faults may answer for the receiver (the admin API's webhook rules),
	// and then nothing is sent; nil: none.
	faults Faults
	// userAgent is every request's User-Agent: dialbox and its version.
	userAgent string
	// atShare is dialbox_webhook_endpoints_at_share.
	atShare prometheus.Gauge

	wake chan struct{}
	// ready wakes idle workers: a message was queued or an endpoint got
	// room. One signal a worker at most is waiting; a worker woken for
	// nothing waits again.
	ready chan struct{}

	mu      sync.Mutex
	running bool
	stop    chan struct{}
	done    chan struct{}
	cancel  context.CancelFunc
	// inflight holds messages sent or being sent whose attempt is not yet
	// recorded, and those recorded since the dispatcher's last outbox read
	// began: that read may predate the record and still show them due,
	// which would send them twice.
	inflight map[int64]flight
	// sending counts each endpoint's messages in inflight whose attempt is
	// on the wire, which maxInFlight bounds.
	sending map[string]int
	// queue holds the messages read from the outbox and not yet taken by a
	// worker, the longest waiting first: one read feeds many attempts, the
	// workers take them while the dispatcher reads, and the outbox is read
	// again only when dirty.
	queue []queued
	// dirty: the outbox may hold due messages the queue lacks (an event was
	// queued, an endpoint ran low on queued messages, a read was refused, a
	// retry came due).
	dirty bool
	// paused: a read was refused while too many attempts waited for their
	// record; the recorder's next batch makes the outbox dirty again.
	paused bool
	// nextDue is the dispatcher's own: when the earliest message not due at
	// its last read comes due (zero: none).
	nextDue time.Time
	// recs are the attempts made and waiting for the recorder.
	recs    []domain.DeliveryAttempt
	recWake chan struct{}
	// abandoned counts attempts cut by a stop, to be logged once.
	abandoned atomic.Int64
}

// queued is a message of the queue and when it was read.
type queued struct {
	domain.OutMessage
	readAt time.Time
}

// New makes the deliverer of store's outbox, with cfg's workers,
// share per endpoint, timeout and retries; faults may answer for the
// receivers (nil: none), selfURL is this node's own address, where a
// webhook URL of the form /sink/{name} is delivered, userAgent every
// request's User-Agent; atShare shows how many endpoints are at their
// share.
func New(store Outbox, faults Faults, log *slog.Logger, cfg config.WebhooksConfig, selfURL, userAgent string, atShare prometheus.Gauge) *Deliverer {
	schedule := make([]time.Duration, len(cfg.RetrySchedule))
	for i, d := range cfg.RetrySchedule {
		schedule[i] = d.Duration
	}
	return &Deliverer{
		outbox: store, faults: faults, log: log, workers: cfg.Workers, maxInFlight: cfg.MaxInFlightPerEndpoint,
		timeout: cfg.Timeout.Duration, schedule: schedule, selfURL: selfURL, userAgent: userAgent, atShare: atShare,
		client: &http.Client{
			Transport: &http.Transport{
				Proxy:               http.ProxyFromEnvironment,
				MaxIdleConnsPerHost: cfg.Workers,
				IdleConnTimeout:     90 * time.Second,
			},
			// A redirect is not a delivery: the receiver must answer 2xx itself.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		wake: make(chan struct{}, 1), recWake: make(chan struct{}, 1), ready: make(chan struct{}, cfg.Workers),
	}
}

// Notify wakes the dispatcher: messages were queued. Safe on a nil
// *Deliverer and while stopped.
func (w *Deliverer) Notify() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.dirty = true
	w.mu.Unlock()
	w.poke()
}

// poke wakes the dispatcher without saying the outbox changed: an
// endpoint may have room for a queued message.
func (w *Deliverer) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// FirstTry is when a message queued at now is first due; now is the
// deliverer's clock (the real one), whatever clock the engine runs on.
func (w *Deliverer) FirstTry(now time.Time) time.Time {
	if w == nil || len(w.schedule) == 0 {
		return now
	}
	return now.Add(w.schedule[0])
}

// Running says whether delivery is between Start and Stop (/readyz).
func (w *Deliverer) Running() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.running
}

// Start begins delivering pending messages, those left by an earlier run
// included.
func (w *Deliverer) Start() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running {
		return errors.New("webhooks already running")
	}
	w.running = true
	w.stop, w.done = make(chan struct{}), make(chan struct{})
	w.inflight, w.sending, w.queue, w.dirty = map[int64]flight{}, map[string]int{}, nil, true
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go w.loop(ctx, w.stop, w.done)
	return nil
}

// Stop ends delivery at once (an admin reset must not wait on a slow
// receiver); requests in flight are abandoned unrecorded, so their messages
// are sent again after the next Start.
func (w *Deliverer) Stop() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w.Shutdown(ctx)
}

// Shutdown takes no new message but lets attempts already under way finish
// and be recorded until ctx is done; those still waiting on their receiver
// then are abandoned as by Stop. An abandoned attempt is no error (its
// message stays pending and goes out after the next start), so it is only
// logged.
func (w *Deliverer) Shutdown(ctx context.Context) {
	w.mu.Lock()
	if !w.running {
		w.mu.Unlock()
		return
	}
	w.running = false
	close(w.stop)
	cancel, done := w.cancel, w.done
	w.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
	}
	cancel()
	<-done
	if n := w.abandoned.Swap(0); n > 0 {
		w.log.Info("webhooks: attempts abandoned on stop; their messages go out after the next start", "attempts", n)
	}
}

// loop runs the workers, the recorder and the dispatcher until stop, then
// closes done once every attempt is recorded or abandoned.
func (w *Deliverer) loop(ctx context.Context, stop, done chan struct{}) {
	var workers sync.WaitGroup
	for range w.workers {
		workers.Add(1)
		go func() {
			defer workers.Done()
			w.work(ctx, stop)
		}()
	}
	recStop, recDone := make(chan struct{}), make(chan struct{})
	go w.recorder(recStop, recDone)
	defer func() {
		workers.Wait()
		close(recStop)
		<-recDone
		w.mu.Lock()
		var seqs []int64
		for _, q := range w.queue {
			seqs = append(seqs, q.Seq)
		}
		w.queue = nil
		w.mu.Unlock()
		w.release(seqs)
		close(done)
	}()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-stop:
			return
		case <-w.wake:
		case <-timer.C:
			w.mu.Lock()
			w.dirty = true // a retry may have come due, an endpoint been enabled
			w.mu.Unlock()
		}
		wait := w.dispatch(ctx)
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
	}
}

// work is a worker: it takes the first queued message whose endpoint has
// room and makes one attempt at it, until stop.
func (w *Deliverer) work(ctx context.Context, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		w.mu.Lock()
		m, ok := w.next()
		w.mu.Unlock()
		if ok {
			w.deliver(ctx, m)
			continue
		}
		select {
		case <-stop:
			return
		case <-w.ready:
		}
	}
}

// signal wakes up to n idle workers.
func (w *Deliverer) signal(n int) {
	for range min(n, w.workers) {
		select {
		case w.ready <- struct{}{}:
		default:
			return // as many signals wait as there are workers
		}
	}
}

// dispatch is one pass of the dispatcher: it reads the outbox into the
// queue when the outbox is dirty and says how long to wait before the
// next pass.
func (w *Deliverer) dispatch(ctx context.Context) (wait time.Duration) {
	w.mu.Lock()
	dirty := w.dirty
	w.mu.Unlock()
	if !dirty {
		return w.idle() // an endpoint's room, a record or Notify wakes us sooner
	}
	now := time.Now()
	if !w.read(ctx, now) {
		return webhookIdle
	}
	w.mu.Lock()
	dirty = w.dirty
	w.mu.Unlock()
	if dirty {
		return 0
	}
	w.nextDue = time.Time{}
	if t, ok, err := w.outbox.NextMessageDue(ctx, now); err == nil && ok {
		w.nextDue = t
	}
	return w.idle()
}

// idle is how long the dispatcher may sleep: until the next message comes
// due, at most webhookIdle.
func (w *Deliverer) idle() time.Duration {
	if w.nextDue.IsZero() {
		return webhookIdle
	}
	return min(webhookIdle, max(time.Until(w.nextDue), time.Millisecond))
}

// readAhead is how many messages a read takes per worker (and per
// message of an endpoint's share): enough that one read feeds the workers
// for a while, few enough that a read stays small.
const readAhead = 16

// read forgets the messages whose attempts were recorded before it began
// (it sees their records) and adds to the queue the messages due at now,
// none of an endpoint with its share under way. The queued messages of
// such an endpoint are kept while they are fresh (read within
// webhookIdle), so the endpoint's next attempts need no read; older ones
// are given back, so a change the outbox holds (an endpoint disabled) is
// seen. ok is false, and nothing read, while too many attempts wait for
// their record or the queue still holds over half of queueCap for
// endpoints with room.
func (w *Deliverer) read(ctx context.Context, now time.Time) (ok bool) {
	w.mu.Lock()
	busy := 0
	for seq, f := range w.inflight {
		if f.recorded {
			delete(w.inflight, seq) // recorded before this read: it sees the record
		} else {
			busy++
		}
	}
	full := w.endpointsFull()
	if busy >= maxUnrecorded*w.workers {
		w.paused = true
		w.mu.Unlock()
		return false // the recorder's next batch wakes us
	}
	if w.handable() > w.queueCap()/2 {
		w.mu.Unlock()
		return false // enough queued: the next read waits until half is taken
	}
	w.dirty, w.paused = false, false
	var stale []int64
	kept := w.queue[:0]
	for _, q := range w.queue {
		if now.Sub(q.readAt) < webhookIdle {
			kept = append(kept, q)
		} else {
			stale = append(stale, q.Seq)
		}
	}
	w.queue = kept
	ahead := busy + len(kept) // on SQLite, which does not lease them, these come first and are passed over
	room := w.queueCap() - w.handable()
	w.mu.Unlock()
	w.atShare.Set(float64(len(full)))
	w.release(stale)
	msgs, err := w.outbox.DueMessages(ctx, now, ahead+room, ahead+min(room, readAhead*w.maxInFlight), full)
	if err != nil && ctx.Err() == nil {
		w.log.Error("webhooks: reading the outbox", "err", err)
	}
	var again []int64 // under way already: given back, as not tried now
	added := 0
	w.mu.Lock()
	isQueued := make(map[int64]bool, len(w.queue))
	for _, q := range w.queue {
		isQueued[q.Seq] = true
	}
	for _, m := range msgs {
		switch _, busy := w.inflight[m.Seq]; {
		case busy:
			again = append(again, m.Seq)
		case !isQueued[m.Seq]:
			w.queue = append(w.queue, queued{m, now})
			added++
		}
	}
	w.mu.Unlock()
	w.signal(added)
	w.release(again)
	return true
}

// queueCap bounds the queued messages whose endpoints have room: a read
// takes up to readAhead a worker.
func (w *Deliverer) queueCap() int { return readAhead * w.workers }

// handable counts the queued messages whose endpoints have room. The
// caller holds w.mu.
func (w *Deliverer) handable() int {
	n := 0
	for _, q := range w.queue {
		if w.sending[q.EndpointID] < w.maxInFlight {
			n++
		}
	}
	return n
}

// next takes out of the queue the first message whose endpoint has room
// and holds it as being sent. The caller holds w.mu.
func (w *Deliverer) next() (domain.OutMessage, bool) {
	for i, q := range w.queue {
		if w.sending[q.EndpointID] >= w.maxInFlight {
			continue
		}
		w.queue = slices.Delete(w.queue, i, i+1)
		w.inflight[q.Seq] = flight{endpoint: q.EndpointID, onWire: true}
		w.sending[q.EndpointID]++
		return q.OutMessage, true
	}
	return domain.OutMessage{}, false
}

// dropQueued takes an endpoint's messages out of the queue (it was just
// disabled) and returns them. The caller holds w.mu.
func (w *Deliverer) dropQueued(endpoint string) []int64 {
	var seqs []int64
	w.queue = slices.DeleteFunc(w.queue, func(q queued) bool {
		if q.EndpointID == endpoint {
			seqs = append(seqs, q.Seq)
			return true
		}
		return false
	})
	return seqs
}

// queuedOf counts the queued messages of endpoint. The caller holds w.mu.
func (w *Deliverer) queuedOf(endpoint string) int {
	n := 0
	for _, q := range w.queue {
		if q.EndpointID == endpoint {
			n++
		}
	}
	return n
}

// flight is a message of inflight: its endpoint, whether its attempt is on
// the wire (counted in its endpoint's share), and whether it is recorded.
type flight struct {
	endpoint string
	onWire   bool
	recorded bool
}

// offWire marks a held message's attempt as answered (or given up): its
// endpoint's share is free again, though the attempt may still be being
// recorded. The caller holds w.mu.
func (w *Deliverer) offWire(seq int64) {
	f, ok := w.inflight[seq]
	if !ok || !f.onWire {
		return
	}
	f.onWire = false
	w.inflight[seq] = f
	if w.sending[f.endpoint]--; w.sending[f.endpoint] <= 0 {
		delete(w.sending, f.endpoint)
	}
}

// recorded marks a held message's attempt as stored; it stays in inflight
// until the next outbox read, which sees the record. The caller holds w.mu.
func (w *Deliverer) recorded(seq int64) {
	w.offWire(seq)
	if f, ok := w.inflight[seq]; ok {
		f.recorded = true
		w.inflight[seq] = f
	}
}

// forget drops a held message that was not sent. The caller holds w.mu.
func (w *Deliverer) forget(seq int64) {
	w.offWire(seq)
	delete(w.inflight, seq)
}

// endpointsFull are the endpoints with their share under way, which the
// next outbox read leaves out. The caller holds w.mu.
func (w *Deliverer) endpointsFull() []string {
	full := []string{}
	for endpoint, n := range w.sending {
		if n >= w.maxInFlight {
			full = append(full, endpoint)
		}
	}
	return full
}

// release gives messages back to the outbox (Outbox.ReleaseMessages), due
// again at once; a failure only delays them until their lease runs out.
func (w *Deliverer) release(seqs []int64) {
	if len(seqs) == 0 {
		return
	}
	if err := w.outbox.ReleaseMessages(context.Background(), seqs); err != nil {
		w.log.Warn("webhooks: giving messages back to the outbox; they wait for their lease to run out", "messages", len(seqs), "err", err)
	}
}

// maxUnrecorded bounds, per worker, the messages sent whose attempt is
// still being recorded: past it the outbox is not read until the recorder
// catches up.
const maxUnrecorded = 8

// deliver makes one attempt at m and has it recorded. The worker does not
// wait for the record's commit: attempts of many workers then share one
// batch of the recorder, and a crash before it only means the message is
// sent again.
func (w *Deliverer) deliver(ctx context.Context, m domain.OutMessage) {
	start := time.Now()
	status, retryAfter, err := w.attempt(ctx, m, start)
	if err != nil && ctx.Err() != nil {
		w.abandoned.Add(1)
		w.release([]int64{m.Seq})
		w.finished(m.Seq)
		return // stopping: not the receiver's fault, try again after the next Start
	}
	a := w.outcome(m, start, time.Now(), status, retryAfter, err)
	// The endpoint may take its next message while this attempt is
	// recorded: a queued one, or one the next read finds.
	w.mu.Lock()
	w.offWire(m.Seq)
	var drop []int64
	if a.DisableEndpoint {
		drop = w.dropQueued(m.EndpointID) // its messages wait until it is enabled again
	}
	w.dirty = w.dirty || w.queuedOf(m.EndpointID) < w.maxInFlight // read its next messages before the workers run out
	read := w.dirty && w.handable() <= w.queueCap()/2
	w.recs = append(w.recs, a)
	w.mu.Unlock()
	w.release(drop)
	w.signal(1)
	if read {
		w.poke()
	}
	select {
	case w.recWake <- struct{}{}:
	default:
	}
}

// attempt is the status of one attempt at m, and any Retry-After: a fault
// rule's, with nothing sent, or the receiver's.
func (w *Deliverer) attempt(ctx context.Context, m domain.OutMessage, at time.Time) (int, time.Duration, error) {
	if w.faults != nil {
		if status, forced := w.faults.BeforeSend(m.EndpointID); forced {
			return status, 0, nil
		}
	}
	return w.send(ctx, m, at)
}

// outcome is the record of an attempt at m begun at start and ended at now
// with status (or err): the message delivered, dead, or pending until its
// next try.
func (w *Deliverer) outcome(m domain.OutMessage, start, now time.Time, status int, retryAfter time.Duration, err error) domain.DeliveryAttempt {
	a := domain.DeliveryAttempt{Seq: m.Seq, EndpointID: m.EndpointID, Status: status, Latency: now.Sub(start), At: now,
		State: domain.MessagePending, Tries: m.Tries + 1, NextTryAt: now}
	switch {
	case err != nil:
		a.Error = err.Error()
	case status >= 200 && status < 300:
		a.State, a.Tries = domain.MessageDelivered, m.Tries
	case status == http.StatusGone:
		a.State, a.DisableEndpoint = domain.MessageDead, true
		a.Error = "410 Gone: endpoint disabled"
	default:
		a.Error = "HTTP " + strconv.Itoa(status)
	}
	if a.State == domain.MessagePending {
		if a.Tries >= len(w.schedule) {
			a.State = domain.MessageDead
		} else if retryAfter > 0 {
			a.NextTryAt = now.Add(min(retryAfter, maxRetryAfter))
		} else {
			d := w.schedule[a.Tries]
			a.NextTryAt = now.Add(d + rand.N(d/10+1)) // up to 10% jitter so retries spread out
		}
	}
	return a
}

// recorder stores the attempts made, in batches: all those waiting, in
// one commit, while the next batch gathers. At stop it stores what is left
// and closes done.
func (w *Deliverer) recorder(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case <-w.recWake:
			w.flush()
		case <-stop:
			w.flush()
			return
		}
	}
}

// flush stores the attempts waiting until none is left, and wakes the
// dispatcher, which may have stopped reading for want of records or have a
// retry to wait for.
func (w *Deliverer) flush() {
	for {
		w.mu.Lock()
		batch := w.recs
		w.recs = nil
		w.mu.Unlock()
		if len(batch) == 0 {
			return
		}
		if err := w.outbox.RecordAttempts(context.Background(), batch); err != nil {
			w.log.Error("webhooks: recording attempts; their messages will be sent again", "attempts", len(batch), "err", err)
		}
		w.mu.Lock()
		for _, a := range batch {
			w.recorded(a.Seq)
			// A retry's time may come before the dispatcher's next look.
			w.dirty = w.dirty || a.State == domain.MessagePending
		}
		w.dirty = w.dirty || w.paused
		w.mu.Unlock()
		w.poke()
	}
}

// finished marks the attempt at a held message as given up and wakes the
// dispatcher.
func (w *Deliverer) finished(seq int64) {
	w.mu.Lock()
	w.recorded(seq)
	w.dirty = true
	w.mu.Unlock()
	w.poke()
}

// send posts m once, signed, and returns the status and any Retry-After of
// a 429 or 503.
func (w *Deliverer) send(ctx context.Context, m domain.OutMessage, at time.Time) (int, time.Duration, error) {
	signer, err := standardwebhooks.NewWebhook(m.Secret)
	if err != nil {
		return 0, 0, fmt.Errorf("endpoint secret: %w", err)
	}
	sig, err := signer.Sign(m.ID, at, m.Payload)
	if err != nil {
		return 0, 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	target := m.URL
	if strings.HasPrefix(target, domain.LocalSinkPrefix) {
		target = w.selfURL + target
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(m.Payload))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", w.userAgent)
	req.Header.Set(standardwebhooks.HeaderWebhookID, m.ID)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(at.Unix(), 10))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
	resp, err := w.client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	var retryAfter time.Duration
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return resp.StatusCode, retryAfter, nil
}

// parseRetryAfter reads delay-seconds or an HTTP date; 0 when absent or bad.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
