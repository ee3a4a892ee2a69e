package dialer

import (
	"context"
	"testing"
	"time"

	"dialbox/internal/config"
	"dialbox/internal/script"
)

// newSimCall is a simulated callee pressing keys delay after first asked.
func newSimCall(t *testing.T, keys string, delay time.Duration) *simCall {
	_, cancel := context.WithCancelCause(context.Background())
	t.Cleanup(func() { cancel(nil) })
	return &simCall{d: fastSim(config.SimulatorConfig{}), cancel: cancel, sayTime: sayLength, keys: keys, delay: delay, asked: -1}
}

// TestSimListen: the simulated callee answers Listen with its keys, a key
// during the prompt stopping it, or with silence after the timeout.
func TestSimListen(t *testing.T) {
	ctx := context.Background()
	prompt := script.Prompt{Say: "Nói có hoặc không"} // 17 characters: 1.19 s
	c := newSimCall(t, "12#", 500*time.Millisecond)
	h, err := c.Listen(ctx, script.ListenOptions{Prompt: prompt, BargeIn: true, Keys: true, MaxDigits: 4, FinishOnKey: '#', Timeout: 5 * time.Second})
	if err != nil || h != (script.Heard{Keys: "12#"}) {
		t.Fatalf("keys: %+v, %v", h, err)
	}
	if want := 500*time.Millisecond + 2*simKeyGap; c.elapsed != want {
		t.Errorf("keys heard after %v, want %v (the first one barging in)", c.elapsed, want)
	}

	c = newSimCall(t, "", 0)
	h, err = c.Listen(ctx, script.ListenOptions{Prompt: prompt, BargeIn: true, Timeout: 5 * time.Second})
	if err != nil || h != (script.Heard{}) {
		t.Fatalf("silence: %+v, %v", h, err)
	}
	if want := sayLength(prompt.Say) + 5*time.Second; c.elapsed != want {
		t.Errorf("silence heard after %v, want the prompt and the timeout, %v", c.elapsed, want)
	}
}
