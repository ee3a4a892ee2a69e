package main

// Webhook delivery: deliveries/s to a receiver on loopback and the latency
// from a call's end to its delivery.
//
// Three measurements on one dialbox with a webhook endpoint pointing at the
// harness's receiver (in-process net/http on 127.0.0.1, answering 204); the
// simulated dialer (time_scale 1000, every call answered, 1 s ring + 1 s
// talk in simulated time) ends each call within milliseconds:
//   - latency: 50 contacts every 50 ms (1,000 calls/s, 2,000 deliveries/s)
//     for one step; every call.completed is timed from its data.ended_at to
//     its arrival, so the figure is the pipeline's delay, not a queue's;
//   - burst: the -webhook-contacts contacts are imported at once, and the
//     deliveries/s from the first to the last arrival are those of the
//     engine and the delivery together;
//   - drain: dialbox is stopped, every message of the outbox is set pending
//     again (what a bulk redelivery does), dialbox is started again and the
//     backlog is delivered as fast as dialbox can: the delivery rate alone,
//     without the engine in front of it.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// WebhookResult is the webhook measurement.
type WebhookResult struct {
	PacedRate float64 // deliveries/s offered in the latency measurement
	Contacts  int
	Live      int64   // unique deliveries while calls ran
	LiveRate  float64 // deliveries/s, first to last
	// EngineRate is the deliveries/s the engine's calls made due in the
	// burst: twice its calls ended a second (data.ended_at, first to
	// last), the most the delivery could reach.
	EngineRate float64
	// BurstCPU is dialbox's CPU time (user + system) over the burst, from
	// its first request to its last delivery: on a shared machine, CPU per
	// delivery moves less than deliveries/s with the other tenants' load.
	BurstCPU  time.Duration
	BurstWall time.Duration
	P50, P99  time.Duration // call end -> delivery (call.completed)
	Drained   int64
	DrainRate float64 // deliveries/s of the backlog
	LiveDups  int64   // deliveries of a webhook-id already received
	DrainDups int64
}

// receiver counts webhook deliveries.
type receiver struct {
	mu          sync.Mutex
	seen        map[string]bool
	first, last time.Time
	unique      int64
	dups        int64
	lats        []time.Duration
	// ends are the first and last data.ended_at of the calls reported.
	endFirst, endLast time.Time
	calls             int64
	bad               string
}

func (rc *receiver) reset() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.seen, rc.unique, rc.dups, rc.lats = map[string]bool{}, 0, 0, nil
	rc.first, rc.last = time.Time{}, time.Time{}
	rc.endFirst, rc.endLast, rc.calls = time.Time{}, time.Time{}, 0
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var ev struct {
		Type string `json:"type"`
		Data struct {
			EndedAt string `json:"ended_at"`
		} `json:"data"`
	}
	perr := json.Unmarshal(body, &ev)
	id := r.Header.Get("webhook-id")
	rc.mu.Lock()
	if perr != nil && rc.bad == "" {
		rc.bad = "a delivery was not JSON: " + perr.Error()
	}
	if id == "" && rc.bad == "" {
		rc.bad = "a delivery had no webhook-id header"
	}
	if rc.seen[id] {
		rc.dups++
	} else {
		rc.seen[id] = true
		rc.unique++
		if rc.first.IsZero() {
			rc.first = now
		}
		rc.last = now
		if ev.Type == "call.completed" {
			if t, err := time.Parse(time.RFC3339Nano, ev.Data.EndedAt); err == nil {
				rc.lats = append(rc.lats, now.Sub(t))
				rc.calls++
				if rc.endFirst.IsZero() || t.Before(rc.endFirst) {
					rc.endFirst = t
				}
				if t.After(rc.endLast) {
					rc.endLast = t
				}
			}
		}
	}
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) count() int64 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.unique
}

// waitFor waits until the receiver holds want unique deliveries, or no new
// one came for idle, or limit passed.
func (rc *receiver) waitFor(want int64, idle, limit time.Duration) int64 {
	deadline := time.Now().Add(limit)
	last, lastChange := rc.count(), time.Now()
	for time.Now().Before(deadline) {
		n := rc.count()
		if n >= want {
			return n
		}
		if n != last {
			last, lastChange = n, time.Now()
		} else if time.Since(lastChange) > idle {
			return n
		}
		time.Sleep(50 * time.Millisecond)
	}
	return rc.count()
}

