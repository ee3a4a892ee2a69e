package main

import (
	"dialbox/internal/domain"
	"dialbox/internal/recordings"
	"dialbox/internal/store"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

// slowReceiver answers 204, but each request first tells arrived its
// webhook-id and waits for release (or for the test's end).
type slowReceiver struct {
	srv     *httptest.Server
	arrived chan string
	release chan struct{}
	once    sync.Once
}

func newSlowReceiver(t *testing.T) *slowReceiver {
	r := &slowReceiver{arrived: make(chan string, 16), release: make(chan struct{})}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		r.arrived <- req.Header.Get("webhook-id")
		select {
		case <-r.release:
		case <-req.Context().Done():
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	t.Cleanup(r.LetGo) // before Close, which waits for handlers
	return r
}

func (r *slowReceiver) LetGo() { r.once.Do(func() { close(r.release) }) }

// shutdownServer starts dialbox (engine off) on db with one tenant whose
// webhook is url; the test closes it itself.
func shutdownServer(t *testing.T, db, url, grace string) (*Main, int64) {
	t.Helper()
	fx := filepath.Join(filepath.Dir(db), "fixtures.toml")
	if err := os.WriteFile(fx, []byte(fmt.Sprintf(`
[[applications]]
name = "shutdown"
api_key = "sd-key"
api_secret = "sd-secret"
  [[applications.webhooks]]
  url = %q
  secret = %q
`, url, whSecret)), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"DIALBOX_ENGINE_ENABLED=false", "DIALBOX_HTTP_SHUTDOWN_TIMEOUT=" + grace}
	m := startMain(t, io.Discard, []string{"--database", db, "--fixtures", fx}, env, func(m *Main) {
		m.Log = slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	var app int64
	if err := sqliteAt(t, m.Config.Database).QueryRow(`SELECT id FROM applications WHERE api_key = 'sd-key'`).Scan(&app); err != nil {
		t.Fatal(err)
	}
	return m, app
}

// shutdownMessages reads the outbox of a closed server's database.
func shutdownMessages(t *testing.T, db string) map[string]whMessage {
	t.Helper()
	s, err := store.OpenSQLite(db, sqliteMigrations(), store.NewMetrics(false), recordings.Files{})
	if err != nil {
		t.Fatal(err)
	}
	opened(t, s, db)
	defer s.Close()
	return whMessages(t, s)
}

// An attempt under way when the server closes finishes within the grace
// period and is recorded; a message queued after the close began is not sent.
func TestShutdownFinishesWebhookAttempts(t *testing.T) {
	rcv := newSlowReceiver(t)
	db := filepath.Join(t.TempDir(), "dialbox.db")
	m, app := shutdownServer(t, db, rcv.srv.URL+"/hook", "2m")
	whEnqueue(t, m.store, app, 1)
	m.webhooks.Notify()
	first := <-rcv.arrived

	closed := make(chan error, 1)
	go func() { closed <- m.Close() }()
	waitFor(t, "delivery to stop taking messages", func() bool {
		return !m.webhooks.Running()
	})
	whEnqueue(t, m.store, app, 1)
	m.webhooks.Notify()
	rcv.LetGo()
	if err := <-closed; err != nil {
		t.Errorf("close: %v", err)
	}
	select {
	case id := <-rcv.arrived:
		t.Errorf("message %s sent after the close began", id)
	default:
	}

	msgs := shutdownMessages(t, db)
	if len(msgs) != 2 {
		t.Fatalf("%d messages, want 2", len(msgs))
	}
	for id, msg := range msgs {
		want := whMessage{State: domain.MessagePending}
		if id == first {
			want = whMessage{State: domain.MessageDelivered, Attempts: 1}
		}
		if msg != want {
			t.Errorf("message %s: %+v, want %+v", id, msg, want)
		}
	}
}

// An attempt slower than the grace period is cut, left pending unrecorded,
// and delivered after the next start.
func TestShutdownAbandonsSlowWebhookAttempts(t *testing.T) {
	rcv := newSlowReceiver(t)
	db := filepath.Join(t.TempDir(), "dialbox.db")
	m, app := shutdownServer(t, db, rcv.srv.URL+"/hook", "1s")
	whEnqueue(t, m.store, app, 1)
	m.webhooks.Notify()
	id := <-rcv.arrived
	if err := m.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if got, want := shutdownMessages(t, db)[id], (whMessage{State: domain.MessagePending}); got != want {
		t.Errorf("after the close: %+v, want %+v", got, want)
	}

	rcv.LetGo() // from now on it answers at once
	m, _ = shutdownServer(t, db, rcv.srv.URL+"/hook", "1s")
	if again := <-rcv.arrived; again != id {
		t.Errorf("after restart message %s was sent, want %s", again, id)
	}
	waitFor(t, "the delivery recorded", func() bool {
		return queryInt(t, m.store, `SELECT count(*) FROM webhook_messages WHERE id = ? AND state = 'delivered'`, id) == 1
	})
	if err := m.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

// The real binary on SIGTERM: it stops accepting connections, yet webhook
// attempts under way finish, are recorded, and the process exits cleanly.
func TestSIGTERMFinishesWebhookAttempts(t *testing.T) {
	bin := dialboxBinary(t)
	rcv := newSlowReceiver(t)
	config, url, db := busyTenant{apiKey: "term-key", apiSecret: "term-secret", balance: 100_000_000, hotlines: 2,
		reCallDelay: 60, webhook: rcv.srv.URL + "/hook", timeScale: 1000, retrySchedule: `["0s", "1s"]`}.write(t, t.TempDir())
	p := engRunBinary(t, bin, config, url)
	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"apiKey": "term-key"}).SignedString([]byte("term-secret"))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", url+"/api/v1/public-api/scenarios/sc/calls",
		strings.NewReader(`{"contacts":[{"phone_number":"0914000001","ho_ten":"T"}]}`))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("import: HTTP %d", resp.StatusCode)
	}
	sent := []string{<-rcv.arrived} // the call's event, held by the receiver

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(url, "http://")
	waitFor(t, "the listener to close", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	rcv.LetGo()
	<-p.exited
	if !p.cmd.ProcessState.Success() {
		t.Errorf("exit after SIGTERM: %v", p.cmd.ProcessState)
	}
	for more := true; more; {
		select {
		case id := <-rcv.arrived:
			sent = append(sent, id)
		default:
			more = false
		}
	}
	msgs := shutdownMessages(t, db)
	for _, id := range sent {
		if m := msgs[id]; m.State != domain.MessageDelivered || m.Attempts != 1 {
			t.Errorf("message %s, sent before the stop: %+v, want delivered at the first attempt", id, m)
		}
	}
}
