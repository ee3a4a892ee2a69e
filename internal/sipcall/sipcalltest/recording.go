package sipcalltest

import (
	"testing"

	pcm "dialbox/internal/audio"
)

// CheckTwoTones judges the recording of a call where we played a 440 Hz
// prompt of promptBlocks 20 ms blocks and the far end a 1000 Hz tone it
// began after hearing heard of our frames. Each track
// is placed by when its frames were sent or came, so a loaded machine may
// delay a stretch of either: it judges how much of each tone the
// recording holds and in what order, in blocks, not at fixed offsets. It
// returns the blocks each tone is present in, for a caller's own checks
// of what follows.
func CheckTwoTones(t testing.TB, samples []int16, promptBlocks, heard int) (ours, theirs []int) {
	t.Helper()
	const block = pcm.PhoneFrame
	blocks := len(samples) / block
	for i := range blocks {
		if ToneLevel(samples, i, i+1, 440) > 3000 {
			ours = append(ours, i)
		}
		if ToneLevel(samples, i, i+1, 1000) > 3000 {
			theirs = append(theirs, i)
		}
	}
	if len(ours) == 0 || len(theirs) == 0 {
		t.Fatalf("440 Hz in %d blocks, 1000 Hz in %d: a tone is missing", len(ours), len(theirs))
	}
	// Our prompt whole and once, give or take the blocks a stretch's edges
	// straddle (counted when the tone fills more than 3/8 of them: between
	// 3/4 of a block fewer and 5/4 more).
	stretches := 1
	for i := 1; i < len(ours); i++ {
		if ours[i] != ours[i-1]+1 {
			stretches++
		}
	}
	if n := len(ours); 4*n > 4*promptBlocks+5*stretches || 4*n < 4*promptBlocks-3*stretches {
		t.Errorf("440 Hz in %d blocks of 20 ms over %d stretches, want the prompt's %d", n, stretches, promptBlocks)
	}
	// Ours alone: the far end heard that many frames before it played, so
	// those come before its first, and it was quiet till then.
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
	if alone < heard-1-before {
		t.Errorf("440 Hz alone in %d blocks before the far end's tone, want at least %d less one a stretch", alone, heard-1)
	}
	if l := ToneLevel(samples, 0, first-1, 1000); l > 300 {
		t.Errorf("1000 Hz in the %d ms before the far end played: level %.0f", (first-1)*20, l)
	}
	// Both: the far end's tone began while our prompt still played.
	if first >= last {
		t.Errorf("the far end's tone first at %d ms, after our prompt's end at %d ms: never mixed", first*20, last*20)
	}
	return ours, theirs
}

// ToneLevel is the level of freq over the 20 ms blocks [from, to) of
// samples, each bound kept within the recording.
func ToneLevel(samples []int16, from, to int, freq float64) float64 {
	const block = pcm.PhoneFrame
	blocks := len(samples) / block
	from = min(max(from, 0), blocks)
	return pcm.ToneLevel(samples[from*block:min(max(to, from), blocks)*block], pcm.PhoneRate, freq)
}
