package tts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/sync/singleflight"

	"dialbox/internal/audio"
)

// Cache is an Engine that keeps each rendering of its engine in a directory,
// one 8 kHz WAV file per (engine name, voice, text), so that a text already
// spoken is not synthesised again, across restarts too. Files are written to
// a temporary name and renamed, so a reader never sees half a file; one that
// does not decode anyway (a damaged disk, a hand edit) is rendered again and
// replaced. Safe for concurrent use: calls that ask at once for a text not
// yet cached share one rendering.
//
// Its CacheLimits bound it (docs/sip.md#text-to-speech): a prompt with a
// contact's fields is a new text per contact, so an unbounded cache grows
// with every campaign. A file's modification time is its last use (a hit
// sets it); sweeps remove the renderings unused for MaxAge, then the least
// recently used until the rest fits in MaxBytes with room to spare, and a
// rendering that would leave less than MinFree free on the file system is
// not stored at all once the cache has given back what it can.
//
// The renderings used last are also kept decoded in memory, up to
// memoryBytes of samples (docs/sip.md#text-to-speech): a prompt every call
// speaks is then read and decoded once, not twice a call, which at
// hundreds of calls a second was most of what the process allocated. A
// rendering answered is shared: callers must not change its samples.
type Cache struct {
	dir    string
	engine Engine
	limits CacheLimits
	flight singleflight.Group // renderings under way, by path
	hits   atomic.Int64
	misses atomic.Int64

	evicted atomic.Int64 // renderings removed by sweeps
	skipped atomic.Int64 // renderings not stored, for want of free space

	// Tests set the clock and the file system's free space.
	now       func() time.Time
	freeSpace func(dir string) (int64, bool)

	mu        sync.Mutex // serialises sweeps and the estimate below
	estimate  int64      // bytes on disk as of the last sweep, plus those stored since
	lastSweep time.Time

	memMu    sync.Mutex // guards the three below
	mem      *simplelru.LRU[string, *kept]
	memBytes int64 // the samples' bytes in mem
	memLimit int64
}

// kept is a rendering held in memory, and when its file was last marked
// used.
type kept struct {
	b       audio.Buffer
	touched time.Time
}

// memoryBytes bounds the renderings a Cache keeps decoded in memory: a
// hundred 5-second prompts, or one the length of MaxUtterance's minute
// several times over.
const memoryBytes = 8 << 20

// touchEvery is how often, at most, a rendering answered from memory marks
// its file used: sweeps count in hours and days.
const touchEvery = time.Minute

// CacheLimits bound a Cache; a zero field sets no bound.
type CacheLimits struct {
	// MaxBytes bounds the renderings' total size.
	MaxBytes int64
	// MaxAge is how long a rendering is kept after its last use.
	MaxAge time.Duration
	// MinFree is the free space a stored rendering must leave on the
	// cache's file system (where the database may live too).
	MinFree int64
}

// CacheStats describes a cache: the renderings on disk, and how Synthesize
// calls were answered since NewCache.
type CacheStats struct {
	Entries int
	Bytes   int64
	Hits    int64
	Misses  int64
	// Evicted counts the renderings sweeps removed (too old, or the least
	// recently used beyond MaxBytes or MinFree); Skipped those not stored
	// because the file system was short of MinFree.
	Evicted int64
	Skipped int64
}

const cacheExt = ".wav"

// tempPrefix starts the name of a rendering being stored.
const tempPrefix = ".tmp-"

// sweepEvery is how often, at most, stores sweep for renderings past
// MaxAge when the size bound does not ask for a sweep first.
const sweepEvery = time.Hour

