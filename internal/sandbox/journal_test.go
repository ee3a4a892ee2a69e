package sandbox

import (
	"bytes"
	"dialbox/internal/config"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestJournalKeepsAnswersCheaply: an answer a little larger than what the
// journal keeps is referenced, not copied; a much larger one is copied in
// part, so the journal never pins big bodies; both read back the same.
func TestJournalKeepsAnswersCheaply(t *testing.T) {
	j := NewJournal(config.JournalConfig{MaxEntries: 10, MaxAge: config.Duration{Duration: time.Hour}, MaxBodyBytes: 100, MaxBytes: 1 << 20})
	small, big := bytes.Repeat([]byte("s"), 150), bytes.Repeat([]byte("b"), 10_000)
	for _, body := range [][]byte{small, big} {
		w := j.Begin(httptest.NewRecorder(), httptest.NewRequest("GET", "/x", nil), "B")
		w.Write(body)
		j.End(w)
	}
	if kept := j.ring[0].response; &kept[0] != &small[0] {
		t.Error("a 150-byte answer was copied")
	}
	if kept := j.ring[1].response; cap(kept) > 200 || &kept[0] == &big[0] {
		t.Errorf("a 10,000-byte answer is pinned (capacity %d)", cap(kept))
	}
	entries, _ := j.Find(JournalFilter{}, 10)
	for i, want := range []string{strings.Repeat("b", 100), strings.Repeat("s", 100)} {
		if e := entries[i]; e.ResponseBody != want || !e.ResponseTruncated {
			t.Errorf("entry %d: %q truncated=%v", i, e.ResponseBody, e.ResponseTruncated)
		}
	}
}

func TestJournalMaxAge(t *testing.T) {
	j := NewJournal(config.JournalConfig{MaxEntries: 10, MaxAge: config.Duration{Duration: time.Hour}, MaxBytes: 1 << 20})
	now := time.Now()
	for _, at := range []time.Time{now.Add(-3 * time.Hour), now.Add(-2 * time.Hour), now.Add(-time.Minute), now} {
		j.Add(&JournalEntry{At: at, Operation: "A"})
	}
	list, total := j.Find(JournalFilter{}, 10)
	if total != 2 || list[0].ID != 4 || list[1].ID != 3 {
		t.Errorf("entries older than max_age kept: %d %+v", total, list)
	}
	if NewJournal(config.JournalConfig{MaxEntries: 0}) != nil {
		t.Error("max_entries = 0 must turn the journal off")
	}
}
