// Package recordings owns calls' recording files on disk: their folder,
// each call's file, the sweeper that removes those past their retention or
// no call keeps, and a recording's admin URL. It imports config and audio;
// the store it asks through SweptStore.
package recordings

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"dialbox/internal/audio"
	"dialbox/internal/config"
)

// Calls' recordings (docs/voicebot.md#recordings): one WAV file per
// recorded call, <recordings.dir>/<call id>.wav, listed on the call by
// calls.recording_bytes. The database is the truth: a file is kept while
// its call says it has a recording (or the call is still up); the sweeper
// removes every other, and the recordings older than the retention.

// Files is the folder of the recordings; the zero value is none
// (a store opened without a configuration removes no file).
type Files struct{ Dir string }

// Folder is the folder cfg names: recordings.dir, or "recordings"
// in dataDir, the folder beside the database.
func Folder(cfg config.Config, dataDir string) Files {
	if cfg.Recordings.Dir != "" {
		return Files{Dir: cfg.Recordings.Dir}
	}
	return Files{Dir: filepath.Join(dataDir, "recordings")}
}

// Ext ends a recording's file name.
const Ext = ".wav"

// Path is where a call's recording is (or will be).
func (f Files) Path(callID string) string {
	return filepath.Join(f.Dir, callID+Ext)
}

// Remove deletes the recordings of calls; one that cannot be removed is
// an orphan the next sweep removes.
func (f Files) Remove(callIDs []string) {
	if f.Dir == "" {
		return
	}
	for _, id := range callIDs {
		os.Remove(f.Path(id))
	}
}

// URL is the admin URL of a call's recording.
func URL(base, apiKey, contactID, callID string) string {
	return base + "/admin/v1/apps/" + url.PathEscape(apiKey) + "/contacts/" + url.PathEscape(contactID) +
		"/calls/" + url.PathEscape(callID) + "/recording"
}

// recordingSweepInterval is how often the sweeper runs after the one at
// start.
const recordingSweepInterval = time.Hour

// Sweeper removes recordings past recordings.retention_days and
// files no call lists (their contact deleted by another process, a crash
// between a file and its call's settling, a removal that failed).
type Sweeper struct {
	store     SweptStore
	files     Files
	retention time.Duration // 0: forever
	log       *slog.Logger

	stop chan struct{}
	done sync.WaitGroup
}

// SweptStore is what the sweeper asks of the store: the recordings past
// their retention, and which files their calls keep.
type SweptStore interface {
	ExpireRecordings(ctx context.Context, before time.Time, limit int) ([]string, error)
	RecordingsKept(ctx context.Context, ids []string) (map[string]Kept, error)
}

func NewSweeper(store SweptStore, files Files, cfg config.Config, log *slog.Logger) *Sweeper {
	return &Sweeper{store: store, files: files, log: log,
		retention: time.Duration(cfg.Recordings.RetentionDays) * 24 * time.Hour}
}

// Start sweeps now, then every recordingSweepInterval until Stop; it does
// nothing while already started.
func (s *Sweeper) Start() {
	if s.stop != nil {
		return
	}
	s.stop = make(chan struct{})
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		t := time.NewTicker(recordingSweepInterval)
		defer t.Stop()
		for {
			if _, err := s.Sweep(context.Background(), time.Now()); err != nil {
				s.log.Warn("recordings: sweep failed; trying again at the next", "err", err)
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
}

// Stop ends the sweeps; one under way finishes first.
func (s *Sweeper) Stop() {
	if s.stop != nil {
		close(s.stop)
		s.done.Wait()
		s.stop = nil
	}
}

// Sweep removes the recordings of calls that ended more than the retention
// before now, then every file of the folder no call keeps. It returns how
// many files it removed.
func (s *Sweeper) Sweep(ctx context.Context, now time.Time) (int, error) {
	removed := 0
	if s.retention > 0 {
		for {
			ids, err := s.store.ExpireRecordings(ctx, now.Add(-s.retention), 500)
			if err != nil {
				return removed, err
			}
			s.files.Remove(ids)
			removed += len(ids)
			if len(ids) < 500 {
				break
			}
		}
	}
	n, err := s.removeOrphans(ctx)
	removed += n
	if removed > 0 {
		s.log.Info("recordings: swept", "removed", removed)
	}
	return removed, err
}

// removeOrphans removes the folder's recordings (and files still being
// written) whose call does not keep them: a finished file is kept while
// its call lists it or is still up (its settling not yet committed), a
// file being written while its call is up.
func (s *Sweeper) removeOrphans(ctx context.Context) (int, error) {
	entries, err := os.ReadDir(s.files.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil // nothing recorded yet
	}
	if err != nil {
		return 0, err
	}
	removed := 0
	for len(entries) > 0 {
		batch := entries[:min(len(entries), 500)]
		entries = entries[len(batch):]
		ids := make([]string, 0, len(batch))
		for _, e := range batch {
			if id, _, ok := recordingFileCall(e.Name()); ok {
				ids = append(ids, id)
			}
		}
		keep, err := s.store.RecordingsKept(ctx, ids)
		if err != nil {
			return removed, err
		}
		for _, e := range batch {
			id, partial, ok := recordingFileCall(e.Name())
			if !ok || e.IsDir() {
				continue // not ours
			}
			if k := keep[id]; k.Up || k.Listed && !partial {
				continue
			}
			if err := os.Remove(filepath.Join(s.files.Dir, e.Name())); err == nil {
				removed++
			}
		}
	}
	return removed, nil
}

// recordingFileCall reads a file name of the folder: the call it records,
// and whether it is still being written; false for any other file.
func recordingFileCall(name string) (callID string, partial bool, ok bool) {
	if base, cut := strings.CutSuffix(name, Ext+audio.TempSuffix); cut {
		return base, true, base != ""
	}
	base, cut := strings.CutSuffix(name, Ext)
	return base, false, cut && base != ""
}

// Kept is what a call says of its recording file: it is up (its
// file may be being written, or written and not yet listed), or it lists
// one.
type Kept struct{ Up, Listed bool }
