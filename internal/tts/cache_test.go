package tts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"dialbox/internal/audio"
)

// counting is an engine that says how often it was asked.
type counting struct {
	name  string
	mu    sync.Mutex
	calls int
	fail  error
}

func (c *counting) Name() string { return c.name }

func (c *counting) Synthesize(_ context.Context, text, voice string) (audio.Buffer, error) {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	if c.fail != nil {
		return audio.Buffer{}, c.fail
	}
	b := toneBuffer(audio.PhoneRate, 0.25)
	b.Samples[0] = int16(len(text)) // renderings of different texts differ
	return b, nil
}

func cacheFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestCacheReusesRenderings(t *testing.T) {
	dir := t.TempDir()
	eng := &counting{name: "fake"}
	c, err := NewCache(dir, eng, CacheLimits{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := c.Synthesize(ctx, "Xin chào anh An", "vi")
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Synthesize(ctx, "Xin chào anh An", "vi")
	if err != nil {
		t.Fatal(err)
	}
	if eng.calls != 1 {
		t.Fatalf("the engine ran %d times for one text", eng.calls)
	}
	if again.Rate != first.Rate || len(again.Samples) != len(first.Samples) || again.Samples[0] != first.Samples[0] || again.Samples[100] != first.Samples[100] {
		t.Fatal("the cached rendering differs from the engine's")
	}

	// Another text, another voice, another engine: each its own rendering.
	c.Synthesize(ctx, "Xin chào chị Bình", "vi")
	c.Synthesize(ctx, "Xin chào anh An", "vi+f2")
	other, _ := NewCache(dir, &counting{name: "other"}, CacheLimits{})
	other.Synthesize(ctx, "Xin chào anh An", "vi")
	if eng.calls != 3 {
		t.Errorf("engine ran %d times, want 3", eng.calls)
	}

	st, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	size := int64(44 + 2*len(first.Samples))
	if st != (CacheStats{Entries: 4, Bytes: 4 * size, Hits: 1, Misses: 3}) {
		t.Errorf("stats %+v, want 4 entries of %d bytes, 1 hit, 3 misses", st, size)
	}
	for _, name := range cacheFiles(t, dir) {
		if !strings.HasSuffix(name, ".wav") {
			t.Errorf("%s left in the cache", name)
		}
	}

	// After a restart the renderings are still there.
	eng2 := &counting{name: "fake"}
	restarted, _ := NewCache(dir, eng2, CacheLimits{})
	if _, err := restarted.Synthesize(ctx, "Xin chào anh An", "vi"); err != nil || eng2.calls != 0 {
		t.Errorf("after a restart: %v, engine ran %d times", err, eng2.calls)
	}
}

func TestCacheRerendersCorruptEntries(t *testing.T) {
	dir := t.TempDir()
	eng := &counting{name: "fake"}
	c, _ := NewCache(dir, eng, CacheLimits{})
	ctx := context.Background()
	want, _ := c.Synthesize(ctx, "xin chào", "vi")
	path := filepath.Join(dir, cacheFiles(t, dir)[0])
	full, _ := os.ReadFile(path)

	for _, damage := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"garbage", []byte("not a wav at all")},
		{"cut short", full[:len(full)/2]},
		{"wrong rate", wavBytes(t, toneBuffer(16000, 0.1))},
	} {
		if err := os.WriteFile(path, damage.data, 0o644); err != nil {
			t.Fatal(err)
		}
		// A new process: the one before answers from memory.
		c, _ = NewCache(dir, eng, CacheLimits{})
		calls := eng.calls
		got, err := c.Synthesize(ctx, "xin chào", "vi")
		if err != nil || eng.calls != calls+1 {
			t.Fatalf("%s entry: %v, engine ran %d times", damage.name, err, eng.calls-calls)
		}
		if got.Rate != audio.PhoneRate || len(got.Samples) != len(want.Samples) {
			t.Fatalf("%s entry: answered %d samples at %d Hz", damage.name, len(got.Samples), got.Rate)
		}
		if repaired, _ := os.ReadFile(path); string(repaired) != string(full) {
			t.Fatalf("%s entry was not replaced", damage.name)
		}
	}
}

