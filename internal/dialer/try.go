package dialer

import (
	"context"
	"math"
	"time"

	"dialbox/internal/script"
	"dialbox/internal/tts"
)

// TryMaxDuration is the longest simulated call a try runs: a longer
// script is cut there, as max_duration cuts a call
// (docs/console.md#trying-a-script).
const TryMaxDuration = 30 * time.Minute

// Callee is the person (or machine) a script is tried against: the keys
// they press, a second after the script first asks for keys, one every
// 200 ms; what they say, one answer per listening turn ("" is silence); or
// a voicemail box answering.
type Callee struct {
	Digits  string
	Says    []string
	Machine bool
	Fields  map[string]string // the contact's fields, filling {{field}}
}

// Trial runs scripts on the simulated callee without a call: no contact,
// no bill, no webhook. Chat is the agent steps' model, nil when [llm] has
// no url.
type Trial struct {
	Chat script.Chat
}

// Try runs s on callee at once, as a simulated answered call with answering
// machine detection would: the simulator's waits are skipped (the steps'
// times are simulated ones from start), and a machine runs s from its
// voicemail step, or nothing when it has none (ran false).
func (t Trial) Try(ctx context.Context, s script.Script, callee Callee, start time.Time) (out script.Outcome, ran bool) {
	if callee.Machine {
		if s, ran = voicemailScript(s); !ran {
			return script.Outcome{End: script.EndHangup, Transcript: []script.Turn{}}, false
		}
		callee.Digits, callee.Says = "", nil // a machine presses no key and answers nothing
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// An infinite time scale: every simulated wait takes no real time.
	d := &Sim{}
	d.scale.Store(math.Float64bits(math.Inf(1)))
	c := &simCall{d: d, cancel: cancel, keys: callee.Digits, delay: simDigitsDelay, asked: -1,
		says: callee.Says, saysDelay: simSaysDelay, end: TryMaxDuration, endWhy: ErrMaxDuration,
		sayTime: func(text string) time.Duration { return sayLength(tts.Render(text, callee.Fields)) }}
	run := script.Runner{Now: func() time.Time { return start.Add(c.elapsed) }, Chat: t.Chat,
		// An opt_out step is run, but a try puts no number on the list.
		OptOut: func(context.Context) error { return nil },
		Fill:   func(text string) string { return tts.Render(text, callee.Fields) }}
	return run.Run(ctx, s, c), true
}
