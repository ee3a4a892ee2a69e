package main

// Nothing acknowledged is lost on a crash (docs/design.md#nothing-acknowledged-is-lost): the
// real binary is killed with SIGKILL in the middle of concurrent imports,
// restarted, and every contact_id it answered must be in the database.

import (
	"context"
	"dialbox/internal/recordings"
	"dialbox/internal/store"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestCrashKeepsAcknowledgedContacts(t *testing.T) {
	bin := dialboxBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	db, fx := filepath.Join(dir, "dialbox.db"), filepath.Join(dir, "fixtures.toml")
	if err := os.WriteFile(fx, []byte(testFixtures), 0o600); err != nil {
		t.Fatal(err)
	}

	first := startBinary(t, bin, db, fx)
	token := bearer(t, "qa-key", "qa-secret")
	var (
		mu       sync.Mutex
		acked    = map[string]string{} // contact_id -> phone
		inFlight atomic.Int64
		stop     atomic.Bool
		seq      atomic.Int64
		wg       sync.WaitGroup
	)
	client := &http.Client{Timeout: time.Minute}
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() && ctx.Err() == nil {
				var b strings.Builder
				b.WriteString(`{"contacts":[`)
				for i := 0; i < 50; i++ {
					if i > 0 {
						b.WriteByte(',')
					}
					fmt.Fprintf(&b, `{"phone_number":"097%07d","ho_ten":"crash"}`, seq.Add(1))
				}
				b.WriteString(`]}`)
				req, _ := http.NewRequestWithContext(ctx, "POST", first.url+opA("sc-load"), strings.NewReader(b.String()))
				req.Header.Set("Authorization", token)
				inFlight.Add(1)
				resp, err := client.Do(req)
				if err != nil {
					inFlight.Add(-1)
					return // the server is gone
				}
				var out struct {
					Status int
					Result []map[string]string
				}
				err = json.NewDecoder(resp.Body).Decode(&out)
				resp.Body.Close()
				inFlight.Add(-1)
				// Only a whole success body is an acknowledgement.
				if err != nil || resp.StatusCode != 200 || out.Status != 1 {
					continue
				}
				mu.Lock()
				for _, r := range out.Result {
					acked[r["contact_id"]] = r["so_dien_thoai"]
				}
				mu.Unlock()
			}
		}()
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	waitFor(t, "2000 acknowledged contacts", func() bool { return count() >= 2000 || ctx.Err() != nil })
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Logf("SIGKILL with %d contacts acknowledged and %d requests in flight", count(), inFlight.Load())
	<-first.exited
	stop.Store(true)
	wg.Wait()

	// Restart on the same database and fixtures: it must come up, and its
	// graceful stop must close the database cleanly.
	second := startBinary(t, bin, db, fx)
	status, body := second.do(t, "GET", pathB+"?fields=id&limit=1", token, "")
	if status != 200 {
		t.Fatalf("after restart: HTTP %d %s", status, body)
	}
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-second.exited
	if second.waitErr != nil {
		t.Fatalf("graceful stop: %v\n%s", second.waitErr, second.out.String())
	}

	s, err := store.OpenSQLite(db, sqliteMigrations(), store.NewMetrics(false), recordings.Files{})
	if err != nil {
		t.Fatal(err)
	}
	opened(t, s, db)
	defer s.Close()
	stored := map[string]string{}
	rows, err := sqliteDB(t, s).Query(`SELECT id, phone FROM contacts WHERE scenario_id = 'sc-load'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, phone string
		if err := rows.Scan(&id, &phone); err != nil {
			t.Fatal(err)
		}
		stored[id] = phone
	}
	rows.Close()
	lost := 0
	for id, phone := range acked {
		if stored[id] != phone {
			lost++
			if lost <= 5 {
				t.Errorf("acknowledged contact %s (%s) is not in the database", id, phone)
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged contacts lost", lost, len(acked))
	}
	t.Logf("%d acknowledged, %d stored (the rest were committed but not yet answered)", len(acked), len(stored))
	var check string
	if err := sqliteDB(t, s).QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check after the crash: %q, %v", check, err)
	}
	// The restart re-applied the fixtures without duplicating anything.
	if n := queryInt(t, s, `SELECT count(*) FROM applications`); n != 6 {
		t.Errorf("%d applications after restart, want 6", n)
	}
}

type binaryServer struct {
	testServer
	*binaryProc
}

// startBinary runs `dialbox serve` on a free port and waits until it answers.
func startBinary(t *testing.T, bin, db, fixtures string) *binaryServer {
	t.Helper()
	addr := freeAddr(t)
	url := "http://" + addr
	p := runBinary(t, bin, []string{"serve", "--listen", addr, "--database", db, "--fixtures", fixtures},
		[]string{"DIALBOX_ENGINE_ENABLED=false", "DIALBOX_LIMITS_RATE_PER_SECOND=0"}, url+pathB)
	return &binaryServer{testServer: testServer{url: url, db: db}, binaryProc: p}
}
