package tokenlimit

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func newLimiter(log *bytes.Buffer) *Limiter {
	return New(Config{PerAddress: 5, Overall: 20, Backoff: 2 * time.Second, MaxAddresses: 3},
		slog.New(slog.NewTextHandler(log, nil)))
}

// A guesser who never pauses for the back-off is never checked again, and
// the right token, once the guessing stops, waits one back-off at most.
func TestGuessesRefusedRightTokenWaitsOneBackoff(t *testing.T) {
	var log bytes.Buffer
	l := newLimiter(&log)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		if wait := l.Check("a", false, now); wait != 0 {
			t.Fatalf("wrong token %d refused: %v", i+1, wait)
		}
	}
	if wait := l.Check("b", true, now); wait != 0 {
		t.Fatalf("another address's right token waits %v", wait)
	}
	for range 1000 { // every 100 ms for 100 s
		if wait := l.Check("a", false, now); wait != 2*time.Second {
			t.Fatalf("a guess within the back-off waits %v, want 2s", wait)
		}
		if wait := l.Check("a", true, now); wait != 2*time.Second {
			t.Fatalf("the right token within the back-off waits %v, want the same 2s as a guess", wait)
		}
		now = now.Add(100 * time.Millisecond)
	}
	now = now.Add(2 * time.Second)
	if wait := l.Check("a", true, now); wait != 0 {
		t.Fatalf("the right token a back-off after the last guess waits %v", wait)
	}
	if n := strings.Count(log.String(), "locked out"); n != 2 { // the address, then overall
		t.Errorf("%d lockout lines, want 2:\n%s", n, log.String())
	}
	// A lockout over (the bucket refilled) and a new one: logged again.
	now = now.Add(5 * time.Minute)
	for range 6 {
		l.Check("a", false, now)
	}
	if n := strings.Count(log.String(), "client=a"); n != 2 {
		t.Errorf("%d lockout lines for a after a second lockout, want 2:\n%s", n, log.String())
	}
}

// The addresses remembered are bounded; an address not remembered is held
// by the overall limit still.
func TestAddressesBounded(t *testing.T) {
	var log bytes.Buffer
	l := newLimiter(&log)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, addr := range []string{"a", "b", "c", "d", "e"} {
		l.Check(addr, false, now)
	}
	if len(l.addrs) != 3 {
		t.Fatalf("%d addresses remembered, want 3", len(l.addrs))
	}
	now = now.Add(time.Minute) // a, b and c are full again: forgotten for new ones
	l.Check("f", false, now)
	if len(l.addrs) != 1 || l.addrs["f"] == nil {
		t.Fatalf("remembered %v, want f alone", l.addrs)
	}
	for range 20 {
		l.Check("g", false, now)
	}
	if wait := l.Check("h", true, now); wait == 0 {
		t.Fatal("overall locked out, a new address's right token was taken within the back-off")
	}
}
