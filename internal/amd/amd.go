package amd

import (
	"errors"
	"fmt"
	"time"

	"dialbox/internal/audio"
)

// The audio the detector reads: 8 kHz mono signed 16-bit PCM, judged 20 ms
// at a time.
const (
	SampleRate   = 8000
	FrameSamples = SampleRate / 50
	FrameLength  = 20 * time.Millisecond
)

// Decision is what answered the call.
type Decision int

const (
	// Undecided: the detector has not seen enough audio yet.
	Undecided Decision = iota
	Human
	Machine
	// NotSure: the analysis time ran out before any rule decided.
	NotSure
)

// String gives Asterisk's AMDSTATUS words.
func (d Decision) String() string {
	switch d {
	case Human:
		return "HUMAN"
	case Machine:
		return "MACHINE"
	case NotSure:
		return "NOTSURE"
	}
	return "UNDECIDED"
}

// Cause names the rule that decided, with Asterisk's AMDCAUSE words (without
// the numbers Asterisk appends).
type Cause string

const (
	CauseInitialSilence Cause = "INITIALSILENCE" // Machine: no word before InitialSilence
	CauseLongGreeting   Cause = "LONGGREETING"   // Machine: the greeting's voice reached Greeting
	CauseMaxWordLength  Cause = "MAXWORDLENGTH"  // Machine: one word lasted MaxWordLength
	CauseMaxWords       Cause = "MAXWORDS"       // Machine: MaxWords words counted
	CauseHuman          Cause = "HUMAN"          // Human: a short greeting, then AfterGreetingSilence
	CauseTooLong        Cause = "TOOLONG"        // NotSure: TotalAnalysisTime passed
)

// Result is the detector's verdict.
type Result struct {
	Decision Decision
	Cause    Cause // empty while Undecided
	// At is how much audio had been fed, counted from the first sample,
	// when the decision was made: always a whole number of frames, as the
	// detector decides at the end of a frame.
	At time.Duration
}

// Config holds the parameters of Asterisk's AMD() application. A zero field
// takes its default (see DefaultConfig); durations count audio, not wall
// clock, and are reached in 20 ms steps.
type Config struct {
	InitialSilence       time.Duration // longest silence before the first word
	Greeting             time.Duration // most voice a human's greeting holds
	AfterGreetingSilence time.Duration // silence after the greeting that says human
	TotalAnalysisTime    time.Duration // when to give up as not sure
	MinWordLength        time.Duration // shortest voiced run that is a word
	BetweenWordsSilence  time.Duration // shortest silence that ends a word
	MaxWords             int           // word count at which it is a machine
	SilenceThreshold     int           // a frame whose mean absolute sample is below this is silent
	MaxWordLength        time.Duration // longest single word a human says
}

// DefaultConfig returns Asterisk's defaults but one: MaxWords is 4, not
// Asterisk's 2. Vietnamese words are single syllables, often parted by a
// stop, so a person's "Alô, ai vậy?" counts three or four; on the espeak-ng
// corpus (docs/voicebot.md, "Measured") 3 took 4.9% of people for machines,
// 4 none, and long greetings are still caught by Greeting.
func DefaultConfig() Config {
	return Config{
		InitialSilence:       2500 * time.Millisecond,
		Greeting:             1500 * time.Millisecond,
		AfterGreetingSilence: 800 * time.Millisecond,
		TotalAnalysisTime:    5000 * time.Millisecond,
		MinWordLength:        100 * time.Millisecond,
		BetweenWordsSilence:  50 * time.Millisecond,
		MaxWords:             4,
		SilenceThreshold:     256,
		MaxWordLength:        5000 * time.Millisecond,
	}
}

// maxThreshold is the largest mean absolute value a 16-bit frame can have
// (every sample -32768); a higher threshold would hear nothing at all.
const maxThreshold = 32768

// withDefaults fills the zero fields and checks the rest, naming every bad
// field at once.
func (c Config) withDefaults() (Config, error) {
	def := DefaultConfig()
	var errs []error
	dur := func(name string, v *time.Duration, d time.Duration) {
		switch {
		case *v == 0:
			*v = d
		case *v < 0:
			errs = append(errs, fmt.Errorf("amd: %s is %v; it must be positive (or zero for the default, %v)", name, *v, d))
		}
	}
	dur("InitialSilence", &c.InitialSilence, def.InitialSilence)
	dur("Greeting", &c.Greeting, def.Greeting)
	dur("AfterGreetingSilence", &c.AfterGreetingSilence, def.AfterGreetingSilence)
	dur("TotalAnalysisTime", &c.TotalAnalysisTime, def.TotalAnalysisTime)
	dur("MinWordLength", &c.MinWordLength, def.MinWordLength)
	dur("BetweenWordsSilence", &c.BetweenWordsSilence, def.BetweenWordsSilence)
	dur("MaxWordLength", &c.MaxWordLength, def.MaxWordLength)
	switch {
	case c.MaxWords == 0:
		c.MaxWords = def.MaxWords
	case c.MaxWords < 0:
		errs = append(errs, fmt.Errorf("amd: MaxWords is %d; it must be positive (or zero for the default, %d)", c.MaxWords, def.MaxWords))
	}
	switch {
	case c.SilenceThreshold == 0:
		c.SilenceThreshold = def.SilenceThreshold
	case c.SilenceThreshold < 0 || c.SilenceThreshold > maxThreshold:
		errs = append(errs, fmt.Errorf("amd: SilenceThreshold is %d; it must be between 1 and %d (or zero for the default, %d)", c.SilenceThreshold, maxThreshold, def.SilenceThreshold))
	}
	return c, errors.Join(errs...)
}

