package tts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"golang.org/x/sync/singleflight"

	"dialbox/internal/audio"
)

// Cache is an Engine that keeps each rendering of its engine in a directory,
// one 8 kHz WAV file per (engine name, voice, text), so that a text already
// spoken is not synthesised again, across restarts too. Files are written to
// a temporary name and renamed, so a reader never sees half a file; one that
// does not decode anyway (a damaged disk, a hand edit) is rendered again and
// replaced. Safe for concurrent use: calls that ask at once for a text not
// yet cached share one rendering. Nothing is ever evicted.
type Cache struct {
	dir    string
	engine Engine
	flight singleflight.Group // renderings under way, by path
	hits   atomic.Int64
	misses atomic.Int64
}

// CacheStats describes a cache: the renderings on disk, and how Synthesize
// calls were answered since NewCache.
type CacheStats struct {
	Entries int
	Bytes   int64
	Hits    int64
	Misses  int64
}

const cacheExt = ".wav"

// NewCache returns engine behind a cache in dir, creating dir if needed.
func NewCache(dir string, engine Engine) (*Cache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("tts cache: %w", err)
	}
	return &Cache{dir: dir, engine: engine}, nil
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
	if b, ok := c.load(path); ok {
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
		return b, c.store(path, b)
	})
	if err != nil {
		return audio.Buffer{}, err
	}
	if !ran {
		c.hits.Add(1)
	}
	return v.(audio.Buffer), nil
}

// load reads a stored rendering; false when there is none that decodes.
func (c *Cache) load(path string) (audio.Buffer, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return audio.Buffer{}, false
	}
	b, err := audio.DecodeWAV(bytes.NewReader(data))
	return b, err == nil && b.Rate == audio.PhoneRate
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

func (c *Cache) store(path string, b audio.Buffer) error {
	f, err := os.CreateTemp(c.dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("tts cache: %w", err)
	}
	err = audio.EncodeWAV(f, b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("tts cache: storing a rendering: %w", err)
	}
	return nil
}

// Stats counts the renderings on disk and their size.
func (c *Cache) Stats() (CacheStats, error) {
	s := CacheStats{Hits: c.hits.Load(), Misses: c.misses.Load()}
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return s, fmt.Errorf("tts cache: %w", err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), cacheExt) || strings.HasPrefix(e.Name(), ".") {
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
