package main

// Helpers of the tests that build and run the real binary (crash_test.go,
// crashloop_test.go, the engine's SIGKILL test).

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"dialbox/internal/testtool"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// TestMain removes the binary the tests built and the migrated PostgreSQL
// database they copied, once they are done.
func TestMain(m *testing.M) {
	code := m.Run()
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin))
	}
	if err := migratedPostgres.Drop(); err != nil {
		fmt.Fprintf(os.Stderr, "drop the migrated PostgreSQL template: %v\n", err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// dialboxBinary builds the binary once per test run and returns its path;
// it skips the test under -short or where SIGKILL does not exist.
func dialboxBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and kills the binary")
	}
	if runtime.GOOS == "windows" {
		t.Skip("needs SIGKILL")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "dialbox-test-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "dialbox")
		gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
		if p, err := exec.LookPath("go"); err == nil {
			gobin = p
		}
		if out, err := exec.Command(gobin, "build", "-o", builtBin, ".").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// binaryProc is the real binary, started by a test.
type binaryProc struct {
	cmd     *exec.Cmd
	out     *testtool.LockedBuffer // its stdout and stderr
	exited  chan struct{}
	waitErr error // set before exited is closed
}

// runBinary starts bin with args, in the test's environment less every
// DIALBOX_ variable but env's, and returns once ready answers a GET. The
// process is killed at the test's end, and its output shown if the test
// failed.
func runBinary(t *testing.T, bin string, args, env []string, ready string) *binaryProc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DIALBOX_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	p := &binaryProc{cmd: cmd, out: &testtool.LockedBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("dialbox output:\n%s", p.out.String())
		}
	})
	waitFor(t, "dialbox to answer "+ready, func() bool {
		select {
		case <-p.exited:
			t.Fatalf("dialbox exited at start:\n%s", p.out.String())
		default:
		}
		resp, err := http.Get(ready)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})
	return p
}

// freeAddr is a loopback address nothing listens on (yet).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// busyTenant is one prepaid tenant whose ACTIVE scenario "sc" dials all day
// from its own pool, retries busy and unanswered calls once, and reports
// every event to a webhook.
type busyTenant struct {
	apiKey, apiSecret string
	balance           int64
	hotlines          int
	reCallDelay       int // seconds
	webhook           string
	timeScale         float64
	retrySchedule     string // TOML array of durations
}

// write puts the tenant's fixtures and a config serving them on a free
// port, with a fast engine, into dir; it returns the config's path, the
// base URL and the database path.
func (b busyTenant) write(t *testing.T, dir string) (config, url, db string) {
	t.Helper()
	var numbers []string
	for i := range b.hotlines {
		numbers = append(numbers, fmt.Sprintf(`"02873%06d"`, i))
	}
	fixtures := fmt.Sprintf(`
[[applications]]
name = %[1]q
api_key = %[1]q
api_secret = %[2]q
  [applications.wallet]
  prepaid = true
  balance = %[3]d
  expires_at = 2099-01-01T00:00:00Z
  price_per_call = 1000
  price_per_minute = 800
  [[applications.hotline_pools]]
  key = "POOL"
  numbers = [%[4]s]
  [[applications.scenarios]]
  id = "sc"
  status = "ACTIVE"
  content = "hello"
  personalized_fields = ["ho_ten"]
    [applications.scenarios.call_config]
    pool_hotline_key = "POOL"
    max_concurrent = %[5]d
    [applications.scenarios.call_config.re_call]
    times = 1
    delay = %[6]d
    is_busy = true
    is_no_answer = true
    [applications.scenarios.call_config.call_window]
    start = "00:00"
    end = "24:00"
    timezone = "Asia/Ho_Chi_Minh"
  [[applications.webhooks]]
  url = %[7]q
  secret = %[8]q
`, b.apiKey, b.apiSecret, b.balance, strings.Join(numbers, ", "), b.hotlines, b.reCallDelay, b.webhook, whSecret)
	addr := freeAddr(t)
	db = filepath.Join(dir, "dialbox.db")
	cfg := fmt.Sprintf(`
listen = %q
database = %q
fixtures = %q
[engine]
poll_interval = "20ms"
[simulator]
time_scale = %.1f
[webhooks]
workers = 4
retry_schedule = %s
`, addr, db, filepath.Join(dir, "fixtures.toml"), b.timeScale, b.retrySchedule)
	config = filepath.Join(dir, "dialbox.toml")
	for path, body := range map[string]string{filepath.Join(dir, "fixtures.toml"): fixtures, config: cfg} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return config, "http://" + addr, db
}