// NewCache returns engine behind a cache in dir, creating dir if needed, and
// sweeps what an earlier run left there into limits.
func NewCache(dir string, engine Engine, limits CacheLimits) (*Cache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("tts cache: %w", err)
	}
	c := &Cache{dir: dir, engine: engine, limits: limits, now: time.Now, freeSpace: freeSpace, memLimit: memoryBytes}
	// Bounded by bytes (keep), never by this count.
	c.mem, _ = simplelru.NewLRU(math.MaxInt32, func(_ string, k *kept) { c.memBytes -= 2 * int64(len(k.b.Samples)) })
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.sweep(0); err != nil {
		return nil, err
	}
	return c, nil
}

// Name is the cached engine's name: the cache renders nothing differently.
func (c *Cache) Name() string { return c.engine.Name() }

// Synthesize answers from the cache, or renders with the engine and stores
// the result. A failure to store it is an error: a cache that cannot be
// written would silently make every call synthesise again.
//
// Calls waiting on a rendering another call started share its result, and
// its context: if that call is cancelled, they get its error.
func (c *Cache) Synthesize(ctx context.Context, text, voice string) (audio.Buffer, error) {
	path := c.path(text, voice)
	if b, ok := c.recall(path); ok {
		c.hits.Add(1)
		return b, nil
	}
	if b, ok := c.load(path); ok {
		c.keep(path, b)
		c.hits.Add(1)
		return b, nil
	}
	ran := false // this call rendered, rather than waiting on another's rendering
	v, err, _ := c.flight.Do(path, func() (any, error) {
		ran = true
		if b, ok := c.load(path); ok { // stored by a rendering that just ended
			c.hits.Add(1)
			return b, nil
		}
		c.misses.Add(1)
		b, err := c.engine.Synthesize(ctx, text, voice)
		if err != nil {
			return audio.Buffer{}, err
		}
		if err := c.store(path, b); err != nil {
			return audio.Buffer{}, err
		}
		c.keep(path, b)
		return b, nil
	})
	if err != nil {
		return audio.Buffer{}, err
	}
	if !ran {
		c.hits.Add(1)
	}
	return v.(audio.Buffer), nil
}

// recall answers a rendering from memory, marking its file used at most
// every touchEvery.
func (c *Cache) recall(path string) (audio.Buffer, bool) {
	now := c.now()
	c.memMu.Lock()
	k, ok := c.mem.Get(path)
	touch := ok && now.Sub(k.touched) >= touchEvery
	if touch {
		k.touched = now
	}
	c.memMu.Unlock()
	if !ok {
		return audio.Buffer{}, false
	}
	if touch {
		// A file a sweep removed stays removed; this copy is still good.
		_ = os.Chtimes(path, now, now)
	}
	return k.b, true
}

// keep holds a rendering (just read or stored, its file just marked used)
// in memory, the least recently used going while the rest is over
// memLimit; one larger than memLimit is not kept.
func (c *Cache) keep(path string, b audio.Buffer) {
	size := 2 * int64(len(b.Samples))
	if size > c.memLimit || b.Rate != audio.PhoneRate {
		return
	}
	c.memMu.Lock()
	defer c.memMu.Unlock()
	if c.mem.Contains(path) {
		return
	}
	c.mem.Add(path, &kept{b: b, touched: c.now()})
	c.memBytes += size
	for c.memBytes > c.memLimit {
		c.mem.RemoveOldest()
	}
}

// load reads a stored rendering and marks it used; false when there is
// none that decodes.
func (c *Cache) load(path string) (audio.Buffer, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return audio.Buffer{}, false
	}
	b, err := audio.DecodeWAV(bytes.NewReader(data))
	if err != nil || b.Rate != audio.PhoneRate {
		return audio.Buffer{}, false
	}
	// Its last use, for the sweeps; a file a sweep just removed stays
	// removed, and this answer is still good.
	now := c.now()
	_ = os.Chtimes(path, now, now)
	return b, true
}