// Validate says what is wrong with c, if anything.
func (c Config) Validate() error {
	_, err := c.withDefaults()
	return err
}

// Detector decides, from the first seconds of what the callee sends, whether
// a person or an answering machine picked up. It is not safe for concurrent
// use; one call feeds one detector.
type Detector struct {
	cfg Config

	frame []int16 // the part of the next frame fed so far
	res   Result

	total      time.Duration // audio analysed
	voice      time.Duration // voiced audio, all runs together
	voiceRun   time.Duration // the current word: voice not broken by BetweenWordsSilence
	silenceRun time.Duration // consecutive silent frames
	words      int
	inSilence  bool // a word ended, so the next one counts
	inGreeting bool // the first word came
}

// New returns a detector with cfg's parameters, or an error naming each bad
// one.
func New(cfg Config) (*Detector, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Detector{cfg: cfg, frame: make([]int16, 0, FrameSamples)}, nil
}

// Config returns the parameters in use, defaults filled in.
func (d *Detector) Config() Config { return d.cfg }

// Feed analyses samples (8 kHz; any number, a 20 ms RTP frame being the
// usual) and reports the decision once there is one: ok is true from the
// frame that decided on, and later calls return the same Result without
// looking at their samples. A part-frame left over waits for the next call.
func (d *Detector) Feed(samples []int16) (res Result, ok bool) {
	for len(samples) > 0 && d.res.Decision == Undecided {
		n := min(FrameSamples-len(d.frame), len(samples))
		d.frame = append(d.frame, samples[:n]...)
		samples = samples[n:]
		if len(d.frame) == FrameSamples {
			d.step(d.frame)
			d.frame = d.frame[:0]
		}
	}
	return d.Result()
}

// Result returns the decision so far: ok is false (and the Result Undecided,
// At the audio analysed) until one is made.
func (d *Detector) Result() (Result, bool) {
	if d.res.Decision == Undecided {
		return Result{At: d.total}, false
	}
	return d.res, true
}

// voiced judges a frame with the detector's threshold.
func (d *Detector) voiced(frame []int16) bool { return Voiced(frame, d.cfg.SilenceThreshold) }

// Voiced says whether a frame is voice by the detector's measure: its mean
// absolute sample reaches threshold (Config.SilenceThreshold), in integers
// as Asterisk's silence detector rounds the mean down. A listening script
// hears an utterance start and end by it (internal/sipcall).
func Voiced(frame []int16, threshold int) bool {
	return audio.SumAbs(frame) >= int64(threshold)*int64(len(frame))
}

// step judges one frame, checking the rules in the order Asterisk does.
func (d *Detector) step(frame []int16) {
	c := &d.cfg
	d.total += FrameLength
	decide := func(dec Decision, cause Cause) { d.res = Result{Decision: dec, Cause: cause, At: d.total} }
	// The frame that fills the analysis time is not looked at.
	if d.total >= c.TotalAnalysisTime {
		decide(NotSure, CauseTooLong)
		return
	}
	if !d.voiced(frame) {
		d.silenceRun += FrameLength
		if d.silenceRun >= c.BetweenWordsSilence {
			d.inSilence, d.voiceRun = true, 0
		}
		switch {
		case !d.inGreeting && d.silenceRun >= c.InitialSilence:
			decide(Machine, CauseInitialSilence)
		case d.inGreeting && d.silenceRun >= c.AfterGreetingSilence:
			decide(Human, CauseHuman)
		}
		return
	}
	d.silenceRun = 0
	d.voiceRun += FrameLength
	d.voice += FrameLength
	if d.inSilence && d.voiceRun >= c.MinWordLength {
		d.words++
		d.inSilence = false
	}
	switch {
	case d.voiceRun >= c.MaxWordLength:
		decide(Machine, CauseMaxWordLength)
	case d.words >= c.MaxWords:
		decide(Machine, CauseMaxWords)
	case d.inGreeting && d.voice >= c.Greeting:
		decide(Machine, CauseLongGreeting)
	case d.voiceRun >= c.MinWordLength:
		d.inGreeting = true
	}
}

// Detect runs a detector with cfg over a whole recording. If the recording
// ends first, the Result is Undecided with At the audio analysed; a last
// part-frame is not analysed.
func Detect(cfg Config, samples []int16) (Result, error) {
	d, err := New(cfg)
	if err != nil {
		return Result{}, err
	}
	res, _ := d.Feed(samples)
	return res, nil
}