// TestCacheKeepsRenderingsInMemory: a rendering used again is answered
// from memory, not read and decoded from its file, and memory holds no
// more than its bound, the least recently used going first.
func TestCacheKeepsRenderingsInMemory(t *testing.T) {
	dir := t.TempDir()
	eng := &counting{name: "fake"}
	c, err := NewCache(dir, eng, CacheLimits{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, _ := c.Synthesize(ctx, "một", "vi")
	size := 2 * int64(len(first.Samples))
	c.memLimit = 2 * size

	// Its file gone, the rendering is still answered, and counted a hit.
	for _, name := range cacheFiles(t, dir) {
		os.Remove(filepath.Join(dir, name))
	}
	again, err := c.Synthesize(ctx, "một", "vi")
	if err != nil || eng.calls != 1 || &again.Samples[0] != &first.Samples[0] {
		t.Fatalf("used again: %v, engine ran %d times, shared %v", err, eng.calls, &again.Samples[0] == &first.Samples[0])
	}
	if st, _ := c.Stats(); st.Hits != 1 || st.Misses != 1 {
		t.Errorf("stats %+v, want 1 hit and 1 miss", st)
	}

	c.Synthesize(ctx, "hai", "vi")
	c.Synthesize(ctx, "ba", "vi")
	if c.memBytes != 2*size || c.mem.Len() != 2 {
		t.Errorf("memory holds %d renderings, %d bytes; want 2, %d", c.mem.Len(), c.memBytes, 2*size)
	}
	calls := eng.calls
	c.Synthesize(ctx, "một", "vi") // out of memory, and of the disk
	if eng.calls != calls+1 {
		t.Error("the least recently used rendering was not the one let go")
	}
	c.Synthesize(ctx, "ba", "vi")
	if eng.calls != calls+1 {
		t.Error("a rendering in memory was rendered again")
	}
}

func TestCacheErrors(t *testing.T) {
	dir := t.TempDir()
	boom := errors.New("engine down")
	c, _ := NewCache(dir, &counting{name: "fake", fail: boom}, CacheLimits{})
	if _, err := c.Synthesize(context.Background(), "x", "vi"); !errors.Is(err, boom) {
		t.Fatalf("error %v, want the engine's", err)
	}
	if files := cacheFiles(t, dir); len(files) != 0 {
		t.Fatalf("a failure left %v", files)
	}

	// A cache directory that vanished is an error, not a silent re-render.
	gone := filepath.Join(t.TempDir(), "cache")
	c, _ = NewCache(gone, &counting{name: "fake"}, CacheLimits{})
	os.RemoveAll(gone)
	if _, err := c.Synthesize(context.Background(), "x", "vi"); err == nil || !strings.Contains(err.Error(), "tts cache") {
		t.Errorf("error %v, want the cache's", err)
	}
	if _, err := c.Stats(); err == nil {
		t.Error("Stats of a missing directory: no error")
	}
	if _, err := NewCache(filepath.Join(dir, "\x00"), &counting{}, CacheLimits{}); err == nil {
		t.Error("NewCache accepted an impossible directory")
	}
}

// The real engines behind a cache: the command runs once for a text.
func TestCacheWithCommand(t *testing.T) {
	cmd, argsFile := helperCommand(t, "wav", "--", "{text}")
	c, _ := NewCache(t.TempDir(), cmd, CacheLimits{})
	if _, err := c.Synthesize(context.Background(), "một", "vi"); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(argsFile); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Synthesize(context.Background(), "một", "vi"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(argsFile); !errors.Is(err, os.ErrNotExist) {
		t.Error("the command ran again for a cached text")
	}
}

// Calls run at once share the cache: each gets its own text's rendering,
// each text is rendered once however many ask for it at the same time, and
// every entry on disk is whole.
func TestCacheConcurrent(t *testing.T) {
	dir := t.TempDir()
	engine := &counting{name: "fake"}
	c, _ := NewCache(dir, engine, CacheLimits{})
	texts := []string{"một", "hai", "ba hai", "bốn bốn"}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			text := texts[i%len(texts)]
			b, err := c.Synthesize(context.Background(), text, "vi")
			if err == nil && b.Samples[0] != int16(len(text)) {
				err = errors.New("got another text's rendering")
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if st, _ := c.Stats(); st.Entries != len(texts) || st.Hits+st.Misses != 64 || st.Misses != int64(len(texts)) {
		t.Errorf("stats %+v, want %d entries, 64 calls, %d misses", st, len(texts), len(texts))
	}
	if engine.calls != len(texts) {
		t.Errorf("the engine rendered %d times, want once per text (%d)", engine.calls, len(texts))
	}
	if files := cacheFiles(t, dir); len(files) != len(texts) {
		t.Errorf("files %v", files)
	}
}

// bounded is a cache of dir with limits, on a clock the test moves.
func bounded(t *testing.T, dir string, eng Engine, limits CacheLimits, clock *time.Time) *Cache {
	t.Helper()
	c, err := NewCache(dir, eng, limits)
	if err != nil {
		t.Fatal(err)
	}
	c.now = func() time.Time { return *clock }
	return c
}

// entrySize is the file of one of counting's renderings.
var entrySize = int64(44 + 2*len(toneBuffer(audio.PhoneRate, 0.25).Samples))

// TestCacheBoundedBySize: a text per contact never takes the cache past
// MaxBytes; the least recently used go first, so a text spoken on every
// call stays.
func TestCacheBoundedBySize(t *testing.T) {
	dir := t.TempDir()
	eng := &counting{name: "fake"}
	clock := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	limit := 10 * entrySize
	c := bounded(t, dir, eng, CacheLimits{MaxBytes: limit}, &clock)
	ctx := context.Background()
	for i := range 40 {
		clock = clock.Add(time.Second)
		if _, err := c.Synthesize(ctx, "Xin chào, mời bạn nghe", "vi"); err != nil {
			t.Fatal(err)
		}
		clock = clock.Add(time.Second)
		if _, err := c.Synthesize(ctx, fmt.Sprintf("Xin chào khách hàng số %d", i), "vi"); err != nil {
			t.Fatal(err)
		}
		if st, _ := c.Stats(); st.Bytes > limit {
			t.Fatalf("after %d contacts the cache holds %d bytes, over its %d", i+1, st.Bytes, limit)
		}
	}
	st, _ := c.Stats()
	if eng.calls != 41 || st.Evicted < 30 || st.Entries < 2 {
		t.Errorf("engine ran %d times (want 41: the common text once), stats %+v", eng.calls, st)
	}

	// A restart with a smaller bound sweeps at once.
	if c = bounded(t, dir, eng, CacheLimits{MaxBytes: 3 * entrySize}, &clock); len(cacheFiles(t, dir)) > 3 {
		t.Errorf("reopened with room for 3 renderings, the cache keeps %v", cacheFiles(t, dir))
	}
}

// TestCacheBoundedByAge: a rendering unused for MaxAge is removed, at the
// next start or by a store an hour after the last sweep; one in use stays.
func TestCacheBoundedByAge(t *testing.T) {
	dir := t.TempDir()
	eng := &counting{name: "fake"}
	clock := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	c := bounded(t, dir, eng, CacheLimits{MaxAge: 24 * time.Hour}, &clock)
	ctx := context.Background()
	c.Synthesize(ctx, "cũ", "vi")
	c.Synthesize(ctx, "dùng hằng ngày", "vi")
	for range 3 {
		clock = clock.Add(12 * time.Hour)
		c.Synthesize(ctx, "dùng hằng ngày", "vi") // a hit: used again
	}
	c.Synthesize(ctx, "mới", "vi") // a store, over an hour after the last sweep
	if st, _ := c.Stats(); st.Entries != 2 || st.Evicted != 1 {
		t.Errorf("stats %+v: want the text unused for 36 h gone, 2 left", st)
	}
	calls := eng.calls
	c.Synthesize(ctx, "dùng hằng ngày", "vi")
	if eng.calls != calls {
		t.Error("the text in use was rendered again")
	}

	// Files an earlier run left, unused for longer than MaxAge: removed at
	// the start (on the real clock).
	old := time.Now().Add(-48 * time.Hour)
	for _, name := range cacheFiles(t, dir) {
		os.Chtimes(filepath.Join(dir, name), old, old)
	}
	// And half a file a crash left: a store an hour old is not under way.
	orphan := filepath.Join(dir, ".tmp-123")
	if err := os.WriteFile(orphan, []byte("RIFF"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(orphan, old, old)
	c, err := NewCache(dir, eng, CacheLimits{MaxAge: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if files := cacheFiles(t, dir); len(files) != 0 {
		t.Errorf("renderings unused for 48 h, or half a file, survived a start: %v", files)
	}
}

// TestCacheLeavesMinFree: on a file system (simulated) the cache shares
// with the database, a rendering that would leave less than MinFree free
// makes the cache give back its least recently used ones first; when that
// is not enough, it is spoken but not stored.
func TestCacheLeavesMinFree(t *testing.T) {
	dir := t.TempDir()
	eng := &counting{name: "fake"}
	clock := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	const minFree = 1 << 20
	capacity := int64(minFree) + 3*entrySize + entrySize/2 // room for 3 renderings above the floor
	c := bounded(t, dir, eng, CacheLimits{MinFree: minFree}, &clock)
	c.freeSpace = func(string) (int64, bool) {
		st, err := c.Stats()
		return capacity - st.Bytes, err == nil
	}
	ctx := context.Background()
	for i := range 10 {
		clock = clock.Add(time.Second)
		if _, err := c.Synthesize(ctx, fmt.Sprintf("khách hàng %d", i), "vi"); err != nil {
			t.Fatal(err)
		}
		if free, _ := c.freeSpace(dir); free < minFree {
			t.Fatalf("after %d renderings %d bytes are free, under the floor of %d", i+1, free, minFree)
		}
	}
	if st, _ := c.Stats(); st.Entries != 3 || st.Skipped != 0 || st.Evicted != 7 {
		t.Errorf("stats %+v: want the 3 newest kept, 7 given back, none skipped", st)
	}

	// The disk is short before the cache holds anything: speak, store nothing.
	capacity = minFree - 1
	os.RemoveAll(dir)
	os.Mkdir(dir, 0o755)
	b, err := c.Synthesize(ctx, "đĩa đầy", "vi")
	if err != nil || len(b.Samples) == 0 {
		t.Fatalf("a full disk failed the rendering: %v", err)
	}
	if st, _ := c.Stats(); st.Entries != 0 || st.Skipped != 1 {
		t.Errorf("stats %+v: want nothing stored, one skipped", st)
	}
}
