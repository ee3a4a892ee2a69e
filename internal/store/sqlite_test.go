package store

// The SQLite store's writer: group commit, jobs that commit alone, the
// connection's settings.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"dialbox/internal/domain"
	"dialbox/internal/sqldb"
)

// TestGroupCommit: concurrent writes all succeed, a failing or panicking
// job undoes only its own changes, and jobs queued together share one
// transaction (one fsync).
func TestGroupCommit(t *testing.T) {
	s := openSQLiteAt(t, filepath.Join(t.TempDir(), "dialbox.db"))
	ctx := context.Background()
	if err := s.Write(ctx, func(tx sqldb.SQLQueryer) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE t (job INTEGER PRIMARY KEY, batch TEXT NOT NULL)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}

	t.Run("failures are isolated", func(t *testing.T) {
		const n = 64
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = s.Write(ctx, func(tx sqldb.SQLQueryer) error {
					if _, err := tx.ExecContext(ctx, `INSERT INTO t (job, batch) VALUES (?, 'iso')`, i); err != nil {
						return err
					}
					switch i % 8 {
					case 3:
						return fmt.Errorf("job %d fails", i)
					case 5:
						panic(fmt.Sprintf("job %d panics", i))
					}
					return nil
				})
			}()
		}
		wg.Wait()
		for i, err := range errs {
			failing := i%8 == 3 || i%8 == 5
			if failing != (err != nil) {
				t.Errorf("job %d: err %v", i, err)
			}
			var stored int
			s.read.QueryRow(`SELECT count(*) FROM t WHERE job = ?`, i).Scan(&stored)
			if failing == (stored == 1) {
				t.Errorf("job %d (failing %v): %d rows stored", i, failing, stored)
			}
		}
	})

	t.Run("queued jobs share a commit", func(t *testing.T) {
		// Hold the writer in one job while 50 more queue up behind it; the
		// 50 then run in one transaction, so the last of them sees the
		// others' rows while no other connection can see any yet.
		const n = 50
		started, release := make(chan struct{}), make(chan struct{})
		blockerDone := make(chan error, 1)
		go func() {
			blockerDone <- s.Write(ctx, func(tx sqldb.SQLQueryer) error {
				close(started)
				<-release
				return nil
			})
		}()
		<-started
		type view struct{ inTx, outside int }
		views := make(chan view, n)
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := s.Write(ctx, func(tx sqldb.SQLQueryer) error {
					if _, err := tx.ExecContext(ctx, `INSERT INTO t (job, batch) VALUES (?, 'shared')`, 1000+i); err != nil {
						return err
					}
					var v view
					tx.QueryRowContext(ctx, `SELECT count(*) FROM t WHERE batch = 'shared'`).Scan(&v.inTx)
					s.read.QueryRow(`SELECT count(*) FROM t WHERE batch = 'shared'`).Scan(&v.outside)
					views <- v
					return nil
				})
				if err != nil {
					t.Error(err)
				}
			}()
		}
		waitFor(t, "50 jobs to queue", func() bool { return len(s.jobs) == n })
		close(release)
		if err := <-blockerDone; err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		close(views)
		best := view{}
		for v := range views {
			if v.inTx > best.inTx {
				best = v
			}
		}
		if best.inTx != n || best.outside != 0 {
			t.Errorf("last job saw %d rows in its transaction and %d outside, want %d and 0", best.inTx, best.outside, n)
		}
		if got := countSQLite(t, s, `SELECT count(*) FROM t WHERE batch = 'shared'`); got != n {
			t.Errorf("%d rows committed, want %d", got, n)
		}
	})

	t.Run("closed store refuses writes", func(t *testing.T) {
		s2 := openSQLiteAt(t, filepath.Join(t.TempDir(), "closed.db"))
		if err := s2.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s2.Write(ctx, func(sqldb.SQLQueryer) error { return nil }); !errors.Is(err, domain.ErrStoreClosed) {
			t.Errorf("write after close: %v", err)
		}
	})
}

// TestStoreSettings: the writer runs with WAL, synchronous=FULL and foreign
// keys on. A SIGKILL test cannot see synchronous (the OS keeps the page
// cache), so it is checked here: a power loss must not lose an
// acknowledged contact either.
func TestStoreSettings(t *testing.T) {
	s := openSQLiteAt(t, filepath.Join(t.TempDir(), "dialbox.db"))
	ctx := context.Background()
	var mode string
	var sync, fk int
	if err := s.Write(ctx, func(tx sqldb.SQLQueryer) error {
		if err := tx.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk)
	}); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" || sync != 2 || fk != 1 {
		t.Errorf("journal_mode %q, synchronous %d, foreign_keys %d; want wal, 2 (FULL), 1", mode, sync, fk)
	}
}

