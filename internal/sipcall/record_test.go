package sipcall

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	pcm "dialbox/internal/audio"
	"dialbox/internal/sipcall/sipcalltest"

	"github.com/emiago/diago"
)

// TestCallRecords: while we play a 440 Hz prompt for 1.5 s then 0.5 s of
// silence, the far end is silent for 1 s then plays 1 kHz: the recording
// is as long as the call talked and holds each tone where it was, alone
// then mixed, and an unanswered call leaves no file.
func TestCallRecords(t *testing.T) {
	t.Parallel()
	fe := newFarEnd(t, false, func(d *diago.DialogServerSession) {
		if d.Answer() != nil {
			return
		}
		go sipcalltest.SendAudio(d, append(make([]byte, 16000), sipcalltest.ToneAt(1000, 2000)...))
		listen(t, d, nil)
	})
	u := newTestUA(t, fe.trunk("udp"), nil)
	path := filepath.Join(t.TempDir(), "call.wav")
	prompt := append(tone(1500), make([]int16, 4000)...)
	res := call(u, testCtx(t), prompt, func(r *CallRequest) { r.Record = path })
	checkEnd(t, res, true, EndPromptDone, 200, OutcomeAnswered)
	if res.RecordingErr != nil {
		t.Fatal(res.RecordingErr)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rec, err := pcm.DecodeWAV(f)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	if fi.Size() != res.RecordingSize {
		t.Errorf("file of %d bytes, result says %d", fi.Size(), res.RecordingSize)
	}
	t.Logf("talked %v, recorded %v", res.TalkTime, rec.Duration())
	if diff := rec.Duration() - res.TalkTime; diff < -20*time.Millisecond || diff > 20*time.Millisecond {
		t.Errorf("recorded %v of a call that talked %v", rec.Duration(), res.TalkTime)
	}
	at := func(from, to int) []int16 {
		return rec.Samples[min(8*from, len(rec.Samples)):min(8*to, len(rec.Samples))]
	}
	for _, c := range []struct {
		freq     float64
		from, to int // ms
		present  bool
	}{
		{440, 100, 900, true}, {1000, 100, 850, false}, // ours alone
		{440, 1150, 1400, true}, {1000, 1150, 1400, true}, // both
		{440, 1650, 1950, false}, {1000, 1650, 1950, true}, // theirs alone
	} {
		l := pcm.ToneLevel(at(c.from, c.to), pcm.PhoneRate, c.freq)
		if c.present != (l > 3000) || !c.present && l > 300 {
			t.Errorf("%.0f Hz at %d-%d ms: level %.0f, want present=%v", c.freq, c.from, c.to, l, c.present)
		}
	}
	if _, err := os.Stat(path + pcm.TempSuffix); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}

	busy := newFarEnd(t, false, func(d *diago.DialogServerSession) { d.Respond(486, "Busy Here", nil) })
	u = newTestUA(t, busy.trunk("udp"), nil)
	none := filepath.Join(t.TempDir(), "busy.wav")
	res = call(u, testCtx(t), prompt, func(r *CallRequest) { r.Record = none })
	if _, err := os.Stat(none); !os.IsNotExist(err) || res.RecordingSize != 0 {
		t.Errorf("a busy call was recorded: %v, size %d", err, res.RecordingSize)
	}
}
