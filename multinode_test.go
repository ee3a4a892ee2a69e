package main

// The multi-node test (docs/postgres.md#the-multi-node-test): three real
// dialbox processes on one PostgreSQL database, one of them SIGKILLed in
// the middle of the run and started again, and every promise of several
// nodes checked from what they left in the database and what a webhook
// receiver got.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"dialbox/internal/domain"
	"dialbox/internal/pgtest"
	"dialbox/internal/store"
	"dialbox/internal/testtool"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// mnNode is one dialbox process of the multi-node test.
type mnNode struct {
	config, url string
	proc        *binaryProc
}

func TestMultiNode(t *testing.T) {
	db := pgtest.Database(t)
	bin := dialboxBinary(t)
	const (
		contacts      = 20_000
		batch         = 250
		maxConcurrent = 150
		hotlines      = 300
		balance       = int64(1_000_000_000_000)
	)
	dir := t.TempDir()
	rcv := newWHReceiver(t)
	var numbers []string
	for i := range hotlines {
		numbers = append(numbers, fmt.Sprintf(`"02874%06d"`, i))
	}
	// Busy and unanswered calls are tried once more, so contacts have
	// several attempts; RANDOM routing keeps the nodes from all reaching
	// for the same first hotlines.
	fixtures := filepath.Join(dir, "fixtures.toml")
	writeTestFile(t, fixtures, fmt.Sprintf(`
[[applications]]
name = "multi"
api_key = "multi-key"
api_secret = "multi-secret"
  [applications.wallet]
  prepaid = true
  balance = %d
  expires_at = 2099-01-01T00:00:00Z
  price_per_call = 1000
  price_per_minute = 800
  [[applications.hotline_pools]]
  key = "POOL"
  numbers = [%s]
  [[applications.scenarios]]
  id = "sc"
  status = "ACTIVE"
  content = "hello"
    [applications.scenarios.call_config]
    pool_hotline_key = "POOL"
    call_routing = "RANDOM"
    max_concurrent = %d
    [applications.scenarios.call_config.re_call]
    times = 1
    delay = 1
    is_busy = true
    is_no_answer = true
    [applications.scenarios.call_config.call_window]
    start = "00:00"
    end = "24:00"
    timezone = "Asia/Ho_Chi_Minh"
  [[applications.webhooks]]
  url = %q
  secret = %q
`, balance, strings.Join(numbers, ", "), maxConcurrent, rcv.URL(), whSecret))
	var nodes [3]*mnNode
	for i := range nodes {
		// A lease of 2 s: the killed node's calls and messages are taken
		// over within seconds, not the default 30 s.
		nodes[i] = mnStartNode(t, bin, dir, db, fixtures, i, fmt.Sprintf(`
[engine]
poll_interval = "20ms"
[simulator]
time_scale = 2000.0
[webhooks]
workers = 4
retry_schedule = ["0s", "50ms", "100ms", "200ms", "500ms", "1s", "1s", "1s"]
[recordings]
dir = %q
[log]
level = "warn"
`, filepath.Join(dir, "recordings")))
	}
	pool, err := pgxpool.New(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	count := func(query string, args ...any) int {
		t.Helper()
		var n int
		if err := pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		return n
	}

	// Clients import 20,000 contacts in batches, spread over the nodes; a
	// batch a node does not answer (it is dead) goes to the next one, as a
	// load balancer would send it.
	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"apiKey": "multi-key"}).SignedString([]byte("multi-secret"))
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	var (
		ackMu    sync.Mutex
		acked    []string // contact ids of acknowledged contacts
		ackCount atomic.Int64
		clients  sync.WaitGroup
	)
	batches := make(chan int)
	for range 4 {
		clients.Go(func() {
			for b := range batches {
				ids, err := mnImport(nodes, b, batch, token)
				if err != nil {
					t.Error(err)
					continue
				}
				ackMu.Lock()
				acked = append(acked, ids...)
				ackMu.Unlock()
				ackCount.Add(int64(len(ids)))
			}
		})
	}
	go func() {
		for b := range contacts / batch {
			batches <- b
		}
		close(batches)
	}()

	// The kill: with imports under way and calls up everywhere.
	testtool.WaitFor(t, "40% of the contacts acknowledged and calls reported", time.Minute, func() bool {
		return ackCount.Load() >= contacts*4/10 && rcv.count() >= 1000
	})
	victim := nodes[1]
	victimID := mnNodeID(t, victim.url)
	// Its calls end while the test looks, and under load all of them could
	// between a look and the kill: freeze the node (SIGSTOP), let a
	// statement it sent finish, and kill it only with calls still up;
	// otherwise let it go on and look again.
	dialing := func() int {
		return count(`SELECT count(*) FROM contacts WHERE state = 'dialing' AND lease_node = $1`, victimID)
	}
	testtool.WaitFor(t, "calls up on the node to kill, frozen", time.Minute, func() bool {
		if dialing() < 3 {
			return false
		}
		if err := victim.proc.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		// A statement whose answer waits on the frozen node (Client) has
		// done its work; one waiting on a lock (Lock) may wait on the
		// frozen node's own open transaction, and either way cannot
		// commit until the node, frozen, sends its COMMIT.
		testtool.WaitFor(t, "the frozen node's statements to finish", time.Minute, func() bool {
			return count(`SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND state = 'active'
				AND wait_event_type IS DISTINCT FROM 'Client' AND wait_event_type IS DISTINCT FROM 'Lock'`, "dialbox "+victimID) == 0
		})
		if dialing() > 0 {
			return true
		}
		if err := victim.proc.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		return false
	})
	if err := victim.proc.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-victim.proc.exited
	// A commit the node sent before it died may still be finishing on the
	// server: its connections' backends are gone once it has.
	testtool.WaitFor(t, "the killed node's connections to end", time.Minute, func() bool {
		return count(`SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, "dialbox "+victimID) == 0
	})
	callsUp := dialing()
	messagesHeld := count(`SELECT count(*) FROM webhook_messages WHERE lease_node = $1`, victimID)
	t.Logf("%v: SIGKILL %s with %d calls up and %d messages held; %d contacts acknowledged, %d events received",
		time.Since(begin).Round(time.Millisecond), victimID, callsUp, messagesHeld, ackCount.Load(), rcv.count())
	if callsUp == 0 {
		t.Fatalf("the kill did not land mid-run: %s had no call up", victimID)
	}
	testtool.WaitFor(t, "70% of the contacts acknowledged", time.Minute, func() bool { return ackCount.Load() >= contacts*7/10 })
	victim.proc = engRunBinary(t, bin, victim.config, victim.url)
	t.Logf("%v: %s started again as %s", time.Since(begin).Round(time.Millisecond), victimID, mnNodeID(t, victim.url))
	clients.Wait()
	t.Logf("%v: %d contacts acknowledged", time.Since(begin).Round(time.Millisecond), ackCount.Load())

	// Settled: every contact done, every message delivered and received.
	// Should it not come, the calls recorded so far are still checked.
	settled := mnPoll(3*time.Minute, func() bool {
		return count(`SELECT count(*) FROM contacts WHERE state <> 'done'`) == 0 &&
			count(`SELECT count(*) FROM webhook_messages WHERE state <> 'delivered'`) == 0 &&
			rcv.count() == count(`SELECT count(*) FROM webhook_messages`)
	})
	t.Logf("%v: settled: %v", time.Since(begin).Round(time.Millisecond), settled)

	// No attempt dialled twice: a contact's calls are its attempts, one
	// call each, one after the other (never two up at once).
	type call struct {
		id, hotline, outcome string
		contact              int64
		attempt              int
		start, end, cost     int64
	}
	var calls []call
	mnRows(t, pool, `SELECT id, contact_seq, attempt, hotline, coalesce(outcome, ''), started_at, coalesce(ended_at, 0), cost
		FROM calls ORDER BY contact_seq, attempt`, func(scan func(...any) error) {
		var c call
		mnScan(t, scan, &c.id, &c.contact, &c.attempt, &c.hotline, &c.outcome, &c.start, &c.end, &c.cost)
		calls = append(calls, c)
	})
	attempts := map[int64]int{}
	mnRows(t, pool, `SELECT seq, attempts FROM contacts`, func(scan func(...any) error) {
		var seq int64
		var n int
		mnScan(t, scan, &seq, &n)
		attempts[seq] = n
	})
	doubles := 0
	for i, c := range calls {
		if c.end == 0 && !settled {
			c.end = math.MaxInt64 // still up
			calls[i].end = c.end
		}
		if c.end == 0 || c.end < c.start {
			t.Errorf("call %s: started %d, ended %d", c.id, c.start, c.end)
		}
		if i == 0 || calls[i-1].contact != c.contact {
			if c.attempt != 1 {
				t.Errorf("contact %d: first call is attempt %d", c.contact, c.attempt)
			}
			continue
		}
		prev := calls[i-1]
		if c.attempt != prev.attempt+1 || c.start < prev.end {
			doubles++
			if doubles <= 5 {
				t.Errorf("contact %d dialled twice: attempt %d [%d, %d) then attempt %d [%d, %d)",
					c.contact, prev.attempt, prev.start, prev.end, c.attempt, c.start, c.end)
			}
		}
	}
	perContact := map[int64]int{}
	for _, c := range calls {
		perContact[c.contact]++
	}
	for seq, n := range attempts {
		if perContact[seq] != n && settled {
			t.Errorf("contact %d: %d attempts, %d calls", seq, n, perContact[seq])
		}
	}
	if doubles > 0 {
		t.Errorf("%d attempts dialled while the contact's previous call was up, or numbered twice", doubles)
	}

	// max_concurrent never exceeded, and a hotline never carried two calls
	// at once: a sweep over every call's [start, end), ends first at a tie.
	type edge struct {
		at    int64
		delta int
	}
	var edges []edge
	perHotline := map[string][]edge{}
	for _, c := range calls {
		edges = append(edges, edge{c.start, 1}, edge{c.end, -1})
		perHotline[c.hotline] = append(perHotline[c.hotline], edge{c.start, 1}, edge{c.end, -1})
	}
	sweep := func(list []edge) (peak int, at int64) {
		slices.SortFunc(list, func(a, b edge) int {
			if a.at != b.at {
				return int(a.at - b.at)
			}
			return a.delta - b.delta
		})
		up := 0
		for _, e := range list {
			if up += e.delta; up > peak {
				peak, at = up, e.at
			}
		}
		return peak, at
	}
	peak, at := sweep(edges)
	if peak > maxConcurrent {
		t.Errorf("%d calls up at once at %s, over max_concurrent %d", peak, store.FromMillis(at).Format(time.RFC3339Nano), maxConcurrent)
	}
	for hotline, list := range perHotline {
		if n, at := sweep(list); n > 1 {
			t.Errorf("hotline %s carried %d calls at once at %s", hotline, n, store.FromMillis(at).Format(time.RFC3339Nano))
		}
	}

	if !settled {
		t.Fatalf("not settled within 3 minutes: %d contacts not done, %d messages not delivered",
			count(`SELECT count(*) FROM contacts WHERE state <> 'done'`), count(`SELECT count(*) FROM webhook_messages WHERE state <> 'delivered'`))
	}

	// Every acknowledged contact stored.
	stored := map[string]bool{}
	mnRows(t, pool, `SELECT id FROM contacts`, func(scan func(...any) error) {
		var id string
		mnScan(t, scan, &id)
		stored[id] = true
	})
	missing := 0
	for _, id := range acked {
		if !stored[id] {
			missing++
		}
	}
	// Every phone is stored: a batch the killed node committed without
	// answering is refused as duplicates where it is sent again, so its
	// contacts are stored but acknowledged by no one.
	if phones := count(`SELECT count(DISTINCT phone) FROM contacts`); missing > 0 || phones != contacts {
		t.Errorf("%d of %d acknowledged contacts not stored; %d phones of %d stored", missing, len(acked), phones, contacts)
	}

	// Every event delivered, one webhook-id per event: the receiver holds
	// each message's id (a redelivery repeats an id, never makes a new
	// one), one call.completed per call and one contact.completed per
	// contact.
	var messageIDs []string
	mnRows(t, pool, `SELECT id FROM webhook_messages`, func(scan func(...any) error) {
		var id string
		mnScan(t, scan, &id)
		messageIDs = append(messageIDs, id)
	})
	received := rcv.all()
	byID := map[string]bool{}
	for _, ev := range received {
		byID[ev.WebhookID] = true
	}
	for _, id := range messageIDs {
		if !byID[id] {
			t.Errorf("message %s never reached the receiver", id)
		}
	}
	if len(received) != len(messageIDs) || len(messageIDs) != len(calls)+len(attempts) {
		t.Errorf("%d distinct webhook-ids received, %d messages, for %d calls and %d contacts", len(received), len(messageIDs), len(calls), len(attempts))
	}
	callEvents, contactEvents := map[string]int{}, map[string]int{}
	for _, ev := range received {
		var d struct {
			ContactID string `json:"contact_id"`
			CallID    string `json:"call_id"`
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatalf("event %s: %v", ev.WebhookID, err)
		}
		switch ev.Type {
		case domain.EventCallCompleted:
			callEvents[d.CallID]++
		case domain.EventContactCompleted:
			contactEvents[d.ContactID]++
		}
	}
	for _, c := range calls {
		if callEvents[c.id] != 1 {
			t.Errorf("call %s reported %d times", c.id, callEvents[c.id])
		}
	}
	for id := range stored {
		if contactEvents[id] != 1 {
			t.Errorf("contact %s reported done %d times", id, contactEvents[id])
		}
	}
	if bad := rcv.failures(); len(bad) > 0 {
		t.Errorf("deliveries that failed verification: %v", bad[:min(len(bad), 5)])
	}
	redelivered := 0
	rcv.mu.Lock()
	for _, n := range rcv.seen {
		if n > 1 {
			redelivered++
		}
	}
	rcv.mu.Unlock()

	// The wallet holds what it started with less the recorded costs.
	var spent int64
	canceled := 0
	for _, c := range calls {
		spent += c.cost
		if c.outcome == domain.OutcomeCanceled {
			canceled++
		}
	}
	if got := int64(count(`SELECT balance FROM wallets`)); got != balance-spent {
		t.Errorf("balance %d, want %d - %d charged for the recorded calls", got, balance, spent)
	}

	// Each node dialled, and the nodes that took over the killed one's
	// calls counted them: every CANCELED call is one of those.
	takeovers := 0.0
	for i, n := range nodes {
		samples := scrapeMetrics(t, n.url+"/metrics")
		taken, _ := metricValue(samples, "dialbox_call_claims_total", "result", "taken")
		refused, _ := metricValue(samples, "dialbox_call_claims_total", "result", "refused")
		calls, _ := metricValue(samples, "dialbox_lease_takeovers_total", "kind", "call")
		messages, _ := metricValue(samples, "dialbox_lease_takeovers_total", "kind", "message")
		t.Logf("node %d: claims taken %v, refused %v; took over %v calls, %v messages", i, taken, refused, calls, messages)
		if taken == 0 {
			t.Errorf("node %d dialled nothing", i)
		}
		takeovers += calls
	}
	if int(takeovers) != canceled || canceled < callsUp {
		t.Errorf("%v calls taken over, %d CANCELED, %d up on the killed node", takeovers, canceled, callsUp)
	}
	t.Logf("%v: %d contacts, %d calls (%d CANCELED by the kill), peak %d calls up, %d messages (%d sent more than once), %d VND charged",
		time.Since(begin).Round(time.Millisecond), len(stored), len(calls), canceled, peak, len(messageIDs), redelivered, spent)
}

// mnStartNode starts node i of a cluster on database db: a config in dir
// listening on a free port, with the fixtures, cluster.node_name "node<i>"
// and a lease of 2 s, then the TOML tables of extra.
func mnStartNode(t *testing.T, bin, dir, db, fixtures string, i int, extra string) *mnNode {
	t.Helper()
	addr := freeAddr(t)
	n := &mnNode{config: filepath.Join(dir, fmt.Sprintf("node%d.toml", i)), url: "http://" + addr}
	writeTestFile(t, n.config, fmt.Sprintf(`
listen = %q
database = %q
fixtures = %q
[cluster]
node_name = "node%d"
lease = "2s"
`, addr, db, fixtures, i)+extra)
	n.proc = engRunBinary(t, bin, n.config, n.url)
	return n
}

// mnImport sends batch b of contacts to the nodes in turn from node b%3
// until one answers, and returns the ids of the contacts it added. A
// batch the answering node finds already stored (a dead node committed it
// without answering) adds nothing: 1403, every contact a duplicate.
func mnImport(nodes [3]*mnNode, b, size int, token string) ([]string, error) {
	var contacts []string
	for i := range size {
		contacts = append(contacts, fmt.Sprintf(`{"phone_number":"0915%06d"}`, b*size+i))
	}
	body := `{"contacts":[` + strings.Join(contacts, ",") + `]}`
	var last string
	for try := range 6 {
		n := nodes[(b+try)%len(nodes)]
		req, _ := http.NewRequest("POST", n.url+"/api/v1/public-api/scenarios/sc/calls", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			last = err.Error()
			continue
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var answer struct {
			Status int `json:"status"`
			Code   int `json:"code"`
			Result []struct {
				ContactID string `json:"contact_id"`
			} `json:"result"`
		}
		if json.Unmarshal(data, &answer) != nil {
			last = fmt.Sprintf("%d %s", resp.StatusCode, data)
			continue
		}
		switch {
		case answer.Status == 1:
			ids := make([]string, len(answer.Result))
			for i, r := range answer.Result {
				ids[i] = r.ContactID
			}
			return ids, nil
		case answer.Code == 1403:
			return nil, nil
		}
		last = fmt.Sprintf("%d %s", resp.StatusCode, data)
	}
	return nil, fmt.Errorf("batch %d: no node took it: %s", b, last)
}

// mnNodeID is the node id a dialbox's /metrics shows.
func mnNodeID(t *testing.T, url string) string {
	t.Helper()
	samples := scrapeMetrics(t, url+"/metrics")["dialbox_node_info"]
	if len(samples) != 1 {
		t.Fatalf("%s: dialbox_node_info %v", url, samples)
	}
	return string(samples[0].Metric["node"])
}

// mnPoll polls cond until it holds (true) or limit passes (false).
func mnPoll(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

func mnRows(t *testing.T, pool *pgxpool.Pool, query string, row func(scan func(...any) error)) {
	t.Helper()
	rows, err := pool.Query(context.Background(), query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	for rows.Next() {
		row(rows.Scan)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func mnScan(t *testing.T, scan func(...any) error, dest ...any) {
	t.Helper()
	if err := scan(dest...); err != nil {
		t.Fatal(err)
	}
}

func writeTestFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}
