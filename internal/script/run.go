package script

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Call is the call a script runs on, implemented by whoever places it (the
// SIP dialer, the simulator). Every method must return soon after ctx is
// done, with an error.
type Call interface {
	// Say speaks text, its {{field}} placeholders still in it for the
	// caller to fill in. With bargeIn, a key press stops the speech and is
	// returned; without, the speech plays to its end and key is 0.
	Say(ctx context.Context, text string, bargeIn bool) (key rune, err error)
	// Play plays the WAV prompt at path, relative to the prompts folder,
	// as Say speaks.
	Play(ctx context.Context, path string, bargeIn bool) (key rune, err error)
	// Gather reads keys until opts.MaxDigits were pressed, or
	// opts.FinishOnKey was (it is then the last of keys), or opts.Timeout
	// passed without a key (timedOut).
	Gather(ctx context.Context, opts GatherOptions) (keys string, timedOut bool, err error)
	// Listen hears one answer (docs/voicebot.md#spoken-answers): it plays
	// opts.Prompt (say text with {{field}} placeholders for the caller to
	// fill in, or a WAV path) unless empty; with opts.BargeIn the callee
	// speaking, or pressing a key with opts.Keys, stops it and counts as
	// the answer. It then waits up to opts.Timeout for speech (or a key)
	// to start; the utterance ends after opts.EndSilence of silence or at
	// opts.MaxSpeech. It returns the recognizer's text (Heard.Text), or
	// the keys pressed, read as Gather reads them (Heard.Keys); Heard{}
	// is silence.
	Listen(ctx context.Context, opts ListenOptions) (Heard, error)
	// Transfer hands the call to a SIP URI.
	Transfer(ctx context.Context, uri string) error
	// Hangup ends the call.
	Hangup(ctx context.Context) error
}

// GatherOptions says how Call.Gather reads keys.
type GatherOptions struct {
	MaxDigits   int
	Timeout     time.Duration // for each key, the first one included
	FinishOnKey rune          // 0 for none
}

// ListenOptions says how Call.Listen hears one answer
// (docs/voicebot.md#spoken-answers).
type ListenOptions struct {
	Prompt     Prompt        // played first; empty for none
	BargeIn    bool          // the callee speaking (or pressing a key, with Keys) stops Prompt
	Hints      []string      // the recognizer's vocabulary
	Timeout    time.Duration // how long to wait, after Prompt, for speech (or a key) to start
	EndSilence time.Duration // the silence that ends an utterance
	MaxSpeech  time.Duration // the longest utterance
	// Keys: key presses are an answer too (gather.input ["dtmf", "speech"]),
	// read as Gather reads them.
	Keys        bool
	MaxDigits   int
	FinishOnKey rune // 0 for none
}

// Heard is one answer Call.Listen heard: what the recognizer made of the
// callee's speech, or the keys pressed instead. Both empty: silence.
type Heard struct {
	Text string
	Keys string
}

// End says how a script ended.
type End string

const (
	// EndHangup: the script hung up, at a hangup step or at a step with
	// nowhere to go next.
	EndHangup End = "hangup"
	// EndTransferred: a transfer step handed the call over.
	EndTransferred End = "transferred"
	// EndCanceled: ctx was done (max_duration, the callee hung up); Err is
	// its cause. The caller ends the call.
	EndCanceled End = "canceled"
	// EndFailed: the script is invalid or the call returned an error, in
	// Err. The caller ends the call.
	EndFailed End = "failed"
)

// Outcome is what running a script did.
type Outcome struct {
	Steps  []StepRun `json:"steps"`            // the path taken, the step stopped in included
	Digits string    `json:"digits"`           // every key pressed, in order
	Result string    `json:"result,omitempty"` // the last label set
	// Transcript is what was said, in order: the bot's say texts (their
	// placeholders filled by Runner.Fill) and the callee's answers heard.
	Transcript []Turn `json:"transcript"`
	End        End    `json:"end"`
	Err        error  `json:"-"`
}

// Who speaks a Turn.
const (
	SpeakerBot    = "bot"
	SpeakerCallee = "callee"
)

// Turn is one thing said on the call: by the bot when it started saying
// it, by the callee when it had been heard.
type Turn struct {
	Speaker string    `json:"speaker"`
	Text    string    `json:"text"`
	At      time.Time `json:"at"`
}

// StepRun is one step run.
type StepRun struct {
	Name    string    `json:"name"`
	Kind    Kind      `json:"kind"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	// A gather's input (its finish key left out) at its last attempt, how
	// many attempts it took (1 + the retries used), and whether that last
	// attempt ended on the timeout.
	Input    string `json:"input,omitempty"`
	Attempts int    `json:"attempts,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
	// Speech is what a gather listening for speech heard at its last
	// attempt ("" for silence or keys); nil for a gather of keys alone.
	Speech *string `json:"speech,omitempty"`
	// Error is why an agent step ended without the model ending the call
	// (the model failing, max_turns); its Attempts are the replies asked.
	Error string `json:"error,omitempty"`
}

// Runner runs scripts.
type Runner struct {
	// Now is the clock of the steps' times; nil means time.Now.
	Now func() time.Time
	// OptOut puts the callee's number on the tenant's do-not-call list,
	// for an opt_out step; nil: such a step fails the script.
	OptOut func(ctx context.Context) error
	// Fill fills a say text's {{field}} placeholders for the transcript,
	// as the call fills them to speak it; nil leaves the text as written.
	Fill func(text string) string
	// Chat is the language model of agent steps; nil: such a step fails
	// the script.
	Chat Chat
}

// Run runs a script on a call, from its start step to its end, and says
// what happened. An invalid script fails without touching the call.
func (r Runner) Run(ctx context.Context, s Script, call Call) Outcome {
	now := r.Now
	if now == nil {
		now = time.Now
	}
	fill := r.Fill
	if fill == nil {
		fill = func(text string) string { return text }
	}
	x := run{ctx: ctx, call: call, optOut: r.OptOut, now: now, fill: fill, chat: r.Chat}
	x.out.Transcript = []Turn{}
	if err := s.Validate(); err != nil {
		x.out.End, x.out.Err = EndFailed, err
		return x.out
	}
	steps := make(map[string]*Step, len(s.Steps))
	for i := range s.Steps {
		steps[s.Steps[i].Name] = &s.Steps[i]
	}
	cur := s.Start
	if cur == "" {
		cur = s.Steps[0].Name
	}
	for cur != "" {
		if ctx.Err() != nil {
			return x.stop(nil)
		}
		st := steps[cur]
		rec := StepRun{Name: st.Name, Kind: st.Kind(), Started: now()}
		x.stepStart = rec.Started
		next, err := x.step(st, &rec)
		rec.Ended = now()
		x.out.Steps = append(x.out.Steps, rec)
		if err != nil {
			return x.stop(err)
		}
		if x.transferred {
			x.out.End = EndTransferred
			return x.out
		}
		switch rec.Kind {
		case KindTransfer:
			x.out.End = EndTransferred
			return x.out
		case KindHangup, KindOptOut:
			x.out.End = EndHangup
			return x.out
		}
		cur = next
	}
	if ctx.Err() != nil {
		return x.stop(nil)
	}
	if err := call.Hangup(ctx); err != nil {
		return x.stop(err)
	}
	x.out.End = EndHangup
	return x.out
}

type run struct {
	ctx    context.Context
	call   Call
	optOut func(context.Context) error
	now    func() time.Time
	fill   func(string) string
	chat   Chat
	out    Outcome
	// transferred: an agent's model handed the call over; the script ends.
	transferred bool
	// stepStart is when the step running started, and the time of its
	// first turn, which the bot says at once; zero once taken.
	stepStart time.Time
}

// said adds a turn to the transcript; blank text is no turn.
func (x *run) said(speaker, text string) {
	if speaker == SpeakerBot {
		text = x.fill(text)
	}
	if text = strings.TrimSpace(text); text == "" {
		return
	}
	if r := []rune(text); len(r) > MaxTurnRunes {
		text = string(r[:MaxTurnRunes])
	}
	at := x.stepStart
	if speaker != SpeakerBot || at.IsZero() {
		at = x.now()
	}
	x.stepStart = time.Time{}
	x.out.Transcript = append(x.out.Transcript, Turn{Speaker: speaker, Text: text, At: at})
}

// say speaks text on the call, into the transcript first: a callee who
// hangs up mid-sentence still heard it begin.
func (x *run) say(text string, bargeIn bool) (rune, error) {
	x.said(SpeakerBot, text)
	return x.call.Say(x.ctx, text, bargeIn)
}

// stop ends the run on err, or on ctx alone when err is nil: a call error
// once ctx is done is the cancellation showing, not a failure.
func (x *run) stop(err error) Outcome {
	if x.ctx.Err() != nil {
		x.out.End, x.out.Err = EndCanceled, context.Cause(x.ctx)
	} else {
		x.out.End, x.out.Err = EndFailed, err
	}
	return x.out
}

// step runs one step and says which is next ("" for none).
func (x *run) step(st *Step, rec *StepRun) (string, error) {
	switch rec.Kind {
	case KindSay:
		_, err := x.say(st.Say.Text, false)
		return st.Say.Next, err
	case KindPlay:
		_, err := x.call.Play(x.ctx, st.Play.Path, false)
		return st.Play.Next, err
	case KindGather:
		return x.gather(st.Gather, rec)
	case KindAgent:
		return x.agent(st.Agent, rec)
	case KindSet:
		x.out.Result = st.Set.Label
		return st.Set.Next, nil
	case KindTransfer:
		return "", x.call.Transfer(x.ctx, st.Transfer.To)
	case KindOptOut:
		return "", x.optOutStep(st.OptOut)
	default: // KindHangup: Validate leaves no other
		return "", x.call.Hangup(x.ctx)
	}
}

// optOutStep records the refusal before anything else, so a callee who
// hangs up on the goodbye is still never called again.
func (x *run) optOutStep(o *OptOut) error {
	if x.optOut == nil {
		return errors.New("opt_out: this call cannot record an opt-out")
	}
	if err := x.optOut(x.ctx); err != nil {
		return fmt.Errorf("opt_out: %w", err)
	}
	x.out.Result = OptedOut
	if o.Say != "" {
		if _, err := x.say(o.Say, false); err != nil {
			return err
		}
	}
	return x.call.Hangup(x.ctx)
}

func (x *run) gather(g *Gather, rec *StepRun) (string, error) {
	timeout, _ := time.ParseDuration(g.Timeout) // valid: Validate said so
	var finish rune
	if g.FinishOnKey != "" {
		finish = rune(g.FinishOnKey[0])
	}
	for {
		if err := x.ctx.Err(); err != nil {
			return "", err
		}
		rec.Attempts++
		var h Heard
		var timedOut bool
		var err error
		if g.Speech() {
			h, err = x.listen(g, timeout, finish)
			timedOut = h == Heard{}
			rec.Speech = &h.Text
		} else {
			h.Keys, timedOut, err = x.attempt(g, timeout, finish)
		}
		x.out.Digits += h.Keys
		input := h.Keys
		if finish != 0 {
			input = strings.TrimSuffix(input, string(finish))
		}
		if h.Text != "" {
			input = h.Text
		}
		rec.Input, rec.TimedOut = input, timedOut
		if err != nil {
			return "", err
		}
		next, ok := g.Branches[input]
		if h.Text != "" {
			var key string
			if key, ok = Match(slices.Collect(maps.Keys(g.Branches)), h.Text); ok {
				next = g.Branches[key]
			}
		}
		if ok {
			return next, nil
		}
		if rec.Attempts > g.Retries {
			if input == "" {
				return g.NoInput, nil
			}
			return g.NoMatch, nil
		}
	}
}

// listen plays a speech gather's prompt and hears the answer, spoken or,
// with dtmf too, keyed; what the callee said goes into the transcript.
func (x *run) listen(g *Gather, timeout time.Duration, finish rune) (Heard, error) {
	opts := ListenOptions{BargeIn: g.bargeIn(), Hints: g.Hints, Timeout: timeout,
		EndSilence: DefaultEndSilence, MaxSpeech: DefaultMaxSpeech}
	if len(opts.Hints) == 0 {
		opts.Hints = slices.Sorted(maps.Keys(g.Branches))
	}
	if d, err := time.ParseDuration(g.EndSilence); err == nil {
		opts.EndSilence = d
	}
	if d, err := time.ParseDuration(g.MaxSpeech); err == nil {
		opts.MaxSpeech = d
	}
	if g.DTMF() {
		opts.Keys, opts.MaxDigits, opts.FinishOnKey = true, g.MaxDigits, finish
	}
	if p := g.Prompt; p != nil {
		opts.Prompt = *p
		if p.Play == "" {
			x.said(SpeakerBot, p.Say)
		}
	}
	h, err := x.call.Listen(x.ctx, opts)
	x.said(SpeakerCallee, h.Text)
	return h, err
}

// attempt plays a gather's prompt and reads its input; a key pressed during
// the prompt is the input's first.
func (x *run) attempt(g *Gather, timeout time.Duration, finish rune) (keys string, timedOut bool, err error) {
	if p := g.Prompt; p != nil {
		var k rune
		if p.Play != "" {
			k, err = x.call.Play(x.ctx, p.Play, g.bargeIn())
		} else {
			k, err = x.say(p.Say, g.bargeIn())
		}
		if err != nil {
			return "", false, err
		}
		if k != 0 {
			keys = string(k)
			if k == finish || len(keys) >= g.MaxDigits {
				return keys, false, nil
			}
		}
	}
	more, timedOut, err := x.call.Gather(x.ctx, GatherOptions{MaxDigits: g.MaxDigits - len(keys), Timeout: timeout, FinishOnKey: finish})
	return keys + more, timedOut, err
}
