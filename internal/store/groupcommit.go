package store

import (
	"context"
	"fmt"
	"sync"

	"dialbox/internal/domain"
	"dialbox/internal/writehealth"
)

// What the group-commit writers of both stores share (SQLite's one writer,
// PostgreSQL's writers and settlers): how a write queues its job, and how a
// writer gathers the jobs waiting into one transaction
// (docs/architecture.md#one-query-layer).

// closeGuard keeps a store's writes from racing its Close: a write queues
// its job under the read lock, and only while the store is open; Close
// marks it closed under the write lock.
type closeGuard struct {
	mu     sync.RWMutex
	closed bool
}

// shut marks the store closed and runs closeQueues under the lock, once;
// false when the store was closed already.
func (g *closeGuard) shut(closeQueues func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.closed = true
	closeQueues()
	return true
}

// enqueue hands job to a writer's queue and returns its result: refused
// once the store is closed, or when ctx ends before the writer takes it.
// Once taken it is waited for even if ctx ends then: it may already be
// committing, and the caller must not report failure for data that is
// stored.
func enqueue[J any](ctx context.Context, g *closeGuard, queue chan<- J, job J, result <-chan error) error {
	g.mu.RLock()
	if g.closed {
		g.mu.RUnlock()
		return domain.ErrStoreClosed
	}
	select {
	case queue <- job:
	case <-ctx.Done():
		g.mu.RUnlock()
		return ctx.Err()
	}
	g.mu.RUnlock()
	return <-result
}

// groupCommit commits the jobs of queue until it is closed, in batches:
// the first job waiting with those queued behind it, up to
// maxJobsPerCommit. A job alone says is committed in a batch of its own.
func groupCommit[J any](queue <-chan J, alone func(J) bool, commit func([]J)) {
	for job := range queue {
		batch := []J{job}
	collect:
		for !alone(job) && len(batch) < maxJobsPerCommit {
			select {
			case j, ok := <-queue:
				if !ok {
					break collect
				}
				if alone(j) {
					commit(batch)
					batch = []J{j}
					break collect
				}
				batch = append(batch, j)
			default:
				break collect
			}
		}
		commit(batch)
	}
}

// answerBatch answers each job of a batch once its transaction is over,
// answer(i, err) the i-th: the commit's error when it failed, else the
// job's own result. storage hears of every failure for want of room.
func answerBatch(storage *writehealth.State, commit error, results []error, answer func(i int, err error)) {
	storage.Note(commit)
	for i, err := range results {
		storage.Note(err)
		if commit != nil {
			err = fmt.Errorf("commit: %w", commit)
		}
		answer(i, err)
	}
}
