package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"dialbox/internal/config"
	"dialbox/internal/ops"
	"dialbox/internal/pgtest"
	"dialbox/internal/sqldb"
	"dialbox/internal/store"
	"dialbox/internal/testtool"

	"github.com/jackc/pgx/v5"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// opsServer starts a Main on a fresh database with the demo tenant, its
// log written as JSON into logs, and returns it with a demo ACCESS_TOKEN.
func startOpsServer(t *testing.T, logs io.Writer, env ...string) (*Main, string) {
	t.Helper()
	return startOpsServerOn(t, t.TempDir()+"/ops.db", logs, env...)
}

// startOpsServerOn is startOpsServer on the database named (a backend's,
// testBackends).
func startOpsServerOn(t *testing.T, db string, logs io.Writer, env ...string) (*Main, string) {
	t.Helper()
	env = append([]string{"DIALBOX_ENGINE_ENABLED=false", "DIALBOX_LOG_FORMAT=json",
		"DIALBOX_RECORDINGS_DIR=" + filepath.Join(t.TempDir(), "recordings")}, env...)
	m := startMain(t, io.Discard, []string{"--database", db}, env,
		func(m *Main) { m.SetLogOutput(logs) }) // as serve does: the access log batched, flushed by Close
	t.Cleanup(func() { m.Close() })
	app, err := m.store.DemoApp(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return m, mintToken(t, app)
}

// scrapeMetrics reads /metrics into name -> samples.
func scrapeMetrics(t *testing.T, url string) map[string][]*model.Sample {
	t.Helper()
	resp, body := opsDo(t, "GET", url, "", "")
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("metrics do not parse: %v", err)
	}
	list := make([]*dto.MetricFamily, 0, len(families))
	for _, f := range families {
		list = append(list, f)
	}
	vec, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{Timestamp: model.Now()}, list...)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]*model.Sample{}
	for _, s := range vec {
		name := string(s.Metric[model.MetricNameLabel])
		out[name] = append(out[name], s)
	}
	return out
}

// metricValue is the value of the sample of name with all the given labels
// (name=value pairs); ok is false when there is none.
func metricValue(samples map[string][]*model.Sample, name string, labels ...string) (float64, bool) {
next:
	for _, s := range samples[name] {
		for i := 0; i+1 < len(labels); i += 2 {
			if string(s.Metric[model.LabelName(labels[i])]) != labels[i+1] {
				continue next
			}
		}
		return float64(s.Value), true
	}
	return 0, false
}

func TestMetrics(t *testing.T) { eachBackend(t, testMetrics) }

