package sipcall

import (
	"testing"
	"time"
)

// frames is n 20 ms frames at level (a constant mean absolute sample).
func frames(n int, level int16) []int16 {
	s := make([]int16, n*frameLen)
	for i := range s {
		s[i] = level
		if i%2 == 1 {
			s[i] = -level
		}
	}
	return s
}

// TestVADWordsNotClicks: voice shorter than a word's start (100 ms) does
// not start an utterance; one that does ends after end_silence, fed in
// packets of any size, with the pre-roll before it.
func TestVADWordsNotClicks(t *testing.T) {
	v := newVAD(300*time.Millisecond, 10*time.Second)
	var audio []int16
	audio = append(audio, frames(20, 0)...)
	audio = append(audio, frames(4, 3000)...) // 80 ms: a click
	audio = append(audio, frames(20, 100)...) // below the threshold
	audio = append(audio, frames(25, 3000)...)
	audio = append(audio, frames(30, 0)...)
	done := false
	for len(audio) > 0 && !done {
		n := min(97, len(audio)) // packets that are no whole frame
		done = v.feed(audio[:n])
		audio = audio[n:]
	}
	if !done {
		t.Fatal("the utterance did not end")
	}
	got := time.Duration(len(v.speech)) * time.Second / 8000
	if want := preRoll + 500*time.Millisecond + 300*time.Millisecond; got != want {
		t.Errorf("utterance of %v, want %v", got, want)
	}
	if v.speech[0] != 100 && v.speech[0] != -100 {
		t.Errorf("the pre-roll starts with %d, want the quiet frames before the word", v.speech[0])
	}
}
