package testtool

import (
	"bytes"
	"sync"
	"testing"
	"time"
)

// WaitFor polls cond until it holds, failing the test with what once
// within has passed: the bound only ends a hung test, so it is generous,
// and no test passes or fails by how fast the machine is.
func WaitFor(t testing.TB, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// LockedBuffer collects what goroutines write (a server's logs, a child
// process's stdout and stderr) and reads it back whole.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Reset empties the buffer, so a test reads only what is written after.
func (b *LockedBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}
