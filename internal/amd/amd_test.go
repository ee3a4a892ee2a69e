package amd

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

const ms = time.Millisecond

// seg is a stretch of synthesized audio: speech-like voice or line noise.
type seg struct {
	voice bool
	d     time.Duration
}

func v(n int) seg { return seg{true, time.Duration(n) * ms} }
func s(n int) seg { return seg{false, time.Duration(n) * ms} }

// synth renders segments at 8 kHz. Voice is a glottal-like buzz: a 200-400 Hz
// fundamental gliding over each burst, with harmonics and a syllable-shaped
// loudness that never falls below about 1000 mean absolute (the threshold is
// 256). Silence is line noise of mean absolute about 50.
func synth(rng *rand.Rand, segs ...seg) []int16 {
	var out []int16
	for _, sg := range segs {
		n := int(int64(sg.d) * SampleRate / int64(time.Second))
		if !sg.voice {
			for range n {
				out = append(out, int16(rng.IntN(201)-100))
			}
			continue
		}
		f0, f1 := 200+200*rng.Float64(), 200+200*rng.Float64()
		var phase float64
		for i := range n {
			pos := float64(i) / float64(n)
			phase += 2 * math.Pi * (f0 + (f1-f0)*pos) / SampleRate
			env := 0.6 + 0.4*math.Sin(math.Pi*pos) // louder mid-syllable
			x := math.Sin(phase) + 0.5*math.Sin(2*phase) + 0.25*math.Sin(3*phase)
			out = append(out, int16(3000*env*x+rng.NormFloat64()*60))
		}
	}
	return out
}

// greeting is a voicemail greeting read on without a breath: bursts of
// 180-350 ms with 20-40 ms gaps, too short to part words, 2.5 s of voice.
func greeting() []seg {
	segs := []seg{s(300)}
	bursts := []int{300, 220, 340, 180, 260, 320, 200, 280, 240, 160}
	gaps := []int{20, 40, 20, 40, 20, 40, 20, 40, 20}
	for i, b := range bursts {
		segs = append(segs, v(b))
		if i < len(gaps) {
			segs = append(segs, s(gaps[i]))
		}
	}
	return append(segs, s(1000))
}

func TestDecisions(t *testing.T) {
	long := DefaultConfig()
	long.MaxWordLength = time.Second
	long.Greeting = 3 * time.Second
	for _, c := range []struct {
		name  string
		cfg   Config
		segs  []seg
		want  Decision
		cause Cause
		at    time.Duration
	}{
		// Voice reaches 1.5 s inside the sixth burst: 300 ms of lead-in,
		// 300+220+340+180+260 = 1300 ms of voice with 20+40+20+40+20 ms of
		// gaps, then 200 ms more.
		{"long greeting", Config{}, greeting(), Machine, CauseLongGreeting, 300*ms + 1500*ms + 140*ms},
		{"alô then silence", Config{}, []seg{v(400), s(2000)}, Human, CauseHuman, 400*ms + 800*ms},
		{"pause, alô, silence", Config{}, []seg{s(600), v(400), s(2000)}, Human, CauseHuman, 600*ms + 400*ms + 800*ms},
		{"initial silence", Config{}, []seg{s(3000), v(500)}, Machine, CauseInitialSilence, 2500 * ms},
		// The fourth word decides 100 ms into it: 200 + 3×(200+150) + 100.
		{"max words", Config{}, []seg{s(200), v(200), s(150), v(200), s(150), v(200), s(150), v(200), s(150), v(200), s(1000)},
			Machine, CauseMaxWords, 1350 * ms},
		{"max words 5", Config{MaxWords: 5}, []seg{s(200), v(200), s(150), v(200), s(150), v(200), s(150), v(200), s(150), v(200), s(1000)},
			Machine, CauseMaxWords, 200*ms + 4*350*ms + 100*ms},
		// Blips of 80 ms every 200 ms: never a word, never a long silence.
		{"never settles", Config{}, blips(6 * time.Second), NotSure, CauseTooLong, 5000 * ms},
		{"one long word", long, []seg{s(300), v(2000), s(1000)}, Machine, CauseMaxWordLength, 300*ms + 1000*ms},
		// MaxWordLength is one word's: two words under it are no machine.
		{"words under the longest", long, []seg{s(200), v(600), s(200), v(600), s(1000)}, Human, CauseHuman, 200*ms + 600*ms + 200*ms + 600*ms + 800*ms},
		// After a word, a long silence is a person waiting, not the initial silence.
		{"silence after a word", Config{AfterGreetingSilence: 3 * time.Second}, []seg{v(400), s(4000)}, Human, CauseHuman, 400*ms + 3000*ms},
		{"time runs out first", Config{TotalAnalysisTime: time.Second}, []seg{s(3000)}, NotSure, CauseTooLong, 1000 * ms},
		// The frame that fills the analysis time is not looked at, even
		// when it would have decided.
		{"time runs out on the deciding frame", Config{TotalAnalysisTime: 1200 * ms}, []seg{v(400), s(2000)}, NotSure, CauseTooLong, 1200 * ms},
		{"time runs out a frame later", Config{TotalAnalysisTime: 1220 * ms}, []seg{v(400), s(2000)}, Human, CauseHuman, 1200 * ms},
		// Two words apart, 1.5 s of voice between them: the greeting adds up
		// every voiced frame, not only the current word's.
		{"two long words", Config{}, []seg{s(200), v(800), s(200), v(1000), s(1000)}, Machine, CauseLongGreeting, 200*ms + 800*ms + 200*ms + 700*ms},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(len(c.name))))
			got, err := Detect(c.cfg, synth(rng, c.segs...))
			if err != nil {
				t.Fatal(err)
			}
			if got.Decision != c.want || got.Cause != c.cause {
				t.Fatalf("%v %s at %v, want %v %s at %v", got.Decision, got.Cause, got.At, c.want, c.cause, c.at)
			}
			if d := got.At - c.at; d < -2*FrameLength || d > 2*FrameLength {
				t.Errorf("%v %s at %v, want at %v (within two frames)", got.Decision, got.Cause, got.At, c.at)
			}
		})
	}
}

