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

// TestSimListenSays: the callee says its utterances in order, one per
// listening turn, says_delay after the turn begins; barge-in lets it cut
// the prompt, and it is heard end_silence after it stops speaking.
func TestSimListenSays(t *testing.T) {
	ctx := context.Background()
	prompt := script.Prompt{Say: "Nói có hoặc không"} // 1.19 s
	opts := script.ListenOptions{Prompt: prompt, BargeIn: true, Timeout: 5 * time.Second,
		EndSilence: 700 * time.Millisecond, MaxSpeech: 10 * time.Second}
	c := newSimCall(t, "", 0)
	c.says, c.saysDelay = []string{"Có ạ", "", "không", "dạ vâng, tôi nghe đây", "muộn"}, 500*time.Millisecond

	turn := func(o script.ListenOptions, want script.Heard, took time.Duration) {
		t.Helper()
		from := c.elapsed
		h, err := c.Listen(ctx, o)
		if err != nil || h != want {
			t.Fatalf("turn %d: heard %+v, %v; want %+v", c.turn, h, err, want)
		}
		if c.elapsed-from != took {
			t.Errorf("turn %d took %v, want %v", c.turn, c.elapsed-from, took)
		}
	}
	// Barging in half a second into the prompt; 4 characters of speech.
	turn(opts, script.Heard{Text: "Có ạ"}, 500*time.Millisecond+4*simSayPerChar+700*time.Millisecond)
	// "" is a turn of silence: the prompt, then the timeout.
	turn(opts, script.Heard{}, sayLength(prompt.Say)+5*time.Second)
	// Without barge-in the callee waits for the prompt's end.
	noBarge := opts
	noBarge.BargeIn = false
	turn(noBarge, script.Heard{Text: "không"}, sayLength(prompt.Say)+5*simSayPerChar+700*time.Millisecond)
	// max_speech cuts a long answer, heard whole.
	short := opts
	short.MaxSpeech = time.Second
	turn(short, script.Heard{Text: "dạ vâng, tôi nghe đây"}, 500*time.Millisecond+time.Second+700*time.Millisecond)
	// Speech that would start after the timeout is silence.
	c.saysDelay = 10 * time.Second
	turn(opts, script.Heard{}, sayLength(prompt.Say)+5*time.Second)
	// No utterance left: silence.
	turn(opts, script.Heard{}, sayLength(prompt.Say)+5*time.Second)

	// Keys and speech: whichever comes first.
	c = newSimCall(t, "1", 300*time.Millisecond)
	c.says, c.saysDelay = []string{"có", "có"}, 500*time.Millisecond
	both := opts
	both.Keys, both.MaxDigits = true, 1
	turn(both, script.Heard{Keys: "1"}, 300*time.Millisecond)
	turn(both, script.Heard{Text: "có"}, 500*time.Millisecond+2*simSayPerChar+700*time.Millisecond)
}
