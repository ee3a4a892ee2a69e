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
	// Each track is placed by when its frames were sent or came, so a
	// loaded machine may delay a stretch of either (Track.Write): judge
	// the tones by how much of each the recording holds and in what
	// order, in 20 ms blocks, not at fixed offsets.
	const block = pcm.PhoneFrame
	level := func(i int, freq float64) float64 {
		return pcm.ToneLevel(rec.Samples[i*block:(i+1)*block], pcm.PhoneRate, freq)
	}
	var ours, theirs []int // the blocks where each tone is present
	for i := 0; (i+1)*block <= len(rec.Samples); i++ {
		if level(i, 440) > 3000 {
			ours = append(ours, i)
		}
		if level(i, 1000) > 3000 {
			theirs = append(theirs, i)
		}
	}
	if len(ours) == 0 || len(theirs) == 0 {
		t.Fatalf("440 Hz in %d blocks, 1000 Hz in %d: a tone is missing", len(ours), len(theirs))
	}
	// Our 1.5 s prompt whole and once: 75 blocks, give or take the
	// blocks a stretch's edges straddle (counted when the tone fills more
	// than 3/8 of them: between 3/4 of a block fewer and 5/4 more).
	stretches := 1
	for i := 1; i < len(ours); i++ {
		if ours[i] != ours[i-1]+1 {
			stretches++
		}
	}
	if n := len(ours); 4*n > 4*75+5*stretches || 4*n < 4*75-3*stretches {
		t.Errorf("440 Hz in %d blocks of 20 ms over %d stretches, want the 1.5 s prompt's 75", n, stretches)
	}
	// Ours alone: the far end heard 50 frames before it played, so those
	// come before its first, and it was quiet till then.
	first, last := theirs[0], ours[len(ours)-1]
	alone, before := 0, 0 // blocks of ours before theirs, and their stretches
	for k, i := range ours {
		if i < first {
			alone++
			if k == 0 || ours[k-1] != i-1 {
				before++
			}
		}
	}
	// Less a block at each stretch's edges, and the one theirs begins in.
	if alone < 49-before {
		t.Errorf("440 Hz alone in %d blocks before the far end's tone, want at least 49 less one a stretch (1 s of the prompt)", alone)
	}
	if l := pcm.ToneLevel(rec.Samples[:max(first-1, 0)*block], pcm.PhoneRate, 1000); l > 300 {
		t.Errorf("1000 Hz in the %d ms before the far end played: level %.0f", (first-1)*20, l)
	}
	// Both: the far end's tone began while our prompt still played.
	if first >= last {
		t.Errorf("the far end's tone first at %d ms, after our prompt's end at %d ms: never mixed", first*20, last*20)
	}
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
	if l := pcm.ToneLevel(rec.Samples[min((last+2)*block, len(rec.Samples)):], pcm.PhoneRate, 440); l > 300 {
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
