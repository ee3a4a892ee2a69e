package ops

import (
	"bytes"
	"context"
	"dialbox/internal/config"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"
)

// slogLine is the line slog's handler of the format writes for l at t.
func slogLine(t *testing.T, format string, at time.Time, level slog.Level, l accessLine) string {
	var buf bytes.Buffer
	h := NewLogger(config.LogConfig{Format: format, Level: "debug"}, &buf).Handler()
	r := slog.NewRecord(at, level, "request", 0)
	r.AddAttrs(slog.String("request_id", l.requestID), slog.String("method", l.method), slog.String("path", l.path),
		slog.String("op", l.op), slog.String("tenant", l.tenant), slog.String("code", l.code),
		slog.Int("http_status", l.status), slog.Float64("latency_ms", l.latencyMS))
	if err := h.Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// checkAccessLine: a line written by hand is the line slog writes.
func checkAccessLine(t *testing.T, at time.Time, level slog.Level, l accessLine) (byHand bool) {
	t.Helper()
	for _, format := range []string{"text", "json"} {
		b, ok := l.append(nil, format == "json", at, level)
		if !ok {
			continue
		}
		byHand = true
		if want := slogLine(t, format, at, level, l); string(b) != want {
			t.Fatalf("%s line by hand:\n%s\nslog's:\n%s", format, b, want)
		}
	}
	return byHand
}

// TestAccessLine: the access log's usual lines are written by hand, and
// are what slog writes, in both formats and at both levels.
func TestAccessLine(t *testing.T) {
	zone := time.FixedZone("ICT", 7*3600)
	for _, c := range []struct {
		at    time.Time
		level slog.Level
		line  accessLine
	}{
		{time.Date(2026, 11, 27, 1, 2, 3, 4_000_000, zone), slog.LevelInfo,
			accessLine{"9f86d081884c7d659a2feaa0", "POST", "/api/v1/public-api/scenarios/sc-1/calls", "A", "key-1", "1", 200, 3.456}},
		{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), slog.LevelWarn,
			accessLine{"trace-42.a_b:c", "GET", "/api/v1/public-api/scenarios", "B", "", "9999", 500, 0}},
		{time.Date(2026, 6, 30, 23, 59, 59, 999_999_999, zone), slog.LevelInfo,
			accessLine{"x", "GET", "/metrics", "metrics", "", "200", 200, 1234567.891}},
		{time.Now(), slog.LevelInfo, accessLine{"x", "GET", "/healthz", "healthz", "", "200", 200, 0.001}},
	} {
		if !checkAccessLine(t, c.at, c.level, c.line) {
			t.Errorf("%+v: not written by hand", c.line)
		}
	}
	// A path to quote goes through slog, so it is quoted as slog does.
	var buf bytes.Buffer
	log := NewAccessLog(config.LogConfig{Format: "text", Level: "info"}, &buf)
	log.write(context.Background(), slog.LevelInfo, accessLine{requestID: "x", method: "GET", path: `/a b"c`, code: "404", status: 404})
	if got := buf.String(); !strings.Contains(got, ` path="/a b\"c" `) {
		t.Errorf("a path with a space and a quote: %s", got)
	}
	buf.Reset()
	log = NewAccessLog(config.LogConfig{Format: "json", Level: "warn"}, &buf)
	log.write(context.Background(), slog.LevelInfo, accessLine{requestID: "x", method: "GET", path: "/", code: "200", status: 200})
	if buf.Len() != 0 {
		t.Errorf("an info line written at level warn: %s", buf.String())
	}
}

// FuzzAccessLine: whatever a request's strings and latency, a line
// written by hand is the line slog writes.
func FuzzAccessLine(f *testing.F) {
	f.Add("9f86d081884c7d659a2feaa0", "POST", "/api/v1/public-api/scenarios/sc-1/calls", "key-1", "1", 200, 3.456, int64(1_790_000_000_123_456_789))
	f.Add("", "GET", "/a=b", "", "", 0, 1e-7, int64(0))
	f.Add("id", "GET", "/é", "t", "404", 404, 1e21, int64(-1))
	f.Add("id", "GET", "/", "t", "404", 404, math.NaN(), int64(-1))
	f.Fuzz(func(t *testing.T, id, method, path, tenant, code string, status int, latency float64, at int64) {
		checkAccessLine(t, time.Unix(0, at).In(time.FixedZone("X", 5400)), slog.LevelInfo,
			accessLine{id, method, path, "A", tenant, code, status, latency})
	})
}