// TestWriterCommitsAloneJobsalone: a job marked alone (the storage probe,
// whose SQLITE_FULL may roll back its whole transaction) never shares a
// transaction with other jobs, queued before or after it.
func TestWriterCommitsAloneJobsAlone(t *testing.T) {
	s := openSQLite(t)
	release := make(chan struct{})
	blocker := writeJob{fn: func(sqldb.SQLQueryer) error { <-release; return nil }, result: make(chan error, 1)}
	s.jobs <- blocker
	txOf := make([]*sql.Tx, 3)
	jobs := make([]writeJob, 3)
	for i := range jobs {
		jobs[i] = writeJob{fn: func(tx sqldb.SQLQueryer) error { txOf[i] = tx.(preparedTx).tx; return nil }, result: make(chan error, 1), alone: i == 1}
		s.jobs <- jobs[i] // queued while the writer waits in blocker's batch
	}
	close(release)
	for _, j := range append([]writeJob{blocker}, jobs...) {
		if err := <-j.result; err != nil {
			t.Fatal(err)
		}
	}
	if txOf[1] == txOf[0] || txOf[1] == txOf[2] {
		t.Errorf("the alone job shared a transaction: %p before, %p alone, %p after", txOf[0], txOf[1], txOf[2])
	}
}

// TestWriterSharesASavepointAmongRerunnableJobs: rerunnable jobs queued
// together run under one savepoint; when one of them fails or panics, they
// run again each under its own, so that only it fails and every other's
// changes are committed once.
func TestWriterSharesASavepointAmongRerunnableJobs(t *testing.T) {
	s := openSQLite(t)
	ctx := context.Background()
	if err := s.Write(ctx, func(tx sqldb.SQLQueryer) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE t (job INTEGER PRIMARY KEY, runs INTEGER NOT NULL DEFAULT 0)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name          string
		fails, panics int // the job that does, -1: none
		wantRuns      int
	}{
		{"none fails", -1, -1, 8},
		{"one fails", 3, -1, 4 + 8}, // up to the one failing, then each again
		{"one panics", -1, 5, 6 + 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := s.write.Exec(`DELETE FROM t`); err != nil {
				t.Fatal(err)
			}
			// blocker is alone, so the jobs queued while it waits make the
			// next batch: head, not rerunnable, then the eight, which share
			// a savepoint (rerunnable jobs that open a transaction take
			// none: the next test).
			release := make(chan struct{})
			blocker := writeJob{fn: func(sqldb.SQLQueryer) error { <-release; return nil }, result: make(chan error, 1), alone: true}
			s.jobs <- blocker
			head := writeJob{fn: func(sqldb.SQLQueryer) error { return nil }, result: make(chan error, 1), dataOnly: true}
			s.jobs <- head
			runs := 0
			jobs := make([]writeJob, 8)
			for i := range jobs {
				jobs[i] = writeJob{fn: func(tx sqldb.SQLQueryer) error {
					runs++ // the writer's goroutine alone runs jobs
					if _, err := tx.ExecContext(ctx, `INSERT INTO t (job) VALUES (?) ON CONFLICT DO NOTHING`, i); err != nil {
						return err
					}
					if _, err := tx.ExecContext(ctx, `UPDATE t SET runs = runs + 1 WHERE job = ?`, i); err != nil {
						return err
					}
					switch i {
					case c.fails:
						return fmt.Errorf("job %d fails", i)
					case c.panics:
						panic(fmt.Sprintf("job %d panics", i))
					}
					return nil
				}, result: make(chan error, 1), dataOnly: true, rerunnable: true}
				s.jobs <- jobs[i] // queued while the writer waits in blocker's batch
			}
			close(release)
			for _, j := range []writeJob{blocker, head} {
				if err := <-j.result; err != nil {
					t.Fatal(err)
				}
			}
			for i, j := range jobs {
				err := <-j.result
				if failing := i == c.fails || i == c.panics; failing != (err != nil) {
					t.Errorf("job %d: %v", i, err)
				}
				want := 1
				if i == c.fails || i == c.panics {
					want = 0
				}
				if n := countSQLite(t, s, `SELECT count(*) FROM t WHERE job = ? AND runs = 1`, i); n != want {
					t.Errorf("job %d: %d rows changed once, want %d", i, n, want)
				}
			}
			if runs != c.wantRuns {
				t.Errorf("jobs ran %d times, want %d", runs, c.wantRuns)
			}
		})
	}
}