func testMetrics(t *testing.T, backend string) {
	m, token := startOpsServerOn(t, backendDatabase(t, backend), io.Discard)
	base := m.URL()
	before := scrapeMetrics(t, base+"/metrics")
	imported0, _ := metricValue(before, "dialbox_contacts_imported_total")
	skipped0, _ := metricValue(before, "dialbox_contacts_skipped_total")

	resp, body := opsDo(t, "POST", base+"/api/v1/public-api/scenarios/"+store.DemoScenarioID+"/calls", token,
		`{"contacts":[{"phone_number":"0912345678"},{"phone_number":"not a phone"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("operation A: %d %s", resp.StatusCode, body)
	}
	opsDo(t, "GET", base+"/api/v1/public-api/scenarios?limit=99", token, "")
	opsDo(t, "POST", base+"/api/v1/public-api/campaign", "", `{}`)

	after := scrapeMetrics(t, base+"/metrics")
	for _, c := range []struct{ op, code string }{{"A", "1"}, {"B", "400"}, {"C", "401"}, {"metrics", "200"}} {
		if n, ok := metricValue(after, "dialbox_http_requests_total", "op", c.op, "code", c.code); !ok || n < 1 {
			t.Errorf("dialbox_http_requests_total{op=%q,code=%q} = %v, %v; want >= 1", c.op, c.code, n, ok)
		}
		if n, ok := metricValue(after, "dialbox_http_request_duration_seconds_count", "op", c.op, "code", c.code); !ok || n < 1 {
			t.Errorf("latency histogram of op=%q code=%q: count %v, %v", c.op, c.code, n, ok)
		}
	}
	if n, _ := metricValue(after, "dialbox_contacts_imported_total"); n-imported0 < 1 {
		t.Errorf("contacts imported went from %v to %v", imported0, n)
	}
	if n, _ := metricValue(after, "dialbox_contacts_skipped_total"); n-skipped0 < 1 {
		t.Errorf("contacts skipped went from %v to %v", skipped0, n)
	}
	if n, ok := metricValue(after, "dialbox_queue_depth", "scenario", store.DemoScenarioID); !ok || n != 1 {
		t.Errorf("queue depth of %s = %v, %v; want 1", store.DemoScenarioID, n, ok)
	}
	// Each store reports its commits under its own name, never the other's.
	commits, other := "dialbox_sqlite_commit_", "dialbox_postgres_commit_"
	if backend == "postgres" {
		commits, other = other, commits
	}
	if n, ok := metricValue(after, commits+"batch_jobs_count"); !ok || n < 1 {
		t.Errorf("no commit batch observed: %v %v", n, ok)
	}
	for _, name := range []string{other + "batch_jobs_count", other + "duration_seconds_count"} {
		if _, ok := metricValue(after, name); ok {
			t.Errorf("%s shown on %s", name, backend)
		}
	}
	for _, name := range []string{"dialbox_calls_in_progress", "dialbox_wallet_balance_vnd", "dialbox_webhook_outbox_backlog",
		"dialbox_webhook_outbox_oldest_age_seconds", "dialbox_webhook_delivery_duration_seconds_count",
		commits + "duration_seconds_count", "dialbox_build_info", "go_goroutines"} {
		if _, ok := metricValue(after, name); !ok {
			t.Errorf("%s missing", name)
		}
	}
	if n, _ := metricValue(after, "dialbox_metrics_db_errors"); n != 0 {
		t.Errorf("%v metrics queries failed", n)
	}
	// The counters of several nodes show on PostgreSQL only.
	for _, name := range []string{"dialbox_node_info", "dialbox_lease_takeovers_total", "dialbox_lease_renewal_failures_total"} {
		if _, ok := metricValue(after, name); ok != (backend == "postgres") {
			t.Errorf("%s shown: %v, on %s", name, ok, backend)
		}
	}
}

// On PostgreSQL /metrics names the node (cluster.node_name, then the
// process and a part new at each start) and counts takeovers of both
// kinds, and /readyz fails while the server takes no writes.
func TestPostgresNodeMetricsAndReadiness(t *testing.T) {
	db := pgtest.Database(t)
	m, _ := startOpsServerOn(t, db, io.Discard, "DIALBOX_CLUSTER_NODE_NAME=node-a")
	samples := scrapeMetrics(t, m.URL()+"/metrics")
	nodes := samples["dialbox_node_info"]
	prefix := fmt.Sprintf("node-a-%d-", os.Getpid())
	if len(nodes) != 1 || !strings.HasPrefix(string(nodes[0].Metric["node"]), prefix) || nodes[0].Value != 1 {
		t.Errorf("dialbox_node_info = %v, want one sample, node label starting %q", nodes, prefix)
	}
	for _, kind := range []string{"call", "message"} {
		if _, ok := metricValue(samples, "dialbox_lease_takeovers_total", "kind", kind); !ok {
			t.Errorf("dialbox_lease_takeovers_total{kind=%q} missing", kind)
		}
	}

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var name string
	if err := conn.QueryRow(ctx, `SELECT current_database()`).Scan(&name); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `ALTER DATABASE `+name+` SET default_transaction_read_only = on`); err != nil {
		t.Fatal(err)
	}
	// New sessions read the setting: end the node's, which its pool opens
	// again as it needs them.
	endSessions := func() {
		t.Helper()
		if _, err := conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = $1 AND pid <> pg_backend_pid()`, name); err != nil {
			t.Fatal(err)
		}
	}
	endSessions()
	waitFor(t, "readyz to say the read-only server takes no writes", func() bool {
		resp, body := opsDo(t, "GET", m.URL()+"/readyz", "", "")
		var ready struct {
			Checks map[string]string `json:"checks"`
		}
		return json.Unmarshal(body, &ready) == nil && resp.StatusCode == 503 &&
			strings.Contains(ready.Checks["database"], "not writable: the PostgreSQL server takes no writes") && ready.Checks["migrations"] == "ok"
	})
	if _, err := conn.Exec(ctx, `ALTER DATABASE `+name+` RESET default_transaction_read_only`); err != nil {
		t.Fatal(err)
	}
	endSessions()
	waitFor(t, "readyz once writable again", func() bool {
		resp, _ := opsDo(t, "GET", m.URL()+"/readyz", "", "")
		return resp.StatusCode == 200
	})
}

func TestMetricsSeparateListener(t *testing.T) {
	m, _ := startOpsServer(t, io.Discard, "DIALBOX_METRICS_LISTEN=127.0.0.1:0")
	if resp, _ := opsDo(t, "GET", m.URL()+"/metrics", "", ""); resp.StatusCode != 404 {
		t.Errorf("/metrics on the main listener: %d, want 404", resp.StatusCode)
	}
	if _, ok := metricValue(scrapeMetrics(t, "http://"+m.ops.MetricsAddr+"/metrics"), "dialbox_build_info"); !ok {
		t.Error("separate listener serves no dialbox metrics")
	}
}

