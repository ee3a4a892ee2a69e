package main

// The crash loop: the real binary, with concurrent imports and the engine
// and webhook delivery busy, is killed with SIGKILL at random moments many
// times. At the end every acknowledged contact exists, no call is charged
// twice, every contact reaches a final state and every event is delivered.

import (
	"context"
	"dialbox/internal/recordings"
	"dialbox/internal/store"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestCrashLoop(t *testing.T) {
	const kills = 20
	bin := dialboxBinary(t)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, seed))
	t.Logf("kill moments seeded with %d", seed)
	rcv := newWHReceiver(t)
	const balance = 1_000_000_000
	config, url, db := busyTenant{apiKey: "loop-key", apiSecret: "loop-secret", balance: balance, hotlines: 40,
		reCallDelay: 30, webhook: rcv.URL(), timeScale: 1000,
		retrySchedule: `["0s", "20ms", "50ms", "100ms", "200ms", "500ms", "1s", "1s", "1s", "1s", "1s", "1s"]`}.write(t, t.TempDir())
	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"apiKey": "loop-key"}).SignedString([]byte("loop-secret"))
	if err != nil {
		t.Fatal(err)
	}

	var (
		mu    sync.Mutex
		acked = map[string]bool{}
		seq   atomic.Int64
	)
	client := &http.Client{Timeout: 30 * time.Second}
	// At most 4 x 5 requests of 10 contacts a round keeps the final drain
	// (every call, retry and event) bounded however fast imports run.
	importUntil := func(ctx context.Context) {
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 5 {
					if ctx.Err() != nil {
						return
					}
					var contacts []string
					for range 10 {
						contacts = append(contacts, fmt.Sprintf(`{"phone_number":"0914%06d","ho_ten":"loop"}`, seq.Add(1)))
					}
					req, _ := http.NewRequestWithContext(ctx, "POST", url+"/api/v1/public-api/scenarios/sc/calls",
						strings.NewReader(`{"contacts":[`+strings.Join(contacts, ",")+`]}`))
					req.Header.Set("Authorization", "Bearer "+token)
					resp, err := client.Do(req)
					if err != nil {
						return // killed under us
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					var out struct {
						Status int
						Result []map[string]string
					}
					if resp.StatusCode != 200 || json.Unmarshal(body, &out) != nil || out.Status != 1 {
						continue // not an acknowledgement
					}
					mu.Lock()
					for _, c := range out.Result {
						acked[c["contact_id"]] = true
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}

	for round := range kills {
		p := engRunBinary(t, bin, config, url)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { importUntil(ctx); close(done) }()
		time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond)
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.exited
		cancel()
		<-done
		if round == 0 || round == kills-1 {
			mu.Lock()
			t.Logf("kill %d: %d contacts acknowledged, %d events received", round+1, len(acked), rcv.count())
			mu.Unlock()
		}
	}

	s, err := store.OpenSQLite(db, sqliteMigrations(), store.NewMetrics(false), recordings.Files{})
	if err != nil {
		t.Fatal(err)
	}
	opened(t, s, db)
	defer s.Close()
	last := engRunBinary(t, bin, config, url)
	waitFor(t, "every contact done and every message delivered", func() bool {
		return queryInt(t, s, `SELECT count(*) FROM contacts WHERE state <> 'done'`) == 0 &&
			queryInt(t, s, `SELECT count(*) FROM webhook_messages WHERE state <> 'delivered'`) == 0
	})
	if err := last.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-last.exited

	app, err := s.AppByKey(context.Background(), "loop-key")
	if err != nil {
		t.Fatal(err)
	}
	stored := contactIDs(t, s, app.ID)
	lost := 0
	for id := range acked {
		if !stored[id] {
			lost++
		}
	}
	if lost > 0 || len(acked) == 0 {
		t.Errorf("%d of %d acknowledged contacts lost", lost, len(acked))
	}
	if n := queryInt(t, s, `SELECT count(*) FROM calls WHERE state = 'dialing'`); n != 0 {
		t.Errorf("%d calls left dialing", n)
	}
	var spent int64
	if err := sqliteDB(t, s).QueryRow(`SELECT coalesce(sum(cost), 0) FROM calls`).Scan(&spent); err != nil {
		t.Fatal(err)
	}
	if w, _ := s.Wallet(context.Background(), app.ID); w.Balance != balance-spent {
		t.Errorf("balance %d, want %d - %d charged for the recorded calls: some call was charged twice or not at all",
			w.Balance, balance, spent)
	}
	calls := queryInt(t, s, `SELECT count(*) FROM calls`)
	contacts := queryInt(t, s, `SELECT count(*) FROM contacts`)
	messages := queryInt(t, s, `SELECT count(*) FROM webhook_messages`)
	if messages != calls+contacts {
		t.Errorf("%d messages for %d calls and %d contacts, want one per call and one per contact", messages, calls, contacts)
	}
	rows, err := sqliteDB(t, s).Query(`SELECT id FROM webhook_messages`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	missing := 0
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		if _, ok := rcv.events[id]; !ok {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d messages never reached the receiver", missing, messages)
	}
	if len(rcv.bad) > 0 {
		t.Errorf("deliveries that failed verification: %v", rcv.bad[:min(5, len(rcv.bad))])
	}
	t.Logf("%d kills: %d contacts acknowledged (%d stored), %d calls, %d messages, all delivered",
		kills, len(acked), len(stored), calls, messages)
}
