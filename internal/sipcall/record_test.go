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
// silence, the far end listens to 1 s of it then plays 1 kHz: the
// recording is as long as the call talked and holds each tone where it
// was, alone then mixed, and an unanswered call leaves no file.
func TestCallRecords(t *testing.T) {
	t.Parallel()
	fe := newFarEnd(t, false, func(d *diago.DialogServerSession) {
		if d.Answer() != nil {
			return
		}
		// The far end's tone starts on the prompt's own clock, after 50
		// of its 20 ms frames, not on the wall's.
		listen(t, d, func(packets int) bool { return packets >= 50 })
		go sipcalltest.SendAudio(d, sipcalltest.ToneAt(1000, 2000))
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
	// Our 1.5 s prompt is 75 blocks; the far end played after 50 frames.
	ours, theirs := sipcalltest.CheckTwoTones(t, rec.Samples, 75, 50)
	last := ours[len(ours)-1]
	// Theirs alone: after our prompt only 1000 Hz, as long as the call
	// went on.
	theirsAfter := 0
	for _, i := range theirs {
		if i > last {
			theirsAfter++
		}
	}
	if theirsAfter == 0 {
		t.Errorf("no 1000 Hz after our prompt's end at %d ms", last*20)
	}
	if l := sipcalltest.ToneLevel(rec.Samples, last+2, len(rec.Samples), 440); l > 300 {
		t.Errorf("440 Hz after our prompt's end at %d ms: level %.0f", last*20, l)
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