// engineRate is twice the calls ended a second, first to last: the
// deliveries/s the engine made due.
func (rc *receiver) engineRate() float64 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	d := rc.endLast.Sub(rc.endFirst)
	if rc.calls < 2 || d <= 0 {
		return 0
	}
	return 2 * float64(rc.calls-1) / d.Seconds()
}

func (rc *receiver) rate() float64 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	d := rc.last.Sub(rc.first)
	if rc.unique < 2 || d <= 0 {
		return 0
	}
	return float64(rc.unique-1) / d.Seconds()
}

// webhookConfig makes every simulated call short and answered.
// webhookConfig lets the one endpoint use every one of the default 8
// workers: it stands for every tenant's endpoints, so the rates measured
// are the delivery's, not one endpoint's share of it
// (docs/webhooks.md#fair-delivery).
func webhookConfig() string {
	var b strings.Builder
	b.WriteString("[webhooks]\nmax_in_flight_per_endpoint = 8\n")
	b.WriteString("[simulator]\ntime_scale = 1000.0\n")
	for d := 0; d <= 9; d++ {
		fmt.Fprintf(&b, "[[simulator.rules]]\nsuffix = \"%d\"\noutcome = \"ANSWERED\"\nring_time = \"1s\"\ntalk_time = \"1s\"\n", d)
	}
	return b.String()
}

func (h *Harness) webhookPhase() {
	if err := h.webhooks(); err != nil {
		h.webhookSkip = "not measured: " + strings.ReplaceAll(firstLine(err.Error()), "|", "/")
		logf("webhooks: %v", err)
	}
}

