package main

// The load balancer sample of docs/cluster.md, kept true: HAProxy runs
// docs/cluster/haproxy.cfg as written, with only its addresses changed, in
// front of three real dialbox processes on one PostgreSQL database.

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"dialbox/internal/pgtest"
	"dialbox/internal/testtool"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5"
)

const haproxySample = "docs/cluster/haproxy.cfg"

func TestClusterHAProxySample(t *testing.T) {
	haproxy := testtool.Require(t, "haproxy", "haproxy")
	db := pgtest.Database(t)
	bin := dialboxBinary(t)
	sample, err := os.ReadFile(haproxySample)
	if err != nil {
		t.Fatal(err)
	}
	// The sample as written is a valid configuration; its only warnings
	// are that it logs nowhere without Debian's global section.
	out, err := exec.Command(haproxy, "-c", "-f", haproxySample).CombinedOutput()
	if err != nil {
		t.Fatalf("haproxy -c -f %s: %v\n%s", haproxySample, err, out)
	}
	for line := range strings.Lines(string(out)) {
		if strings.Contains(line, "[WARNING]") && !strings.Contains(line, "since it has no log address") {
			t.Errorf("haproxy -c -f %s: %s", haproxySample, line)
		}
	}

	dir := t.TempDir()
	fixtures := filepath.Join(dir, "fixtures.toml")
	writeTestFile(t, fixtures, `
[[applications]]
name = "lb"
api_key = "lb-key"
api_secret = "lb-secret"
  [[applications.hotline_pools]]
  key = "POOL"
  numbers = ["02875000001"]
  [[applications.scenarios]]
  id = "sc"
  status = "ACTIVE"
  content = "hello"
    [applications.scenarios.call_config]
    pool_hotline_key = "POOL"
`)
	var nodes [3]*mnNode
	for i := range nodes {
		nodes[i] = mnStartNode(t, bin, dir, db, fixtures, i, `
[engine]
enabled = false
[log]
level = "warn"
`)
	}

	// Only the addresses change: the bind lines' and the servers'.
	front, stats := freeAddr(t), freeAddr(t)
	replacements := []string{"bind :80\n", "bind " + front + "\n", "bind 127.0.0.1:8404\n", "bind " + stats + "\n"}
	for i, n := range nodes {
		replacements = append(replacements, fmt.Sprintf(" 10.0.0.1%d:8080", i+1), " "+strings.TrimPrefix(n.url, "http://"))
	}
	config := string(sample)
	for i := 0; i < len(replacements); i += 2 {
		if !strings.Contains(config, replacements[i]) {
			t.Fatalf("%s no longer has %q: the test cannot point it at its nodes", haproxySample, replacements[i])
		}
		config = strings.ReplaceAll(config, replacements[i], replacements[i+1])
	}
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	writeTestFile(t, cfgPath, config)
	lb := exec.Command(haproxy, "-db", "-f", cfgPath)
	var lbOut testtool.LockedBuffer
	lb.Stdout, lb.Stderr = &lbOut, &lbOut
	if err := lb.Start(); err != nil {
		t.Fatal(err)
	}
	lbExited := make(chan struct{})
	go func() { lb.Wait(); close(lbExited) }()
	t.Cleanup(func() {
		lb.Process.Kill()
		<-lbExited
		if t.Failed() {
			t.Logf("haproxy output:\n%s", lbOut.String())
		}
	})
	base := "http://" + front
	statsURL := "http://" + stats + "/;csv"
	// HAProxy checks each node's /readyz (its first checks spread over
	// the interval) and finds it UP.
	testtool.WaitFor(t, "HAProxy's /readyz checks to reach every node, all UP", 20*time.Second, func() bool {
		for _, n := range nodes {
			if checks, _ := metricValue(scrapeMetrics(t, n.url+"/metrics"), "dialbox_http_requests_total", "op", "readyz", "code", "200"); checks == 0 {
				return false
			}
		}
		st := lbStatus(statsURL)
		return st["n1"] == "UP" && st["n2"] == "UP" && st["n3"] == "UP"
	})

	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"apiKey": "lb-key"}).SignedString([]byte("lb-secret"))
	if err != nil {
		t.Fatal(err)
	}
	sent := 0
	importOne := func() {
		t.Helper()
		body := fmt.Sprintf(`{"contacts":[{"phone_number":"0916%06d"}]}`, sent)
		sent++
		req, _ := http.NewRequest("POST", base+"/api/v1/public-api/scenarios/sc/calls", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("request %d through HAProxy: %v", sent, err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(data), `"status":1`) {
			t.Fatalf("request %d through HAProxy: %d %s", sent, resp.StatusCode, data)
		}
	}
	opA := func(n *mnNode) float64 {
		v, _ := metricValue(scrapeMetrics(t, n.url+"/metrics"), "dialbox_http_requests_total", "op", "A", "code", "1")
		return v
	}

	// Round robin: operation A reaches every node; /metrics is kept off
	// the balancer.
	for range 9 {
		importOne()
	}
	for i, n := range nodes {
		if a := opA(n); a != 3 {
			t.Errorf("node %d answered %v of 9 imports through round robin, want 3", i, a)
		}
	}
	if resp, err := http.Get(base + "/metrics"); err != nil || resp.StatusCode != 403 {
		t.Errorf("GET /metrics through HAProxy: %v %v, want 403", resp.StatusCode, err)
	} else {
		resp.Body.Close()
	}

	// A node killed: its connections are refused and sent to another node
	// at once, and the health check takes it out; every import succeeds.
	victim := nodes[1]
	if err := victim.proc.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-victim.proc.exited
	before := opA(nodes[0]) + opA(nodes[2])
	testtool.WaitFor(t, "HAProxy to take the killed node out", 20*time.Second, func() bool {
		importOne()
		return lbStatus(statsURL)["n2"] == "DOWN"
	})
	for range 6 {
		importOne()
	}
	if after := opA(nodes[0]) + opA(nodes[2]); after-before != float64(sent-9) {
		t.Errorf("the two nodes left answered %v of the %d imports sent after the kill", after-before, sent-9)
	}
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var stored int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM contacts`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != sent {
		t.Errorf("%d contacts stored, %d acknowledged", stored, sent)
	}

	// The database read-only, as a standby is after a failover: the nodes
	// still serve HTTP, but /readyz fails, and the health check takes them
	// out on its answer (L7STS), not on a refused connection.
	var name string
	if err := conn.QueryRow(context.Background(), `SELECT current_database()`).Scan(&name); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`ALTER DATABASE ` + name + ` SET default_transaction_read_only = on`,
		// Sessions read the setting when they start: end the nodes'.
		`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
	} {
		if _, err := conn.Exec(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	testtool.WaitFor(t, "HAProxy to take the nodes on a read-only database out", 20*time.Second, func() bool {
		st := lbCheckStatus(statsURL)
		return st["n1"] == "DOWN L7STS" && st["n3"] == "DOWN L7STS"
	})
	for _, i := range []int{0, 2} {
		resp, err := http.Get(nodes[i].url + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 503 || !strings.Contains(string(data), "takes no writes") {
			t.Errorf("node %d's /readyz on a read-only database: %d %s", i, resp.StatusCode, data)
		}
	}
}

// lbStatus is each server's status in HAProxy's CSV stats (backend
// dialbox): UP or DOWN; empty when the page does not answer.
func lbStatus(url string) map[string]string {
	status := map[string]string{}
	for server, s := range lbCheckStatus(url) {
		status[server], _, _ = strings.Cut(s, " ")
	}
	return status
}

// lbCheckStatus is each server's status (the first word) and last check
// (L4CON: connection refused, L7STS: a wrong HTTP status, L7OK, ...).
func lbCheckStatus(url string) map[string]string {
	resp, err := http.Get(url)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	r := csv.NewReader(resp.Body)
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil || len(rows) == 0 {
		return nil
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[strings.TrimPrefix(name, "# ")] = i
	}
	status := map[string]string{}
	for _, row := range rows[1:] {
		if len(row) > col["check_status"] && row[col["pxname"]] == "dialbox" {
			// "UP 1/2" while it is going down, "DOWN 1/2" while coming up.
			state, _, _ := strings.Cut(row[col["status"]], " ")
			status[row[col["svname"]]] = state + " " + row[col["check_status"]]
		}
	}
	return status
}