func blips(d time.Duration) []seg {
	var segs []seg
	for t := time.Duration(0); t < d; t += 200 * ms {
		segs = append(segs, s(120), v(80))
	}
	return segs
}

// Feeding the audio in pieces of any size, frames split across calls,
// decides exactly as feeding it whole; once decided, more audio changes
// nothing.
func TestFeedInPieces(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	samples := synth(rng, append(greeting(), v(3000))...)
	whole, err := Detect(Config{}, samples)
	if err != nil {
		t.Fatal(err)
	}
	if whole.Decision != Machine {
		t.Fatalf("whole: %+v", whole)
	}
	for _, size := range []int{1, 37, FrameSamples - 1, FrameSamples, FrameSamples + 1, 1000} {
		d, err := New(Config{})
		if err != nil {
			t.Fatal(err)
		}
		var first Result
		fed := 0
		for rest := samples; len(rest) > 0; {
			n := min(size, len(rest))
			res, ok := d.Feed(rest[:n])
			rest = rest[n:]
			fed += n
			if !ok {
				if res.Decision != Undecided || res.At > time.Duration(fed)*time.Second/SampleRate {
					t.Fatalf("size %d: undecided result %+v after %d samples", size, res, fed)
				}
				continue
			}
			if first.Decision == Undecided {
				first = res
				if over := time.Duration(fed)*time.Second/SampleRate - res.At; over < 0 || over >= time.Duration(size+FrameSamples)*time.Second/SampleRate {
					t.Errorf("size %d: decided at %v but reported after %d samples", size, res.At, fed)
				}
			}
			if res != first {
				t.Fatalf("size %d: result changed from %+v to %+v", size, first, res)
			}
		}
		if first != whole {
			t.Errorf("size %d: %+v, fed whole %+v", size, first, whole)
		}
		if res, ok := d.Result(); !ok || res != whole {
			t.Errorf("size %d: Result() = %+v, %v", size, res, ok)
		}
	}
}