func (h *Harness) webhooks() error {
	if h.o.hookEvents <= 0 {
		return fmt.Errorf("-webhook-contacts is 0")
	}
	logf("webhooks: latency at a steady rate, a burst, then draining a backlog")
	rc := &receiver{}
	rc.reset()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())
	url := "http://" + ln.Addr().String() + "/hook"

	fixtures := filepath.Join(h.scratch, "fixtures-webhooks.toml")
	config := filepath.Join(h.scratch, "config-webhooks.toml")
	if err := os.WriteFile(fixtures, []byte(fixturesTOML(url, 200, 200)), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(config, []byte(webhookConfig()), 0o644); err != nil {
		return err
	}
	db := filepath.Join(h.scratch, "webhooks.db")
	d, err := h.startDialbox("dialbox-webhooks", db, fixtures, config)
	if err != nil {
		return err
	}
	defer d.Stop(30 * time.Second)

	// Latency: a steady 1,000 contacts/s, well under the capacity.
	rc.reset()
	paced := d.opA(50)
	c, err := dialClient(d.Addr)
	if err != nil {
		return err
	}
	var pacedUnits int64
	tick := time.NewTicker(50 * time.Millisecond)
	start := time.Now()
	for i := 0; time.Since(start) < h.o.dur; i++ {
		<-tick.C
		status, body, _, err := c.Do(paced[i%len(paced)])
		if err != nil {
			tick.Stop()
			c.Close()
			return err
		}
		if n, ok := checkImport(status, body); ok {
			pacedUnits += int64(n)
		}
	}
	tick.Stop()
	c.Close()
	pacedTook := time.Since(start)
	if pacedUnits == 0 {
		return fmt.Errorf("operation A stored nothing")
	}
	if got := rc.waitFor(2*pacedUnits, 20*time.Second, 2*time.Minute); got == 0 {
		return fmt.Errorf("no delivery arrived within 20 s of importing %d contacts (is the engine in this build?)", pacedUnits)
	}
	res := &WebhookResult{PacedRate: float64(2*pacedUnits) / pacedTook.Seconds()}
	rc.mu.Lock()
	slices.Sort(rc.lats)
	if len(rc.lats) > 0 {
		res.P50 = rc.lats[len(rc.lats)/2]
		res.P99 = rc.lats[min(len(rc.lats)-1, len(rc.lats)*99/100)]
	}
	pacedDups := rc.dups
	rc.mu.Unlock()
	logf("  latency at %s deliveries/s: call end -> delivery p50 %s p99 %s", num(res.PacedRate), lat(res.P50), lat(res.P99))

	// Burst: everything at once.
	rc.reset()
	n := h.o.hookEvents
	per := min(1000, n)
	t := Target{Addr: d.Addr, Reqs: d.opA(per), Check: checkImport}
	stopProfile := h.profile(d, "dialbox-webhooks-burst")
	cpu0, start := groupCPU(d.Cmd.Process.Pid), time.Now()
	r, err := Run(t, 4, 2*time.Minute, int64((n+per-1)/per))
	if err != nil {
		return err
	}
	if r.Units == 0 {
		return fmt.Errorf("operation A stored nothing: %s", r.ErrMsg)
	}
	want := 2 * r.Units // call.completed and contact.completed per contact
	got := rc.waitFor(want, 20*time.Second, 3*time.Minute)
	res.BurstCPU, res.BurstWall = groupCPU(d.Cmd.Process.Pid)-cpu0, time.Since(start)
	if stopProfile != nil {
		stopProfile()
	}
	res.Contacts, res.Live, res.LiveRate, res.EngineRate = int(r.Units), got, rc.rate(), rc.engineRate()
	rc.mu.Lock()
	res.LiveDups = rc.dups + pacedDups
	bad := rc.bad
	rc.mu.Unlock()
	logf("  burst: %s of %s deliveries, %s/s; the engine's calls made %s/s due; dialbox's CPU %s ms per 1,000 deliveries",
		num(float64(got)), num(float64(want)), num(res.LiveRate), num(res.EngineRate), num(res.cpuPer1000()))
	h.notePeak(d, "webhook delivery")
	if got < want {
		h.notes = append(h.notes, fmt.Sprintf("Webhooks: only %d of %d deliveries arrived in the live measurement.", got, want))
	}
	if bad != "" {
		h.notes = append(h.notes, "Webhooks: "+bad)
	}

	// Drain: every message pending again, then a restart.
	if err := d.Stop(30 * time.Second); err != nil {
		return fmt.Errorf("stopping dialbox: %w", err)
	}
	queued, err := requeueMessages(db)
	if err != nil {
		return fmt.Errorf("requeueing the outbox: %w", err)
	}
	rc.reset()
	d2, err := h.startDialbox("dialbox-webhooks-drain", db, fixtures, config)
	if err != nil {
		return err
	}
	defer d2.Stop(30 * time.Second)
	stopProfile = h.profile(d2, "dialbox-webhooks-drain")
	drained := rc.waitFor(queued, 20*time.Second, 3*time.Minute)
	if stopProfile != nil {
		stopProfile()
	}
	res.Drained, res.DrainRate = drained, rc.rate()
	rc.mu.Lock()
	res.DrainDups = rc.dups
	rc.mu.Unlock()
	logf("  drain: %s of %s deliveries, %s/s", num(float64(drained)), num(float64(queued)), num(res.DrainRate))
	h.notePeak(d2, "webhook delivery")
	if drained < queued {
		h.notes = append(h.notes, fmt.Sprintf("Webhooks: only %d of %d backlog deliveries arrived.", drained, queued))
	}
	h.webhook = res
	return nil
}

// requeueMessages sets every message of the outbox pending and due now,
// its tries reset, as a bulk redelivery would; it returns how many.
func requeueMessages(dbPath string) (int64, error) {
	db, err := openDB(dbPath)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	cols, err := tableColumns(db, "webhook_messages")
	if err != nil {
		return 0, err
	}
	set := "state = 'pending', next_try_at = 0"
	if slices.Contains(cols, "tries") {
		set += ", tries = 0"
	}
	res, err := db.Exec(`UPDATE webhook_messages SET ` + set)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// cpuPer1000 is dialbox's CPU time in the burst per 1,000 deliveries, in
// milliseconds.
func (r *WebhookResult) cpuPer1000() float64 {
	if r.Live == 0 {
		return 0
	}
	return float64(r.BurstCPU.Milliseconds()) * 1000 / float64(r.Live)
}