// path is the entry's file: a SHA-256 of the length-prefixed engine name,
// voice and text, so that no two keys can run together.
func (c *Cache) path(text, voice string) string {
	h := sha256.New()
	for _, s := range []string{c.engine.Name(), voice, text} {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	return filepath.Join(c.dir, hex.EncodeToString(h.Sum(nil))+cacheExt)
}

// store writes a rendering, unless the file system is short of MinFree
// even after the cache gave back its own space: then the rendering serves
// this call only, and counts as skipped.
func (c *Cache) store(path string, b audio.Buffer) error {
	size := int64(44 + 2*len(b.Samples)) // the WAV EncodeWAV writes
	c.mu.Lock()
	defer c.mu.Unlock()
	if short := c.shortOfFree(size); short > 0 {
		if err := c.sweep(short); err != nil {
			return err
		}
		if c.shortOfFree(size) > 0 {
			c.skipped.Add(1)
			return nil
		}
	}
	f, err := os.CreateTemp(c.dir, tempPrefix+"*")
	if err != nil {
		return fmt.Errorf("tts cache: %w", err)
	}
	err = audio.EncodeWAV(f, b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		now := c.now()
		err = os.Chtimes(f.Name(), now, now)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("tts cache: storing a rendering: %w", err)
	}
	c.estimate += size
	if c.limits.MaxBytes > 0 && c.estimate > c.limits.MaxBytes || c.now().Sub(c.lastSweep) >= sweepEvery {
		return c.sweep(0)
	}
	return nil
}

// shortOfFree is how many bytes the file system lacks to take size more
// and keep MinFree free; 0 when it has them, or MinFree is not set, or the
// system cannot tell.
func (c *Cache) shortOfFree(size int64) int64 {
	if c.limits.MinFree <= 0 {
		return 0
	}
	free, ok := c.freeSpace(c.dir)
	if !ok {
		return 0
	}
	return max(0, c.limits.MinFree+size-free)
}

// sweep removes the renderings unused for MaxAge, then the least recently
// used until the rest fits in nine tenths of MaxBytes (so that the next
// sweeps are some renderings away) and at least free bytes were given
// back. Called with mu held.
func (c *Cache) sweep(free int64) error {
	now := c.now()
	c.lastSweep = now
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return fmt.Errorf("tts cache: %w", err)
	}
	type file struct {
		name string
		size int64
		used time.Time
	}
	var files []file
	var total int64
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		if strings.HasPrefix(e.Name(), tempPrefix) && now.Sub(info.ModTime()) >= sweepEvery {
			// Half a file a crash left: stores take a moment, not an hour.
			os.Remove(filepath.Join(c.dir, e.Name()))
			continue
		}
		if !isEntry(e) {
			continue
		}
		files = append(files, file{e.Name(), info.Size(), info.ModTime()})
		total += info.Size()
	}
	slices.SortFunc(files, func(a, b file) int { return a.used.Compare(b.used) })
	keep := c.limits.MaxBytes / 10 * 9
	var freed int64
	for _, f := range files {
		expired := c.limits.MaxAge > 0 && now.Sub(f.used) > c.limits.MaxAge
		if !expired && (c.limits.MaxBytes <= 0 || total <= keep) && freed >= free {
			break // the rest are newer
		}
		if err := os.Remove(filepath.Join(c.dir, f.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("tts cache: %w", err)
		}
		total -= f.size
		freed += f.size
		c.evicted.Add(1)
	}
	c.estimate = total
	return nil
}

// isEntry tells a rendering from the temporary files of those being stored.
func isEntry(e fs.DirEntry) bool {
	return e.Type().IsRegular() && strings.HasSuffix(e.Name(), cacheExt) && !strings.HasPrefix(e.Name(), ".")
}

// Stats counts the renderings on disk and their size.
func (c *Cache) Stats() (CacheStats, error) {
	s := CacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Evicted: c.evicted.Load(), Skipped: c.skipped.Load()}
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return s, fmt.Errorf("tts cache: %w", err)
	}
	for _, e := range entries {
		if !isEntry(e) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		s.Entries++
		s.Bytes += info.Size()
	}
	return s, nil
}