// Audio that ends before any rule decides leaves the detector undecided,
// saying how much it heard; a part-frame is held, not analysed.
func TestUndecided(t *testing.T) {
	d, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if res, ok := d.Result(); ok || res != (Result{}) {
		t.Fatalf("fresh detector: %+v, %v", res, ok)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	res, ok := d.Feed(synth(rng, s(1010)))
	if ok || res.Decision != Undecided || res.Cause != "" || res.At != time.Second {
		t.Errorf("1010 ms of silence: %+v, %v; want undecided at 1s", res, ok)
	}
	res, err = Detect(Config{}, nil)
	if err != nil || res != (Result{}) {
		t.Errorf("no audio: %+v, %v", res, err)
	}
}

// The threshold is on the mean absolute sample, rounded down as Asterisk's
// silence detector does: a frame at exactly the threshold is voice, one a
// hair below is silence.
func TestThreshold(t *testing.T) {
	frame := func(level int) []int16 {
		f := make([]int16, FrameSamples)
		for i := range f {
			f[i] = int16(level)
			if i%2 == 1 {
				f[i] = int16(-level)
			}
		}
		return f
	}
	for _, c := range []struct {
		level int
		nudge int // added to one sample
		voice bool
	}{
		{256, 0, true}, {256, -1, false}, {255, FrameSamples - 1, false}, {255, FrameSamples, true}, {32767, 0, true}, {0, 0, false},
	} {
		f := frame(c.level)
		f[0] += int16(c.nudge)
		var samples []int16
		for range 10 { // 200 ms: a word if voice, a between-words silence if not
			samples = append(samples, f...)
		}
		cfg := Config{InitialSilence: 200 * ms, Greeting: 200 * ms}
		res, err := Detect(cfg, samples)
		if err != nil {
			t.Fatal(err)
		}
		// Voice: the first word comes at 100 ms, so the greeting's 200 ms
		// of voice decide at 200 ms. Silence: the initial silence decides.
		want := CauseInitialSilence
		if c.voice {
			want = CauseLongGreeting
		}
		if res.Cause != want || res.At != 200*ms {
			t.Errorf("level %d%+d: %s at %v, want %s at 200ms", c.level, c.nudge, res.Cause, res.At, want)
		}
	}
	// A frame of -32768 has the largest mean there is; the top threshold
	// still hears it.
	loud := make([]int16, 10*FrameSamples)
	for i := range loud {
		loud[i] = math.MinInt16
	}
	if res, _ := Detect(Config{SilenceThreshold: 32768, Greeting: 200 * ms}, loud); res.Cause != CauseLongGreeting {
		t.Errorf("full scale against the top threshold: %+v", res)
	}
}

// A word needs MinWordLength of voice with BetweenWordsSilence before it to
// count: shorter gaps join voice into one word, and voice on the very first
// frame is no new word.
func TestWordCounting(t *testing.T) {
	for _, c := range []struct {
		name string
		segs []seg
		want Cause
	}{
		{"three words after a pause", []seg{s(100), v(120), s(60), v(120), s(60), v(120), s(1000)}, CauseMaxWords},
		{"the first from the first frame", []seg{v(120), s(60), v(120), s(60), v(120), s(1000)}, CauseHuman},
		{"runs and gaps of exactly the minimum", []seg{s(100), v(100), s(60), v(100), s(60), v(100), s(1000)}, CauseMaxWords},
		{"shorter gaps", []seg{s(100), v(120), s(40), v(120), s(40), v(120), s(1000)}, CauseHuman},
		{"runs under 100 ms", []seg{s(100), v(120), s(60), v(80), s(60), v(80), s(60), v(80), s(1000)}, CauseHuman},
	} {
		rng := rand.New(rand.NewPCG(4, 4))
		// 60 ms, not 50, as silence is heard 20 ms at a time.
		res, err := Detect(Config{BetweenWordsSilence: 60 * ms, MaxWords: 3}, synth(rng, c.segs...))
		if err != nil {
			t.Fatal(err)
		}
		if res.Cause != c.want {
			t.Errorf("%s: %v %s at %v, want %s", c.name, res.Decision, res.Cause, res.At, c.want)
		}
	}
}

func TestConfig(t *testing.T) {
	want := Config{
		InitialSilence: 2500 * ms, Greeting: 1500 * ms, AfterGreetingSilence: 800 * ms,
		TotalAnalysisTime: 5000 * ms, MinWordLength: 100 * ms, BetweenWordsSilence: 50 * ms,
		MaxWords: 4, SilenceThreshold: 256, MaxWordLength: 5000 * ms,
	}
	if DefaultConfig() != want {
		t.Errorf("defaults %+v, want Asterisk's but for MaxWords 4 %+v", DefaultConfig(), want)
	}
	d, err := New(Config{Greeting: 2 * time.Second, MaxWords: 5})
	if err != nil {
		t.Fatal(err)
	}
	got := d.Config()
	want.Greeting, want.MaxWords = 2*time.Second, 5
	if got != want {
		t.Errorf("zero fields should take the defaults: %+v", got)
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero config: %v", err)
	}

	for _, c := range []struct {
		cfg  Config
		want []string
	}{
		{Config{InitialSilence: -1}, []string{"InitialSilence is -1ns", "positive"}},
		{Config{Greeting: -time.Second}, []string{"Greeting is -1s"}},
		{Config{AfterGreetingSilence: -ms}, []string{"AfterGreetingSilence"}},
		{Config{TotalAnalysisTime: -ms}, []string{"TotalAnalysisTime"}},
		{Config{MinWordLength: -ms}, []string{"MinWordLength"}},
		{Config{BetweenWordsSilence: -ms}, []string{"BetweenWordsSilence"}},
		{Config{MaxWordLength: -ms}, []string{"MaxWordLength"}},
		{Config{MaxWords: -2}, []string{"MaxWords is -2"}},
		{Config{SilenceThreshold: -1}, []string{"SilenceThreshold is -1", "between 1 and 32768"}},
		{Config{SilenceThreshold: 40000}, []string{"SilenceThreshold is 40000"}},
		{Config{Greeting: -ms, MaxWords: -1}, []string{"Greeting", "MaxWords"}},
	} {
		err := c.cfg.Validate()
		if err == nil {
			t.Errorf("%+v was accepted", c.cfg)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: error %q does not say %q", c.cfg, err, w)
			}
		}
		if d, err := New(c.cfg); d != nil || err == nil {
			t.Errorf("New(%+v) = %v, %v", c.cfg, d, err)
		}
		if _, err := Detect(c.cfg, make([]int16, SampleRate)); err == nil {
			t.Errorf("Detect with %+v ran", c.cfg)
		}
	}
}

func TestStrings(t *testing.T) {
	for d, want := range map[Decision]string{Undecided: "UNDECIDED", Human: "HUMAN", Machine: "MACHINE", NotSure: "NOTSURE"} {
		if d.String() != want {
			t.Errorf("%d: %q, want %q", int(d), d.String(), want)
		}
	}
}
