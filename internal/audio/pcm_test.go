package audio

import (
	"bytes"
	"math"
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	for _, c := range []struct {
		b    Buffer
		want time.Duration
	}{
		{Buffer{Rate: 8000, Samples: make([]int16, 8000)}, time.Second},
		{Buffer{Rate: 8000, Samples: make([]int16, 160)}, 20 * time.Millisecond},
		{Buffer{Rate: 22050, Samples: make([]int16, 11025)}, 500 * time.Millisecond},
		{Buffer{Rate: 0, Samples: make([]int16, 10)}, 0},
	} {
		if got := c.b.Duration(); got != c.want {
			t.Errorf("%d samples at %d Hz: %v, want %v", len(c.b.Samples), c.b.Rate, got, c.want)
		}
	}
}

func TestEnergy(t *testing.T) {
	if RMS(nil) != 0 || MeanAbs(nil) != 0 {
		t.Error("no samples should have no energy")
	}
	square := []int16{1000, -1000, 1000, -1000}
	if RMS(square) != 1000 || MeanAbs(square) != 1000 {
		t.Errorf("square wave of 1000: RMS %v, mean abs %v", RMS(square), MeanAbs(square))
	}
	sine := tone(8000, 997, 10000, 1) // not a divisor of the rate, so the samples cover the whole cycle
	if got, want := RMS(sine), 10000/math.Sqrt2; math.Abs(got-want) > 1 {
		t.Errorf("sine of amplitude 10000: RMS %.1f, want %.1f", got, want)
	}
	if got, want := MeanAbs(sine), 10000*2/math.Pi; math.Abs(got-want) > 10 {
		t.Errorf("sine of amplitude 10000: mean abs %.1f, want %.1f", got, want)
	}
	if got := MeanAbs([]int16{math.MinInt16}); got != 32768 {
		t.Errorf("mean abs of -32768: %v", got)
	}
}

func TestPCM16Bytes(t *testing.T) {
	samples := []int16{0, 1, -1, 0x1234, math.MinInt16}
	want := []byte{0, 0, 1, 0, 0xff, 0xff, 0x34, 0x12, 0x00, 0x80}
	b := EncodePCM16(samples)
	if !bytes.Equal(b, want) {
		t.Fatalf("% x, want % x", b, want)
	}
	back, err := DecodePCM16(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range samples {
		if back[i] != samples[i] {
			t.Fatalf("round trip %v, want %v", back, samples)
		}
	}
	if _, err := DecodePCM16(b[:3]); err == nil {
		t.Error("an odd number of bytes was accepted")
	}
}

func TestFrames(t *testing.T) {
	samples := make([]int16, 2*PhoneFrame+10)
	for i := range samples {
		samples[i] = int16(i + 1)
	}
	frames := Frames(samples, PhoneFrame)
	if len(frames) != 3 {
		t.Fatalf("%d frames, want 3", len(frames))
	}
	for i, f := range frames {
		if len(f) != PhoneFrame {
			t.Fatalf("frame %d has %d samples", i, len(f))
		}
	}
	if frames[1][0] != PhoneFrame+1 || frames[2][9] != 2*PhoneFrame+10 || frames[2][10] != 0 || frames[2][PhoneFrame-1] != 0 {
		t.Errorf("frames do not hold the samples in order, padded with silence")
	}
	// Appending to a frame must not overwrite the next one.
	_ = append(frames[0], 0)
	if frames[1][0] != PhoneFrame+1 {
		t.Error("frames[0] has capacity over frames[1]")
	}
	if len(Frames(samples[:PhoneFrame], PhoneFrame)) != 1 || Frames(nil, PhoneFrame) != nil || Frames(samples, 0) != nil {
		t.Error("exact, empty or zero-size framing is wrong")
	}
	if PhoneFrame != 160 {
		t.Errorf("20 ms at 8 kHz is 160 samples, not %d", PhoneFrame)
	}
}

// TestDTMF: each key is its row's and its column's tone, and nothing of
// the other rows and columns.
func TestDTMF(t *testing.T) {
	rows := []float64{697, 770, 852, 941}
	cols := []float64{1209, 1336, 1477, 1633}
	for i, key := range "123A456B789C*0#D" {
		s := DTMF(key, 800)
		for r, f := range rows {
			if l := ToneLevel(s, PhoneRate, f); (r == i/4) != (l > 6000) {
				t.Errorf("key %c: %.0f Hz at %.0f", key, f, l)
			}
		}
		for c, f := range cols {
			if l := ToneLevel(s, PhoneRate, f); (c == i%4) != (l > 6000) {
				t.Errorf("key %c: %.0f Hz at %.0f", key, f, l)
			}
		}
	}
	if DTMF('x', 10) != nil {
		t.Error("a rune that is no key has tones")
	}
}
