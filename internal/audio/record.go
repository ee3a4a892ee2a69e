package audio

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"time"
)

// Recording limits, in samples at PhoneRate.
const (
	// recordWindow is how much audio a Recorder holds before writing it:
	// a frame may arrive this late (or early) and still be mixed in.
	recordWindow = 2 * PhoneRate
	// recordSlack is how far behind the clock a track may fall before its
	// next frame is put at the clock's position, the gap left silent: a
	// lost packet, or nothing played.
	recordSlack = 3 * PhoneFrame
	// recordAhead is how far ahead of the clock a track may run (a source
	// sending faster than real time); frames beyond are dropped.
	recordAhead = recordWindow / 2
)

// TempSuffix ends the name of a recording being written; Close renames it
// to its final name.
const TempSuffix = ".part"

// Recorder writes a call as it goes: 8 kHz mono 16-bit PCM in a WAV file,
// every Track mixed in (summed, saturated to 16 bits) at its place on the
// call's timeline. Memory stays bounded whatever the call's length: mixed
// audio goes to the file once it is recordWindow old. The file is written
// under its name plus TempSuffix and renamed by Close, so the final name
// only ever holds a whole file. Its methods are safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex
	path    string
	f       *os.File
	w       *bufio.Writer
	ring    []int32 // positions [written, written+recordWindow), at position % recordWindow
	written int64   // samples written to the file
	err     error   // the first write error; the recording is then lost
	done    bool
}

// NewRecorder starts a recording that Close will leave at path.
func NewRecorder(path string) (*Recorder, error) {
	f, err := os.OpenFile(path+TempSuffix, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	r := &Recorder{path: path, f: f, w: bufio.NewWriterSize(f, 64<<10), ring: make([]int32, recordWindow)}
	// The sizes are filled in by Close.
	if _, err := r.w.Write(wavHeader(PhoneRate, 0)); err != nil {
		r.Abort()
		return nil, fmt.Errorf("recording: %w", err)
	}
	return r, nil
}

// Track is one source of a recording (what is sent, what is heard), whose
// frames follow each other on the timeline.
type Track struct {
	r    *Recorder
	next int64 // position of the sample after the last one written; -1: none yet
}

// Track adds a source to the recording.
func (r *Recorder) Track() *Track { return &Track{r: r, next: -1} }

// Write mixes samples in, played (or heard) at, the time since the
// recording's start. Consecutive frames go end to end, so that the jitter
// of their arrival does not tear the audio, unless the track has fallen
// more than recordSlack behind at: the frame then goes at at, the gap
// silent. A frame more than recordAhead ahead of at is dropped.
func (t *Track) Write(at time.Duration, samples []int16) {
	r := t.r
	r.mu.Lock()
	defer r.mu.Unlock()
	now := samplesIn(at)
	pos := t.next
	if pos < 0 || now-pos > recordSlack {
		pos = now
	}
	if pos-now > recordAhead {
		return
	}
	t.next = pos + int64(len(samples))
	r.mix(pos, samples)
}

func samplesIn(d time.Duration) int64 {
	return int64(d) * PhoneRate / int64(time.Second)
}

// mix adds samples at pos, writing out first what leaves the window. The
// part of a frame older than the window is lost: it came too late.
func (r *Recorder) mix(pos int64, samples []int16) {
	if r.done || r.err != nil {
		return
	}
	if skip := r.written - pos; skip > 0 {
		if skip >= int64(len(samples)) {
			return
		}
		samples, pos = samples[skip:], r.written
	}
	if end := pos + int64(len(samples)); end > r.written+recordWindow {
		r.flush(end - recordWindow)
	}
	for i, s := range samples {
		r.ring[(pos+int64(i))%recordWindow] += int32(s)
	}
}

// flush writes the mixed samples before position upTo (silence where
// nothing was mixed) and frees their place in the window.
func (r *Recorder) flush(upTo int64) {
	var buf [1024]byte
	for r.written < upTo && r.err == nil {
		n := int(min(upTo-r.written, int64(len(buf)/2)))
		for j := range n {
			i := (r.written + int64(j)) % recordWindow
			binary.LittleEndian.PutUint16(buf[2*j:], uint16(saturate(r.ring[i])))
			r.ring[i] = 0
		}
		_, r.err = r.w.Write(buf[:2*n])
		r.written += int64(n)
	}
}

func saturate(v int32) int16 {
	return int16(min(max(v, math.MinInt16), math.MaxInt16))
}

// Close ends the recording at length (the call's length: silence fills
// what no track covered, and audio beyond it is cut), completes the WAV
// header, syncs the file and renames it to its final name. It returns the
// file's size. On error nothing is left at either name.
func (r *Recorder) Close(length time.Duration) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return 0, errors.New("recording: already closed")
	}
	r.done = true
	n := max(samplesIn(length), 0)
	if 2*n >= math.MaxUint32-44 {
		r.err = fmt.Errorf("recording: %v does not fit a WAV file", length)
	}
	r.flush(n)
	if r.err == nil {
		r.err = r.w.Flush()
	}
	if r.err == nil && r.written > n { // written past the end while the call went on
		r.err = r.f.Truncate(44 + 2*n)
	}
	if r.err == nil {
		_, r.err = r.f.WriteAt(wavHeader(PhoneRate, int(2*n)), 0)
	}
	if r.err == nil {
		r.err = r.f.Sync()
	}
	if err := r.f.Close(); r.err == nil {
		r.err = err
	}
	if r.err == nil {
		r.err = os.Rename(r.path+TempSuffix, r.path)
	}
	if r.err != nil {
		os.Remove(r.path + TempSuffix)
		return 0, fmt.Errorf("recording: %w", r.err)
	}
	return 44 + 2*n, nil
}

// Abort drops the recording: nothing is left on disk.
func (r *Recorder) Abort() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return
	}
	r.done = true
	r.f.Close()
	os.Remove(r.path + TempSuffix)
}