// TestWriterOpensNoSavepointForLeadingRerunnableJobs: rerunnable jobs that
// open a transaction run under no savepoint (one kept every page they
// touched in SQLite's statement journal, docs/benchmarks.md#webhook-delivery);
// one failing rolls the transaction back and every other still commits
// once.
func TestWriterOpensNoSavepointForLeadingRerunnableJobs(t *testing.T) {
	s := openSQLite(t)
	ctx := context.Background()
	if err := s.Write(ctx, func(tx sqldb.SQLQueryer) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE t (job INTEGER PRIMARY KEY, runs INTEGER NOT NULL DEFAULT 0)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// alone: the jobs queued meanwhile make the next batch, not its.
	release := make(chan struct{})
	blocker := writeJob{fn: func(sqldb.SQLQueryer) error { <-release; return nil }, result: make(chan error, 1), alone: true}
	s.jobs <- blocker
	// The writer's own savepoint, were one open: rolling back to it as the
	// first thing in it undoes nothing; with none open it fails.
	var probes []error
	jobs := []writeJob{{fn: func(tx sqldb.SQLQueryer) error {
		_, err := tx.ExecContext(ctx, `ROLLBACK TO job`)
		probes = append(probes, err) // the writer's goroutine alone runs jobs
		return nil
	}, result: make(chan error, 1), dataOnly: true, rerunnable: true}}
	for i := 1; i < 4; i++ {
		jobs = append(jobs, writeJob{fn: func(tx sqldb.SQLQueryer) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO t (job, runs) VALUES (?, 1)
				ON CONFLICT DO UPDATE SET runs = runs + 1`, i); err != nil {
				return err
			}
			if i == 2 {
				return fmt.Errorf("job %d fails", i)
			}
			return nil
		}, result: make(chan error, 1), dataOnly: true, rerunnable: true})
	}
	// A job that is not rerunnable after them runs under its own savepoint.
	jobs = append(jobs, writeJob{fn: func(tx sqldb.SQLQueryer) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO t (job, runs) VALUES (9, 1)`)
		return err
	}, result: make(chan error, 1), dataOnly: true})
	for _, j := range jobs {
		s.jobs <- j // queued while the writer waits in blocker's batch
	}
	close(release)
	if err := <-blocker.result; err != nil {
		t.Fatal(err)
	}
	for i, j := range jobs {
		if err := <-j.result; (i == 2) != (err != nil) {
			t.Errorf("job %d: %v", i, err)
		}
	}
	if len(probes) == 0 || probes[0] == nil || !strings.Contains(probes[0].Error(), "no such savepoint") {
		t.Errorf("the first job's first run saw a savepoint open (rolling back to it: %v)", probes)
	}
	for job, want := range map[int]int{1: 1, 2: 0, 3: 1, 9: 1} {
		if n := countSQLite(t, s, `SELECT count(*) FROM t WHERE job = ? AND runs = 1`, job); n != want {
			t.Errorf("job %d: %d rows written once, want %d", job, n, want)
		}
	}
}

// TestWriterStatementsPastAMebibyteOfJournal: one statement that changes
// megabytes of pages already there (deleting a scenario deletes its
// contacts, their calls and index entries with it) keeps the copies SQLite
// journals for it in a temporary file past 64 KiB, and commits. A
// statement journal kept in memory up to 1 MiB
// (SQLITE_CONFIG_STMTJRNL_SPILL), tried for the writer's speed, failed
// such statements with "database or disk is full" once they passed about
// 128 KiB (docs/benchmarks.md#the-writers-cpu-per-contact).
func TestWriterStatementsPastAMebibyteOfJournal(t *testing.T) {
	app := tenant()
	s := openSQLite(t, app)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	// 20,000 contacts with scattered phones: several megabytes of table
	// and index pages for the delete to change.
	for range 20 {
		phones := make([]string, 1000)
		for i := range phones {
			phones[i] = fmt.Sprintf("+8491%07d", rng.IntN(10_000_000))
		}
		req := contactsRequest(app.ID, "sc", 0, phones...)
		req.UniquePhone = false
		if _, err := s.Import(ctx, req, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteScenario(ctx, app.ID, "sc"); err != nil {
		t.Fatalf("deleting a scenario of 20,000 contacts: %v", err)
	}
	var left int
	if err := s.read.QueryRow(`SELECT count(*) FROM contacts`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d contacts left after the delete (%v), want none", left, err)
	}
}

// TestWriterCacheAndCheckpoints: the writer's connection, and only it,
// opens with the rarer checkpoints, and with SQLite's default page cache
// (docs/benchmarks.md#the-writers-cache-and-checkpoints).
func TestWriterCacheAndCheckpoints(t *testing.T) {
	s := openSQLite(t, tenant())
	ctx := context.Background()
	var cache, checkpoint int
	if err := s.Write(ctx, func(tx sqldb.SQLQueryer) error {
		if err := tx.QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&cache); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&checkpoint)
	}); err != nil {
		t.Fatal(err)
	}
	if cache != -2000 || checkpoint != 10000 {
		t.Errorf("the writer's cache_size %d and wal_autocheckpoint %d, want -2000 and 10000", cache, checkpoint)
	}
	if err := s.read.QueryRow(`PRAGMA cache_size`).Scan(&cache); err != nil {
		t.Fatal(err)
	}
	if cache != -2000 {
		t.Errorf("a reader's cache_size %d, want SQLite's default -2000", cache)
	}
}