func TestAccessLogAndRequestID(t *testing.T) {
	var logs testtool.LockedBuffer
	m, token := startOpsServer(t, &logs)
	url := m.URL() + "/api/v1/public-api/scenarios"

	resp, _ := opsDo(t, "GET", url, token, "", "X-Request-Id", "trace-42.a_b:c")
	if got := resp.Header.Get("X-Request-Id"); got != "trace-42.a_b:c" {
		t.Errorf("sane incoming request id not kept: %q", got)
	}
	resp, _ = opsDo(t, "GET", url, token, "", "X-Request-Id", "evil\tid")
	generated := resp.Header.Get("X-Request-Id")
	if generated == "" || strings.Contains(generated, "evil") {
		t.Errorf("insane request id not replaced: %q", generated)
	}

	app, _ := m.store.DemoApp(context.Background())
	// The access log line is written after the response; Close waits for
	// the handlers to return.
	m.Close()
	var found int
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.Contains(line, token) || strings.Contains(line, app.APISecret) {
			t.Errorf("log line holds a secret: %s", line)
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not a JSON log line: %s", line)
		}
		if rec["msg"] != "request" {
			continue
		}
		if rec["request_id"] == "trace-42.a_b:c" || rec["request_id"] == generated {
			found++
			if rec["op"] != "B" || rec["tenant"] != app.APIKey || rec["code"] != "1" || rec["latency_ms"] == nil {
				t.Errorf("access log line lacks op, tenant, code or latency: %s", line)
			}
		}
	}
	if found != 2 {
		t.Errorf("%d access log lines of the 2 requests:\n%s", found, logs.String())
	}
}

func TestHealth(t *testing.T) { eachBackend(t, testHealth) }

func testHealth(t *testing.T, backend string) {
	m, _ := startOpsServerOn(t, backendDatabase(t, backend), io.Discard)
	if resp, body := opsDo(t, "GET", m.URL()+"/healthz", "", ""); resp.StatusCode != 200 || !strings.Contains(string(body), `"alive"`) {
		t.Errorf("healthz: %d %s", resp.StatusCode, body)
	}
	resp, body := opsDo(t, "GET", m.URL()+"/readyz", "", "")
	var ready struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	}
	if err := json.Unmarshal(body, &ready); err != nil || resp.StatusCode != 200 || ready.Status != "ready" ||
		ready.Checks["database"] != "ok" || ready.Checks["migrations"] != "ok" || ready.Checks["webhook_delivery"] != "ok" {
		t.Errorf("readyz on a healthy server: %d %s", resp.StatusCode, body)
	}
	if _, ok := ready.Checks["engine"]; ok {
		t.Errorf("engine checked although engine.enabled is false: %s", body)
	}

	m.store.Close() // what a failed database looks like to the writer
	resp, body = opsDo(t, "GET", m.URL()+"/readyz", "", "")
	if err := json.Unmarshal(body, &ready); err != nil || resp.StatusCode != 503 || ready.Status != "not ready" ||
		!strings.Contains(ready.Checks["database"], "not writable") {
		t.Errorf("readyz with the store closed: %d %s", resp.StatusCode, body)
	}
	if resp, _ := opsDo(t, "GET", m.URL()+"/healthz", "", ""); resp.StatusCode != 200 {
		t.Errorf("healthz must stay 200 while not ready: %d", resp.StatusCode)
	}
}

