package audio

import (
	"math"
	"testing"
)

func tone(rate int, freq, amp float64, seconds float64) []int16 {
	out := make([]int16, int(float64(rate)*seconds))
	for i := range out {
		out[i] = int16(math.Round(amp * math.Sin(2*math.Pi*freq*float64(i)/float64(rate))))
	}
	return out
}

// middle drops the first and last quarter second, where the filter meets
// the silence beyond the ends.
func middle(s []int16, rate int) []int16 {
	edge := rate / 4
	return s[edge : len(s)-edge]
}

// goertzel is the amplitude of the freq component of s.
func goertzel(s []int16, rate int, freq float64) float64 { return ToneLevel(s, rate, freq) }

// zeroCrossingFreq estimates the frequency of a pure tone.
func zeroCrossingFreq(s []int16, rate int) float64 {
	crossings := 0
	for i := 1; i < len(s); i++ {
		if (s[i-1] < 0) != (s[i] < 0) {
			crossings++
		}
	}
	return float64(crossings) / 2 / (float64(len(s)) / float64(rate))
}

func db(ratio float64) float64 { return 20 * math.Log10(ratio) }

func expectLen(t *testing.T, got, in, from, to int) {
	t.Helper()
	want := int(math.Round(float64(in) * float64(to) / float64(from)))
	if d := got - want; d < -2 || d > 2 {
		t.Errorf("%d -> %d Hz: %d samples in, %d out, want %d", from, to, in, got, want)
	}
}

func TestResampleKeepsOneKilohertz(t *testing.T) {
	const amp = 16000.0
	for _, from := range []int{22050, 16000, 44100, 48000, 11025, 8000} {
		in := tone(from, 1000, amp, 2)
		out, err := Resample(in, from, PhoneRate)
		if err != nil {
			t.Fatal(err)
		}
		expectLen(t, len(out), len(in), from, PhoneRate)
		mid := middle(out, PhoneRate)
		if f := zeroCrossingFreq(mid, PhoneRate); math.Abs(f-1000) > 5 {
			t.Errorf("%d Hz -> 8 kHz: the tone is at %.1f Hz, want 1000", from, f)
		}
		got := goertzel(mid, PhoneRate, 1000)
		if d := db(got / amp); math.Abs(d) > 0.5 {
			t.Errorf("%d Hz -> 8 kHz: 1 kHz amplitude %.0f, %.3f dB off (want within 0.5 dB)", from, got, d)
		}
		t.Logf("%d Hz -> 8 kHz: 1 kHz at %.4f dB", from, db(got/amp))
	}
}

func TestResampleStopsAboveNyquist(t *testing.T) {
	const amp = 16000.0
	for _, from := range []int{22050, 16000, 44100, 48000} {
		in := tone(from, 5000, amp, 2)
		out, err := Resample(in, from, PhoneRate)
		if err != nil {
			t.Fatal(err)
		}
		// Whatever comes through has aliased somewhere below 4 kHz; RMS
		// catches it wherever it landed.
		inRMS := RMS(middle(in, from))
		att := db(RMS(middle(out, PhoneRate)) / inRMS)
		if att > -40 {
			t.Errorf("%d Hz -> 8 kHz: a 5 kHz tone comes out at %.1f dB, want below -40 dB", from, att)
		}
		t.Logf("%d Hz -> 8 kHz: 5 kHz at %.1f dB", from, att)
	}
}

func TestResampleDCAndLength(t *testing.T) {
	for _, c := range []struct{ from, to, n int }{
		{22050, 8000, 22050}, {44100, 8000, 12345}, {48000, 8000, 1001},
		{8000, 16000, 8000}, {8000, 44100, 3333}, {44101, 8000, 44101}, {16000, 8000, 1},
	} {
		in := make([]int16, c.n)
		for i := range in {
			in[i] = 12000
		}
		out, err := Resample(in, c.from, c.to)
		if err != nil {
			t.Fatal(err)
		}
		expectLen(t, len(out), c.n, c.from, c.to)
		if len(out) < c.to/10 {
			continue // too short to have a middle away from the edges
		}
		// Away from the edges, by more than the filter's half length.
		for i := c.to / 50; i < len(out)-c.to/50; i++ {
			if d := int(out[i]) - 12000; d < -1 || d > 1 {
				t.Errorf("%d -> %d Hz: DC 12000 came out as %d at sample %d", c.from, c.to, out[i], i)
				break
			}
		}
	}
}

func TestResampleUpKeepsToneAndRejectsImages(t *testing.T) {
	const amp = 16000.0
	in := tone(PhoneRate, 1000, amp, 2)
	out, err := Resample(in, PhoneRate, 48000)
	if err != nil {
		t.Fatal(err)
	}
	mid := middle(out, 48000)
	if d := db(goertzel(mid, 48000, 1000) / amp); math.Abs(d) > 0.5 {
		t.Errorf("8 -> 48 kHz: 1 kHz %.3f dB off", d)
	}
	// Upsampling by zero-stuffing makes images at 7, 9, 15 kHz...; the
	// low-pass must remove them.
	for _, img := range []float64{7000, 9000, 15000} {
		if d := db(goertzel(mid, 48000, img) / amp); d > -40 {
			t.Errorf("8 -> 48 kHz: image at %.0f Hz only %.1f dB down", img, d)
		}
	}
}

func TestResampleIdentityAndErrors(t *testing.T) {
	in := tone(8000, 440, 9000, 0.1)
	out, err := Resample(in, 8000, 8000)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("identity: %d samples, want %d", len(out), len(in))
	}
	for i := range in {
		if out[i] != in[i] {
			t.Fatalf("identity changed sample %d: %d -> %d", i, in[i], out[i])
		}
	}
	out[0] = 1234
	if in[0] == 1234 {
		t.Fatal("identity returned the input slice itself, not a copy")
	}
	for _, r := range [][2]int{{0, 8000}, {8000, 0}, {-1, 8000}, {8000, 2_000_000}} {
		if _, err := Resample(in, r[0], r[1]); err == nil {
			t.Errorf("Resample from %d to %d Hz: no error", r[0], r[1])
		}
	}
	if out, err := Resample(nil, 22050, 8000); err != nil || len(out) != 0 {
		t.Errorf("empty input: %v, %d samples", err, len(out))
	}
}

func TestResampleBuffer(t *testing.T) {
	b, err := ResampleBuffer(Buffer{Rate: 16000, Samples: make([]int16, 16000)}, PhoneRate)
	if err != nil || b.Rate != PhoneRate || len(b.Samples) != 8000 {
		t.Fatalf("got rate %d, %d samples, %v", b.Rate, len(b.Samples), err)
	}
}

func BenchmarkResample22050To8000(b *testing.B) {
	in := tone(22050, 1000, 16000, 1)
	for b.Loop() {
		if _, err := Resample(in, 22050, PhoneRate); err != nil {
			b.Fatal(err)
		}
	}
}
