package audio

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// feed writes tone (at freq, amp) to tr in 20 ms frames from from to to,
// each frame at its time plus jitter(i).
func feed(tr *Track, freq, amp float64, from, to time.Duration, jitter func(i int) time.Duration) {
	n := int((to - from) / (20 * time.Millisecond))
	s := tone(PhoneRate, freq, amp, float64(n)*0.02)
	for i := range n {
		at := from + time.Duration(i)*20*time.Millisecond
		if jitter != nil {
			at += jitter(i)
		}
		tr.Write(at, s[i*PhoneFrame:(i+1)*PhoneFrame])
	}
}

func readRecording(t *testing.T, path string) []int16 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := DecodeWAV(f)
	if err != nil {
		t.Fatal(err)
	}
	if b.Rate != PhoneRate {
		t.Fatalf("rate %d", b.Rate)
	}
	return b.Samples
}

// level is the Goertzel amplitude of freq in s between from and to.
func level(s []int16, freq float64, from, to time.Duration) float64 {
	return goertzel(s[samplesIn(from):samplesIn(to)], PhoneRate, freq)
}

func newTestRecorder(t *testing.T) (*Recorder, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "call.wav")
	r, err := NewRecorder(path)
	if err != nil {
		t.Fatal(err)
	}
	return r, path
}

