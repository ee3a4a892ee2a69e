package dialer

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"dialbox/internal/audio"
	"dialbox/internal/script"
)

// How the simulator times a script (docs/voicebot.md#the-simulator), in
// simulated time, which time_scale shortens.
const (
	simSayPerChar   = 70 * time.Millisecond // a say lasts its text's characters ({{fields}} filled in) times this
	simPlayTime     = 3 * time.Second       // a play, whose file the simulator does not read
	simTransferTime = time.Second
	simKeyGap       = 200 * time.Millisecond // between two keys the callee presses
	simDigitsDelay  = time.Second            // digits_delay when a rule leaves it out
	simSaysDelay    = time.Second            // says_delay when a rule leaves it out
)

// Why a simulated script stopped before its end.
var (
	ErrCalleeHungUp = errors.New("the callee hung up")
	ErrMaxDuration  = errors.New("max_duration reached")
)

// simCall is the callee of a simulated answered call, as a script.Call: it
// presses its keys digitsDelay after the script first asks for keys (a
// gather's prompt or reading), one every simKeyGap, and the call is cut at
// end (the callee hanging up, or max_duration). Its clock is simulated
// time since the answer; every step waits it out, scaled.
type simCall struct {
	d       *Sim
	cancel  context.CancelCauseFunc
	elapsed time.Duration // simulated time since the answer
	end     time.Duration // the call is cut then; 0: never
	endWhy  error
	sayTime func(text string) time.Duration

	keys    string
	delay   time.Duration
	asked   time.Duration // when the script first asked for keys; -1: not yet
	next    int           // keys[next] is the next key to press
	pressed []simKey      // the keys pressed, for the recording

	// What the callee says: says[turn] at the next listening turn, saysDelay
	// after it begins.
	says      []string
	saysDelay time.Duration
	turn      int
}

// simKey is a key the callee pressed, at simulated time since the answer.
type simKey struct {
	at  time.Duration
	key rune
}

// press takes the next key, pressed now.
func (c *simCall) press() rune {
	k := rune(c.keys[c.next])
	c.next++
	c.pressed = append(c.pressed, simKey{c.elapsed, k})
	return k
}

// keyAt is when the next key is pressed; false when the callee has no more
// keys, or has not been asked yet.
func (c *simCall) keyAt() (time.Duration, bool) {
	if c.asked < 0 || c.next >= len(c.keys) {
		return 0, false
	}
	return c.asked + c.delay + time.Duration(c.next)*simKeyGap, true
}

func (c *simCall) ask() {
	if c.asked < 0 {
		c.asked = c.elapsed
	}
}

// advance lets simulated time dur pass, scaled; it cuts the call at end,
// and fails once ctx is done (the engine stopping, or the cut).
func (c *simCall) advance(ctx context.Context, dur time.Duration) error {
	if dur < 0 {
		dur = 0
	}
	cut := c.end > 0 && c.elapsed+dur >= c.end
	if cut {
		dur = c.end - c.elapsed
	}
	if _, ok := c.d.sleep(ctx, dur); !ok {
		return context.Cause(ctx)
	}
	c.elapsed += dur
	if cut {
		c.cancel(c.endWhy)
		return c.endWhy
	}
	return nil
}

// speak is a say or play of simulated length dur: with bargeIn, a key
// pressed before its end stops it and is returned.
func (c *simCall) speak(ctx context.Context, dur time.Duration, bargeIn bool) (rune, error) {
	if bargeIn {
		c.ask()
		if at, ok := c.keyAt(); ok && at < c.elapsed+dur {
			if err := c.advance(ctx, at-c.elapsed); err != nil {
				return 0, err
			}
			return c.press(), nil
		}
	}
	return 0, c.advance(ctx, dur)
}

func (c *simCall) Say(ctx context.Context, text string, bargeIn bool) (rune, error) {
	return c.speak(ctx, c.sayTime(text), bargeIn)
}

func (c *simCall) Play(ctx context.Context, _ string, bargeIn bool) (rune, error) {
	return c.speak(ctx, simPlayTime, bargeIn)
}

func (c *simCall) Gather(ctx context.Context, opts script.GatherOptions) (string, bool, error) {
	c.ask()
	var keys []byte
	for len(keys) < opts.MaxDigits {
		at, ok := c.keyAt()
		if !ok || at-c.elapsed > opts.Timeout {
			return string(keys), true, c.advance(ctx, opts.Timeout)
		}
		if err := c.advance(ctx, at-c.elapsed); err != nil {
			return string(keys), false, err
		}
		k := c.press()
		keys = append(keys, byte(k))
		if opts.FinishOnKey != 0 && k == opts.FinishOnKey {
			break
		}
	}
	return string(keys), false, nil
}

