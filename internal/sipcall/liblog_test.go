package sipcall

import (
	"dialbox/internal/testtool"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emiago/diago/media"
	"github.com/emiago/sipgo/sip"
)

// junk is a datagram SIP cannot parse: a scanner's probe, 30 KB of it.
func junk(i int) []byte {
	return []byte(fmt.Sprintf("%06d ", i) + strings.Repeat("\x16\x03\x01junk", 5000))
}

// TestJunkDatagramsBoundedLog: a flood of unparsable datagrams on the SIP
// port adds a few short lines to the log, not their payloads.
func TestJunkDatagramsBoundedLog(t *testing.T) {
	var out testtool.LockedBuffer
	u, err := New(Options{ListenAddr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(&out, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	ours := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: listenPort(t, u.ua, "udp")}
	c, err := net.DialUDP("udp", nil, ours)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const datagrams = 200
	for i := range datagrams {
		if _, err := c.Write(junk(i)); err != nil {
			t.Fatal(err)
		}
	}
	// The listener reads in order: once an OPTIONS after the junk is
	// answered, every datagram before it the kernel kept was read.
	answer, err := sendOptions(t, c, ours, "junk-test")
	if err != nil || !strings.HasPrefix(answer, "SIP/2.0 ") {
		t.Fatalf("no answer to the OPTIONS after the junk: %v %q", err, answer)
	}
	log := out.String()
	lines := strings.Count(log, "\n")
	t.Logf("%d junk datagrams of %d bytes: %d log lines, %d bytes:\n%s", datagrams, len(junk(0)), lines, len(log), log)
	if len(log) > 8<<10 {
		t.Errorf("the junk added %d bytes of log (%d lines), want a few short lines:\n%.2000s", len(log), lines, log)
	}
	if !strings.Contains(log, "unparsable") {
		t.Errorf("no line says unparsable datagrams were dropped:\n%.2000s", log)
	}
}

// TestLibraryLogLimits: repeated lines are let through a few at a time,
// the next one saying how many were left out; long values are cut.
func TestLibraryLogLimits(t *testing.T) {
	var out testtool.LockedBuffer
	now := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	log := slog.New(newLibraryHandler(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}),
		func() time.Time { return now })).With("caller", "Transport<UDP>")
	for i := range 100 {
		log.Error("failed to parse", "data", string(junk(i)), "error", fmt.Errorf("bad start line in %q", junk(i)))
	}
	if got := strings.Count(out.String(), "\n"); got != libraryBurst {
		t.Fatalf("100 junk datagrams in a moment: %d lines, want %d:\n%s", got, libraryBurst, out.String())
	}
	for line := range strings.Lines(out.String()) {
		if len(line) > 1024 || !strings.Contains(line, "unparsable") || !strings.Contains(line, "size=35007") || !strings.Contains(line, "caller=Transport<UDP>") {
			t.Errorf("line of %d bytes: %.1200s", len(line), line)
		}
	}
	now = now.Add(libraryWindow)
	out.Reset()
	log.Error("failed to parse", "data", "x", "error", "y")
	if want := "suppressed=" + strconv.Itoa(100-libraryBurst); !strings.Contains(out.String(), want) {
		t.Errorf("the next window's line: %q, want %s", out.String(), want)
	}

	// Other lines: each message its own budget; debug lines, asked for,
	// are all kept, but cut too.
	out.Reset()
	for range 10 {
		log.Warn("RTP read error", "error", strings.Repeat("e", 5000))
		log.Debug("UDP read", "data", strings.Repeat("d", 5000))
	}
	if w, d := strings.Count(out.String(), "RTP read error"), strings.Count(out.String(), "UDP read"); w != libraryBurst || d != 10 {
		t.Errorf("10 warnings and 10 debug lines: %d and %d kept, want %d and 10", w, d, libraryBurst)
	}
	for line := range strings.Lines(out.String()) {
		if len(line) > 1024 {
			t.Errorf("a line of %d bytes", len(line))
		}
	}
}

// TestLibraryDefaultsRouted: what sipgo and diago log to their package
// default loggers reaches the UserAgent's logger, in its format.
func TestLibraryDefaultsRouted(t *testing.T) {
	var out testtool.LockedBuffer
	u, err := New(Options{ListenAddr: "127.0.0.1:0", Logger: slog.New(slog.NewJSONHandler(&out, nil)).With("part", "sip")})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	sip.DefaultLogger().Info("Unhandled sip request", "caller", "transactionLayer")
	media.DefaultLogger().WithGroup("rtp").Warn("Growing Decrypted RTP buffer", "diff", 3)
	log := out.String()
	for _, want := range []string{`"msg":"Unhandled sip request","part":"sip","caller":"transactionLayer"`, `"msg":"Growing Decrypted RTP buffer","part":"sip","rtp":{"diff":3}`} {
		if !strings.Contains(log, want) {
			t.Errorf("the UserAgent's log has no %s:\n%s", want, log)
		}
	}
}