// TestRecorderMixesTracks: what was sent (1 kHz, 0-1 s) and what was heard
// (1.6 kHz, 0.5-1.5 s) are both in the file at their times, silence
// elsewhere, and the file is as long as the call.
func TestRecorderMixesTracks(t *testing.T) {
	r, path := newTestRecorder(t)
	sent, heard := r.Track(), r.Track()
	feed(sent, 1000, 8000, 0, time.Second, nil)
	// The far end's packets arrive with up to 15 ms of jitter.
	feed(heard, 1600, 8000, 500*time.Millisecond, 1500*time.Millisecond, func(i int) time.Duration {
		return time.Duration(i*7%16) * time.Millisecond
	})
	size, err := r.Close(2 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s := readRecording(t, path)
	if len(s) != 2*PhoneRate || size != 44+4*PhoneRate {
		t.Fatalf("%d samples, %d bytes; want 2 s", len(s), size)
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, c := range []struct {
		freq     float64
		from, to int
		present  bool
	}{
		{1000, 40, 960, true}, {1000, 1060, 1980, false},
		{1600, 40, 460, false}, {1600, 540, 1460, true}, {1600, 1560, 1980, false},
	} {
		l := level(s, c.freq, ms(c.from), ms(c.to))
		if c.present != (l > 4000) || !c.present && l > 100 {
			t.Errorf("%.0f Hz at %d-%d ms: level %.0f, want present=%v", c.freq, c.from, c.to, l, c.present)
		}
	}
	if _, err := os.Stat(path + TempSuffix); !os.IsNotExist(err) {
		t.Errorf("the temporary file is left: %v", err)
	}
}

// TestRecorderJitterKeepsAudioWhole: frames arriving up to 50 ms late go
// end to end: a steady tone has no hole and no doubled frame.
func TestRecorderJitterKeepsAudioWhole(t *testing.T) {
	r, path := newTestRecorder(t)
	tr := r.Track()
	feed(tr, 500, 6000, 0, time.Second, func(i int) time.Duration {
		return time.Duration(i*37%51) * time.Millisecond
	})
	if _, err := r.Close(time.Second); err != nil {
		t.Fatal(err)
	}
	s := readRecording(t, path)
	for f, frame := range Frames(s, PhoneFrame) {
		if rms := RMS(frame); rms < 3000 || rms > 5000 {
			t.Fatalf("frame %d: RMS %.0f, want the tone's 4243", f, rms)
		}
	}
}

// TestRecorderGapsAndEnd: a track that stops for a second resumes at its
// time, silence in between; audio past the call's end is cut; a call with
// no audio is silence of its length.
func TestRecorderGapsAndEnd(t *testing.T) {
	r, path := newTestRecorder(t)
	tr := r.Track()
	feed(tr, 700, 8000, 0, 500*time.Millisecond, nil)
	feed(tr, 700, 8000, 1500*time.Millisecond, 3*time.Second, nil)
	if _, err := r.Close(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	s := readRecording(t, path)
	if len(s) != 2*PhoneRate {
		t.Fatalf("%d samples, want 2 s", len(s))
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	if l := level(s, 700, ms(20), ms(480)); l < 4000 {
		t.Errorf("before the gap: %.0f", l)
	}
	if rms := RMS(s[samplesIn(ms(520)):samplesIn(ms(1480))]); rms != 0 {
		t.Errorf("the gap is not silent: RMS %.1f", rms)
	}
	if l := level(s, 700, ms(1520), ms(2000)); l < 4000 {
		t.Errorf("after the gap: %.0f", l)
	}

	r, path = newTestRecorder(t)
	if _, err := r.Close(1500 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if s := readRecording(t, path); len(s) != 12000 || RMS(s) != 0 {
		t.Errorf("no audio: %d samples at RMS %.1f, want 1.5 s of silence", len(s), RMS(s))
	}
}

// TestRecorderSaturates: two loud tracks add up to the 16-bit limits, never
// wrapping round.
func TestRecorderSaturates(t *testing.T) {
	r, path := newTestRecorder(t)
	a, b := r.Track(), r.Track()
	loud := make([]int16, PhoneFrame)
	quiet := make([]int16, PhoneFrame)
	for i := range loud {
		loud[i], quiet[i] = 30000, -30000
	}
	a.Write(0, loud)
	b.Write(0, loud)
	a.Write(20*time.Millisecond, quiet)
	b.Write(20*time.Millisecond, quiet)
	if _, err := r.Close(40 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	s := readRecording(t, path)
	if s[0] != math.MaxInt16 || s[PhoneFrame] != math.MinInt16 {
		t.Errorf("mixed %d and %d, want %d and %d", s[0], s[PhoneFrame], math.MaxInt16, math.MinInt16)
	}
}

// TestRecorderStreams: a long call goes to disk as it is recorded (the
// temporary file grows; the window is all that is held), a frame older
// than the window is lost, and one far ahead of the clock is dropped.
func TestRecorderStreams(t *testing.T) {
	r, path := newTestRecorder(t)
	tr := r.Track()
	feed(tr, 400, 5000, 0, 60*time.Second, nil)
	r.mu.Lock()
	r.w.Flush()
	r.mu.Unlock()
	fi, err := os.Stat(path + TempSuffix)
	if err != nil || fi.Size() < 44+2*55*PhoneRate {
		t.Fatalf("after 60 s the temporary file holds %v bytes (%v), want the first 58 s", fi.Size(), err)
	}
	late := r.Track()
	late.Write(10*time.Second, make([]int16, PhoneFrame)) // long written: lost
	ahead := r.Track()
	loud := make([]int16, PhoneFrame)
	for i := range loud {
		loud[i] = 20000
	}
	ahead.Write(59*time.Second, loud)
	ahead.Write(59*time.Second+20*time.Millisecond, loud)
	tr.Write(60*time.Second, make([]int16, PhoneFrame))
	if _, err := r.Close(61 * time.Second); err != nil {
		t.Fatal(err)
	}
	s := readRecording(t, path)
	if len(s) != 61*PhoneRate {
		t.Fatalf("%d samples, want 61 s", len(s))
	}
	if l := level(s, 400, 30*time.Second, 31*time.Second); l < 4000 {
		t.Errorf("the tone at 30 s: %.0f", l)
	}
}

// TestRecorderAbortAndFailure: Abort leaves nothing; a Close that cannot
// rename (its folder gone) fails and leaves nothing either.
func TestRecorderAbortAndFailure(t *testing.T) {
	r, path := newTestRecorder(t)
	r.Track().Write(0, make([]int16, PhoneFrame))
	r.Abort()
	if _, err := os.Stat(path + TempSuffix); !os.IsNotExist(err) {
		t.Errorf("Abort left the temporary file: %v", err)
	}
	if _, err := r.Close(time.Second); err == nil {
		t.Error("Close after Abort succeeded")
	}

	dir := filepath.Join(t.TempDir(), "rec")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	r, err := NewRecorder(filepath.Join(dir, "call.wav"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Close(time.Second); err == nil {
		t.Error("Close into a removed folder succeeded")
	}
	if _, err := NewRecorder(filepath.Join(dir, "other.wav")); err == nil {
		t.Error("NewRecorder into a missing folder succeeded")
	}
}