// Listen is one listening turn (docs/sandbox.md#spoken-answers): the
// callee starts saying its next utterance saysDelay after the turn begins
// (its prompt's start), which with opts.BargeIn stops the prompt, and
// otherwise waits for the prompt's end; it speaks as long as a say of its
// text (at most opts.MaxSpeech), and is heard opts.EndSilence later, word
// for word. A key (with opts.Keys) that comes first is the answer instead.
// Speech that would start after opts.Timeout, or an utterance "", or no
// utterance left, is silence.
func (c *simCall) Listen(ctx context.Context, opts script.ListenOptions) (script.Heard, error) {
	var prompt time.Duration
	switch {
	case opts.Prompt.Play != "":
		prompt = simPlayTime
	case opts.Prompt.Say != "":
		prompt = c.sayTime(opts.Prompt.Say)
	}
	begin := c.elapsed
	var text string
	if c.turn < len(c.says) {
		text = c.says[c.turn]
		c.turn++
	}
	// When the callee starts to speak, and how long the turn lasts before
	// it is heard; never: silence.
	never := time.Duration(-1)
	speaks := never
	if strings.TrimSpace(text) != "" {
		speaks = begin + c.saysDelay
		if !opts.BargeIn {
			speaks = max(speaks, begin+prompt)
		}
		if speaks > begin+prompt+opts.Timeout {
			speaks = never
		}
	}
	if opts.Keys {
		if c.asked < 0 { // keys count from the first time the script asks
			c.asked = begin
			if !opts.BargeIn {
				c.asked = begin + prompt
			}
		}
		if at, ok := c.keyAt(); ok && (speaks == never || at < speaks) && at <= begin+prompt+opts.Timeout {
			return c.listenKeys(ctx, opts, begin+prompt)
		}
	}
	if speaks == never {
		return script.Heard{}, c.advance(ctx, begin+prompt+opts.Timeout-c.elapsed)
	}
	talk := min(c.sayTime(text), opts.MaxSpeech)
	if err := c.advance(ctx, speaks+talk+opts.EndSilence-c.elapsed); err != nil {
		return script.Heard{}, err
	}
	return script.Heard{Text: text}, nil
}

// listenKeys is a listening turn the callee answers with keys: a key
// during the prompt stops it (barge-in), then the keys are read as a
// gather reads them.
func (c *simCall) listenKeys(ctx context.Context, opts script.ListenOptions, promptEnd time.Duration) (script.Heard, error) {
	k, err := c.speak(ctx, promptEnd-c.elapsed, opts.BargeIn)
	if err != nil {
		return script.Heard{}, err
	}
	var keys string
	if k != 0 {
		keys = string(k)
		if k == opts.FinishOnKey || len(keys) >= opts.MaxDigits {
			return script.Heard{Keys: keys}, nil
		}
	}
	more, _, err := c.Gather(ctx, script.GatherOptions{MaxDigits: opts.MaxDigits - len(keys), Timeout: opts.Timeout, FinishOnKey: opts.FinishOnKey})
	return script.Heard{Keys: keys + more}, err
}

func (c *simCall) Transfer(ctx context.Context, _ string) error {
	return c.advance(ctx, simTransferTime)
}

func (c *simCall) Hangup(context.Context) error { return nil }

// simKeyTone is how long a key pressed sounds in a simulated recording.
const simKeyTone = 100 * time.Millisecond

// writeSimRecording is a simulated call's recording at path: as long as
// its talk, silent but for the callee's keys, each a DTMF tone at the
// moment it was pressed (docs/voicebot.md#recordings). It returns the
// file's size.
func writeSimRecording(path string, talk time.Duration, keys []simKey) (int64, error) {
	rec, err := audio.NewRecorder(path)
	if err != nil {
		return 0, err
	}
	for _, k := range keys {
		rec.Track().Write(k.at, audio.DTMF(k.key, int(simKeyTone*audio.PhoneRate/time.Second)))
	}
	return rec.Close(talk)
}

// sayLength is the simulated length of a say: its text's characters times
// simSayPerChar.
func sayLength(text string) time.Duration {
	return time.Duration(utf8.RuneCountInString(text)) * simSayPerChar
}
