package sipcall

import (
	"context"
	"time"

	"dialbox/internal/amd"
)

// HearOptions say how Line.Hear captures one utterance of the callee
// (docs/voicebot.md#listening-on-a-real-call). A zero duration takes its default.
type HearOptions struct {
	// Prompt is played first (8 kHz mono samples, only read); nil for
	// none.
	Prompt []int16
	// BargeIn: the callee starting to speak (or pressing a key, with
	// Keys) stops Prompt, and that speech is the utterance.
	BargeIn bool
	// Keys: a key press is an answer instead of speech.
	Keys bool
	// Timeout is how long to wait, after Prompt, for speech (or a key) to
	// start.
	Timeout time.Duration
	// EndSilence is the silence that ends an utterance; MaxSpeech the
	// longest one (at most MaxUtterance).
	EndSilence, MaxSpeech time.Duration
}

// Defaults and bounds of HearOptions.
const (
	DefaultHearTimeout = 5 * time.Second
	DefaultEndSilence  = 700 * time.Millisecond
	DefaultMaxSpeech   = 10 * time.Second
	// MaxUtterance bounds what one utterance holds in memory, whatever
	// MaxSpeech asks.
	MaxUtterance = time.Minute
)

// Utterance is what Hear captured: speech, or the key pressed instead, or
// neither (silence).
type Utterance struct {
	// Speech is 8 kHz mono 16-bit PCM: from a little before the voice
	// started (preRoll) to the end of the silence that ended it.
	Speech []int16
	Key    rune
}

// How the voice is told from silence: AMD's measure (amd.Voiced) with its
// default threshold; a word starts once voice has lasted AMD's
// MinWordLength, so a click does not. preRoll keeps the audio just before
// that, where a word's soft start is.
var (
	voiceThreshold = amd.DefaultConfig().SilenceThreshold
	wordStart      = amd.DefaultConfig().MinWordLength
)

const (
	preRoll     = 200 * time.Millisecond
	framePeriod = 20 * time.Millisecond
	frameLen    = 160 // samples in 20 ms at 8 kHz
)

// vad finds one utterance in the callee's audio, 20 ms frame by frame,
// in the audio's time: what it decides does not depend on when packets
// arrive.
type vad struct {
	startAfter, endAfter, maxFrames int // in frames

	part    []int16   // the next frame, as far as it came
	before  [][]int16 // the last frames before the start: preRoll and the word's start
	speech  []int16
	voiced  int // consecutive voiced frames, before the start
	silent  int // consecutive silent frames, after it
	frames  int // frames since the start
	started bool
	done    bool
}

func newVAD(endSilence, maxSpeech time.Duration) *vad {
	frames := func(d time.Duration) int { return max(1, int((d+framePeriod-1)/framePeriod)) }
	return &vad{startAfter: frames(wordStart), endAfter: frames(endSilence), maxFrames: frames(maxSpeech)}
}

// feed takes samples as they came and says whether the utterance has
// ended.
func (v *vad) feed(samples []int16) bool {
	for len(samples) > 0 && !v.done {
		n := min(frameLen-len(v.part), len(samples))
		v.part = append(v.part, samples[:n]...)
		samples = samples[n:]
		if len(v.part) == frameLen {
			v.step(v.part)
			v.part = nil
		}
	}
	return v.done
}

func (v *vad) step(frame []int16) {
	voiced := amd.Voiced(frame, voiceThreshold)
	if !v.started {
		v.before = append(v.before, frame)
		if keep := v.startAfter + int(preRoll/framePeriod); len(v.before) > keep {
			v.before = v.before[len(v.before)-keep:]
		}
		if !voiced {
			v.voiced = 0
			return
		}
		if v.voiced++; v.voiced < v.startAfter {
			return
		}
		v.started = true
		for _, f := range v.before {
			v.speech = append(v.speech, f...)
		}
		v.before, v.frames = nil, v.voiced
		return
	}
	v.speech = append(v.speech, frame...)
	v.frames++
	if voiced {
		v.silent = 0
	} else {
		v.silent++
	}
	v.done = v.silent >= v.endAfter || v.frames >= v.maxFrames
}

// Hear plays o.Prompt, then captures the callee's next utterance
// (docs/voicebot.md#listening-on-a-real-call): it starts when the voice has lasted
// a word's start and ends after o.EndSilence of silence or at o.MaxSpeech.
// With o.BargeIn, speech (or a key, with o.Keys) during the prompt stops
// it; without, what is said meanwhile is not heard and keys wait. No
// speech or key within o.Timeout after the prompt: an empty Utterance.
func (l *Line) Hear(ctx context.Context, o HearOptions) (Utterance, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultHearTimeout
	}
	if o.EndSilence <= 0 {
		o.EndSilence = DefaultEndSilence
	}
	if o.MaxSpeech <= 0 {
		o.MaxSpeech = DefaultMaxSpeech
	}
	o.MaxSpeech = min(o.MaxSpeech, MaxUtterance)
	v := newVAD(o.EndSilence, o.MaxSpeech)
	var keys <-chan rune
	if o.Keys {
		keys = l.keys
	}
	defer l.heard.on.Store(false)

	var key rune
	if len(o.Prompt) > 0 {
		interrupt := func() bool { return false }
		if o.BargeIn {
			l.drain()
			l.heard.on.Store(true)
			interrupt = func() bool {
				select {
				case key = <-keys:
					return true
				default:
				}
				for {
					select {
					case f := <-l.heard.frames:
						if v.feed(f) || v.started {
							return true
						}
					default:
						return false
					}
				}
			}
		}
		if err := l.play(ctx, o.Prompt, interrupt); err != nil {
			return Utterance{}, err
		}
		if key != 0 {
			return Utterance{Key: key}, nil
		}
	}
	if !v.started {
		l.drain()
	}
	l.heard.on.Store(true)

	start := time.NewTimer(o.Timeout)
	defer start.Stop()
	// The audio's time ends an utterance; this wall-clock bound only
	// covers a far end that stops sending in the middle of one.
	var stalled <-chan time.Time
	for !v.done {
		if v.started && stalled == nil {
			t := time.NewTimer(o.MaxSpeech + o.EndSilence + time.Second)
			defer t.Stop()
			stalled = t.C
		}
		select {
		case k := <-keys:
			if !v.started {
				return Utterance{Key: k}, nil
			}
			// A key in the middle of speech waits for the next gather.
		case f := <-l.heard.frames:
			v.feed(f)
		case <-start.C:
			if !v.started {
				return Utterance{}, nil
			}
		case <-stalled:
			v.done = true
		case <-ctx.Done():
			return Utterance{}, context.Cause(ctx)
		}
	}
	return Utterance{Speech: v.speech}, nil
}

// drain drops the audio heard before now: a new listener starts with what
// comes next.
func (l *Line) drain() {
	for {
		select {
		case <-l.heard.frames:
		default:
			return
		}
	}
}