func TestOpsConfig(t *testing.T) {
	for _, c := range []struct{ env, key string }{
		{"DIALBOX_LOG_FORMAT=xml", "log.format"},
		{"DIALBOX_LOG_LEVEL=verbose", "log.level"},
	} {
		_, err := config.LoadConfig("", []string{c.env})
		if err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s: %v, want an error naming %s", c.env, err, c.key)
		}
	}
	cfg, err := config.LoadConfig("", []string{"DIALBOX_LOG_FORMAT=json", "DIALBOX_LOG_LEVEL=warn", "DIALBOX_METRICS_LISTEN=127.0.0.1:9090"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Log.Format != "json" || cfg.Log.Level != "warn" || cfg.Metrics.Listen != "127.0.0.1:9090" {
		t.Errorf("environment not applied: %+v %+v", cfg.Log, cfg.Metrics)
	}
	var buf testtool.LockedBuffer
	ops.NewLogger(cfg.Log, &buf).Info("dropped")
	ops.NewLogger(cfg.Log, &buf).Warn("kept")
	if got := buf.String(); strings.Contains(got, "dropped") || !strings.HasPrefix(got, `{"time"`) {
		t.Errorf("json logger at warn wrote %q", got)
	}
}

// TestLogBuffer: access-log lines wait in memory, but never behind a line
// written at once, and Close writes what is left.
func TestLogBuffer(t *testing.T) {
	var out testtool.LockedBuffer
	b := ops.NewLogBuffer(&out, time.Hour) // no timer flush within the test
	fmt.Fprintln(b, "request 1")
	if got := out.String(); got != "" {
		t.Fatalf("an access-log line was written at once: %q", got)
	}
	fmt.Fprintln(b.Immediate(), "error")
	fmt.Fprintln(b, "request 2")
	if got := out.String(); got != "request 1\nerror\n" {
		t.Fatalf("after an immediate line: %q", got)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "request 1\nerror\nrequest 2\n" {
		t.Fatalf("after Close: %q", got)
	}
	b.Close() // a second Close is harmless
}

// TestReadyzWhenWritesCannotBeStored: with the database full, imports fail
// with 1402 and /readyz says the server is not ready, until a write can be
// stored again. Full is real on each store: SQLite at its max_page_count
// (SQLITE_FULL, as on a full disk), PostgreSQL answering disk_full (53100)
// from a trigger, the error a full disk gives.
func TestReadyzWhenWritesCannotBeStored(t *testing.T) {
	eachBackend(t, testReadyzWhenWritesCannotBeStored)
}

func testReadyzWhenWritesCannotBeStored(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	ctx := context.Background()
	var fill, free func()
	switch store := s.m.store.(type) {
	case *store.SQLite:
		// max_page_count is the writer connection's: set it there.
		pragma := func(set func(pages int) int) {
			if err := store.Write(ctx, func(tx sqldb.SQLQueryer) error {
				var pages int
				if err := tx.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
					return err
				}
				_, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA max_page_count = %d`, set(pages)))
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
		fill = func() { pragma(func(pages int) int { return pages }) }
		free = func() { pragma(func(int) int { return 1 << 30 }) }
	case *store.Postgres:
		exec := func(sql string) {
			if _, err := outside(t, store).pg.Exec(ctx, sql); err != nil {
				t.Fatal(err)
			}
		}
		fill = func() {
			exec(`CREATE FUNCTION disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; END $$`)
			for _, table := range []string{"contacts", "admin_settings"} {
				exec(`CREATE TRIGGER disk_full BEFORE INSERT OR UPDATE ON ` + table + ` FOR EACH ROW EXECUTE FUNCTION disk_full()`)
			}
		}
		free = func() { exec(`DROP FUNCTION disk_full() CASCADE`) }
	}
	contacts := make([]string, 500)
	for i := range contacts {
		contacts[i] = fmt.Sprintf(`{"phone_number":"09123%05d","ho_ten":"%s"}`, i, strings.Repeat("x", 200))
	}
	body := `{"contacts":[` + strings.Join(contacts, ",") + `]}`
	readiness := func() (int, string) {
		resp, b := opsDo(t, "GET", s.url+"/readyz", "", "")
		var ready struct {
			Checks map[string]string `json:"checks"`
		}
		json.Unmarshal(b, &ready)
		return resp.StatusCode, ready.Checks["database"]
	}
	if status, check := readiness(); status != 200 {
		t.Fatalf("readyz before: %d %s", status, check)
	}

	fill()
	if _, e := qaImport(t, s, body); e.Code != 1402 {
		t.Fatalf("an import into a full database: %+v, want 1402", e)
	}
	// Asked again, it still fails: the database is still full.
	for range 2 {
		if status, check := readiness(); status != 503 || !strings.Contains(check, "not writable") {
			t.Errorf("readyz while writes cannot be stored: %d %q", status, check)
		}
	}

	free()
	if status, check := readiness(); status != 200 {
		t.Errorf("readyz once writes are stored again: %d %q", status, check)
	}
	if _, e := qaImport(t, s, body); e.Code != 0 {
		t.Errorf("an import once there is room: %+v", e)
	}
}

// TestGCPercentFromConfig: limits.gc_percent sets the garbage collector's
// pace when the server starts, unless GOGC is set
// (docs/configuration.md#limits).
func TestGCPercentFromConfig(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set in this environment, and it wins over limits.gc_percent")
	}
	was := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(was) })
	startOpsServer(t, io.Discard, "DIALBOX_LIMITS_GC_PERCENT=250")
	if got := debug.SetGCPercent(was); got != 250 {
		t.Errorf("GC percent %d after the start, want limits.gc_percent's 250", got)
	}
}
