package amd

import (
	"bytes"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"time"

	"dialbox/internal/audio"
	"dialbox/internal/testtool"
)

// Real speech: espeak-ng reads Vietnamese, resampled to the phone's 8 kHz and
// set in line noise as a call would carry it. A voicemail greeting read out
// is a machine, decided while it still talks; a lone "Alô" is a person,
// decided 800 ms after it ends. It skips where espeak-ng is not installed,
// unless DIALBOX_REQUIRE_TOOLS=1 says it must run.
func TestEspeakVietnamese(t *testing.T) {
	path := testtool.Require(t, "espeak-ng", "espeak-ng")
	const lead = 400 * time.Millisecond
	for _, c := range []struct {
		text string
		want Decision
	}{
		{"Xin chào, bạn đã gọi tới hộp thư thoại của Nguyễn Văn An. Hiện tôi không thể nghe máy, xin vui lòng để lại lời nhắn sau tiếng bíp.", Machine},
		{"Alô?", Human},
	} {
		cmd := exec.Command(path, "-v", "vi", "--stdout")
		cmd.Stdin = strings.NewReader(c.text) // never taken for an option
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("espeak-ng: %v: %s", err, stderr.Bytes())
		}
		b, err := audio.DecodeWAV(bytes.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		speech, err := audio.ResampleBuffer(b, SampleRate)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(5, 5))
		samples := synth(rng, seg{false, lead})
		samples = append(samples, speech.Samples...)
		samples = append(samples, synth(rng, s(2000))...)

		res, err := Detect(Config{}, samples)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%q: %v of speech (%s): %v %s at %v", c.text, speech.Duration(), voicing(speech.Samples), res.Decision, res.Cause, res.At)
		if res.Decision != c.want {
			t.Errorf("%q: %v %s at %v, want %v", c.text, res.Decision, res.Cause, res.At, c.want)
			continue
		}
		switch c.want {
		case Machine:
			if end := lead + speech.Duration(); res.At > end {
				t.Errorf("%q: decided at %v, after the greeting ended at %v", c.text, res.At, end)
			}
		case Human:
			// lead is whole frames, so the speech's frames are the detector's.
			wordEnd := lead + time.Duration(strings.LastIndexByte(voicing(speech.Samples), '#')+1)*FrameLength
			if want := wordEnd + 800*time.Millisecond; res.At != want {
				t.Errorf("%q: decided at %v, want 800 ms after the word ends at %v", c.text, res.At, wordEnd)
			}
		}
	}
}

// voicing draws the frames as the detector hears them: # voice, . silence.
func voicing(samples []int16) string {
	var sb strings.Builder
	for _, f := range audio.Frames(samples, FrameSamples) {
		if audio.MeanAbs(f) >= float64(DefaultConfig().SilenceThreshold) {
			sb.WriteByte('#')
		} else {
			sb.WriteByte('.')
		}
	}
	return sb.String()
}
