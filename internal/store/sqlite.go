package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"

	"dialbox/internal/recordings"
	"dialbox/internal/sqldb"
	"dialbox/internal/writehealth"

	_ "modernc.org/sqlite"
)

// SQLite is the Store on SQLite, the default. Reads go through a small pool;
// every write goes through one writer goroutine that runs concurrent jobs in
// a shared transaction (group commit), so N concurrent imports cost one
// fsync instead of N while none is acknowledged before its commit.
type SQLite struct {
	sqlStore // the queries both stores share (tx.go)

	read  *sql.DB
	write *sql.DB

	closeGuard // against Write racing Close
	jobs       chan writeJob
	done       chan struct{}

	stmts writeStmts // the writer's statements, prepared once (sqlite_stmts.go)
	known int        // the migrations this dialbox knows (Migrations)
	lock  *os.File   // shared lock that keeps restore away (internal/store/dblock_unix.go)

	metrics Metrics // its commits and imports

	// configChanges counts the commits that may change configuration
	// (ConfigVersion), other connections' seen through watch.
	configChanges atomic.Uint64
	watch         *CommitWatch
	storage       writehealth.State // the last write that failed for want of room
	// recordings is where the calls' recordings are, removed with the
	// calls deleted; none when the store was opened without a folder.
	recordings recordings.Files
	// unindexed counts the contacts committed since the phone index last
	// took them in (phone_index.go), indexFailing whether its last batch
	// failed; the writer's alone.
	unindexed    int64
	indexFailing bool
}

type writeJob struct {
	// fn's statements run in the writer's transaction, prepared once
	// they are cached (preparedTx).
	fn func(sqldb.SQLQueryer) error
	// imp is set for an import: the writer runs the imports queued side by
	// side together (importBatch), and fn, the import on its own, only
	// where they cannot be.
	imp    *importJob
	result chan error
	// dataOnly jobs touch contacts, calls, wallet balances and the outbox,
	// never the tenants' configuration, so they leave configChanges alone.
	dataOnly bool
	// alone jobs commit in a transaction of their own: the storage probe,
	// whose SQLITE_FULL may roll back the whole transaction it is in.
	alone bool
	// rerunnable jobs may run again from their start (what they keep of
	// a run is their transaction's changes and what they set anew), so a
	// run of them shares one savepoint, none when they open the
	// transaction, each run again under its own when one fails: settles
	// and claims touch the same pages, which a savepoint each copied to
	// SQLite's statement journal again and again.
	rerunnable bool
}

// WriterPragmas space the writer connection's checkpoints
// (docs/benchmarks.md#the-writers-cache-and-checkpoints): a checkpoint
// every 1,000 WAL pages ran after nearly every group commit and copied the
// same pages again and again; every 10,000 pages (about 40 MiB of WAL) it
// copies each page once for many commits. The page cache is SQLite's
// default again since the phone index went behind the imports
// (phone_index.go): a commit no longer changes a leaf of it per contact.
// Only the writer's connection: the readers keep the defaults.
const WriterPragmas = "&_pragma=wal_autocheckpoint(10000)"

// maxJobsPerCommit bounds a group commit so one transaction stays short.
const maxJobsPerCommit = 256

// OpenSQLite opens (creating if needed) the database at path, brings its
// schema up to date with migrations (schema.sql's blocks, which the root
// embeds) and starts the writer, which records into m. Tests hand in the
// first few to make a database as an older dialbox would have left it. rec
// is the folder of the calls' recordings, removed with the calls a delete
// takes; none (the zero Files) leaves files alone.
func OpenSQLite(path string, migrations []string, m Metrics, rec recordings.Files) (*SQLite, error) {
	lock, err := LockDatabase(path)
	if err != nil {
		return nil, err
	}
	s, err := openLockedStore(path, migrations, m, rec)
	if err != nil {
		lock.Close()
		return nil, err
	}
	s.lock = lock
	return s, nil
}

func openLockedStore(path string, migrations []string, m Metrics, rec recordings.Files) (*SQLite, error) {
	// SQLite would create the file with the umask's mode (often world-
	// readable); it holds phone numbers and secrets. Its -wal and -shm
	// files take the same mode.
	if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600); err == nil {
		f.Close()
	}
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(FULL)"
	write, err := sql.Open("sqlite", dsn+"&_txlock=immediate"+WriterPragmas)
	if err != nil {
		return nil, err
	}
	write.SetMaxOpenConns(1)
	write.SetConnMaxLifetime(0)
	if err := Migrate(write, migrations); err != nil {
		write.Close()
		return nil, fmt.Errorf("database %s: %w", path, err)
	}
	read, err := sql.Open("sqlite", dsn+"&_pragma=query_only(1)")
	if err != nil {
		write.Close()
		return nil, err
	}
	read.SetMaxOpenConns(4)
	read.SetMaxIdleConns(4)
	s := &SQLite{read: read, write: write, jobs: make(chan writeJob, 1024), done: make(chan struct{}), metrics: m, known: len(migrations),
		recordings: rec}
	s.sqlStore = sqlStore{db: sqldb.SQL(read),
		writeConfig: sqliteWrite(s.Write), writeData: sqliteWrite(s.WriteData), writeRerunnable: sqliteWrite(s.writeRerunnable)}
	if err := s.stmts.prepare(write, len(migrations), m.stmts); err != nil {
		s.closeDBs()
		return nil, err
	}
	if s.watch, err = OpenCommitWatch(path, write); err != nil {
		s.closeDBs()
		return nil, err
	}
	if s.known >= phoneIndexVersion {
		if s.unindexed, err = unindexedAtOpen(write); err != nil {
			s.closeDBs()
			return nil, err
		}
		s.phonesBehind = true
	}
	go s.writer()
	return s, nil
}

// Close finishes queued writes and closes the database.
func (s *SQLite) Close() error {
	if !s.shut(func() { close(s.jobs) }) {
		return nil
	}
	<-s.done
	return s.closeDBs()
}

func (s *SQLite) closeDBs() error {
	s.watch.CloseStatement()
	s.stmts.Close()
	err := errors.Join(s.read.Close(), s.write.Close())
	s.watch.Close() // after the connections: it holds a descriptor of the -shm
	if s.lock != nil {
		err = errors.Join(err, s.lock.Close())
	}
	return err
}

var migrationHeader = regexp.MustCompile(`(?m)^-- migration (\d+):.*$`)

// splitMigrations splits a schema file into its "-- migration N:" blocks,
// which must be numbered 1, 2, 3... in order.
func SplitMigrations(name, schema string) []string {
	locs := migrationHeader.FindAllStringSubmatchIndex(schema, -1)
	out := make([]string, 0, len(locs))
	for i, loc := range locs {
		n, _ := strconv.Atoi(schema[loc[2]:loc[3]])
		if n != i+1 {
			panic(fmt.Sprintf("%s: migration %d found where %d was expected", name, n, i+1))
		}
		end := len(schema)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		out = append(out, schema[loc[0]:end])
	}
	return out
}

// checkSQLiteIsDialbox checks that path is a SQLite file dialbox made,
// without creating or changing it: it exists and has a schema version. A
// server may run on it: read through SQLite, its WAL counts.
func CheckSQLiteIsDialbox(ctx context.Context, path string) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return NoDatabase(path, "does not exist")
	} else if err != nil {
		return fmt.Errorf("database %s: %w", path, err)
	}
	db, err := OpenPlain(path)
	if err != nil {
		return err
	}
	defer db.Close()
	var version int
	if err := db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		return NoDatabase(path, "is not a dialbox database ("+err.Error()+")")
	}
	if version == 0 {
		return NoDatabase(path, "is not a dialbox database (it has no schema version)")
	}
	return nil
}

// migrate applies every one of all after the database's user_version, each
// in its own transaction.
func Migrate(db *sql.DB, all []string) error {
	var current int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&current); err != nil {
		return err
	}
	if current > len(all) {
		return fmt.Errorf("made by a newer dialbox (schema version %d, this one knows %d)", current, len(all))
	}
	for v := current + 1; v <= len(all); v++ {
		tx, err := db.Begin()
		if err != nil {
			return err
		}
		if _, err := tx.Exec(all[v-1]); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %d: %w", v, err)
		}
		if _, err := tx.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, v)); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migration %d: %w", v, err)
		}
	}
	return nil
}

// Migrations is the migration the database is at (its user_version) and
// the number this dialbox knows.
func (s *SQLite) Migrations(ctx context.Context) (at, known int, err error) {
	err = s.read.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&at)
	return at, s.known, err
}

// Ping commits a no-op job through the writer: the lock can be taken and
// the writer goroutine is alive.
func (s *SQLite) Ping(ctx context.Context) error {
	return s.Write(ctx, func(sqldb.SQLQueryer) error { return nil })
}

func (s *SQLite) CheckStorage(ctx context.Context) error {
	failure := s.storage.Failure()
	if failure == nil {
		return nil
	}
	probe := func(tx sqldb.SQLQueryer) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO admin_settings (key, value) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, writehealth.ProbeKey, writehealth.ProbeValue); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM admin_settings WHERE key = ?`, writehealth.ProbeKey)
		return err
	}
	if err := s.write1(ctx, writeJob{fn: probe, result: make(chan error, 1), dataOnly: true, alone: true}); err != nil {
		return fmt.Errorf("a write could not be stored (%v), nor can a probe write: %w", failure, err)
	}
	s.storage.Clear(failure)
	return nil
}

func (s *SQLite) ConfigVersion() (uint64, bool) {
	s.watch.Check(&s.configChanges)
	return s.configChanges.Load(), true
}

// Write runs fn inside the writer's current transaction, isolated by a
// savepoint: if fn fails, only its own changes are undone. It returns once
// the transaction holding fn's changes is durably committed (or failed).
func (s *SQLite) Write(ctx context.Context, fn func(sqldb.SQLQueryer) error) error {
	return s.write1(ctx, writeJob{fn: fn, result: make(chan error, 1)})
}

// WriteData is Write for jobs that change no configuration (applications,
// wallets' settings, hotlines, scenarios, campaigns): imports, calls and
// deliveries. They keep cached configuration reads valid.
func (s *SQLite) WriteData(ctx context.Context, fn func(sqldb.SQLQueryer) error) error {
	return s.write1(ctx, writeJob{fn: fn, result: make(chan error, 1), dataOnly: true})
}

// writeRerunnable is WriteData for a job that may run again from its
// start: a run of them shares a savepoint, or none (writeJob.rerunnable).
func (s *SQLite) writeRerunnable(ctx context.Context, fn func(sqldb.SQLQueryer) error) error {
	return s.write1(ctx, writeJob{fn: fn, result: make(chan error, 1), dataOnly: true, rerunnable: true})
}

// sqliteWrite is sqlStore's write over one of the writer's: fn's
// statements ride in the writer's shared transaction.
func sqliteWrite(write func(context.Context, func(sqldb.SQLQueryer) error) error) func(context.Context, func(sqldb.Querier) error) error {
	return func(ctx context.Context, fn func(sqldb.Querier) error) error {
		return write(ctx, func(tx sqldb.SQLQueryer) error { return fn(sqldb.SQLShared(tx)) })
	}
}

func (s *SQLite) write1(ctx context.Context, job writeJob) error {
	return enqueue(ctx, &s.closeGuard, s.jobs, job, job.result)
}

func (s *SQLite) writer() {
	defer close(s.done)
	groupCommit(s.jobs, func(j writeJob) bool { return j.alone }, s.commit)
}

func (s *SQLite) commit(batch []writeJob) {
	start := time.Now()
	defer func() { s.metrics.commits.observe(len(batch), time.Since(start)) }()
	results := make([]error, len(batch))
	committing := false
	err := func() error {
		tx, err := s.write.Begin()
		if err != nil {
			return err
		}
		// The rerunnable jobs that open the transaction need no savepoint:
		// should one fail, the transaction rolls back (nothing came before
		// them) and they run again, each under its own. A savepoint open
		// across the run kept every page it touched in SQLite's statement
		// journal, a temporary file once past 64 KiB, written again page by
		// page (docs/benchmarks.md#webhook-delivery).
		i := 0
		for i < len(batch) && batch[i].rerunnable {
			i++
		}
		if i > 0 {
			failed := false
			for k, job := range batch[:i] {
				if results[k] = runJob(job.fn, preparedTx{tx, &s.stmts}); results[k] != nil {
					failed = true
					break
				}
			}
			if failed {
				tx.Rollback()
				s.stmts.txDone() // the statements bound to tx went with it
				clear(results[:i])
				if tx, err = s.write.Begin(); err != nil {
					return err
				}
				for k := range i {
					if _, err := s.runJobs(tx, batch[k:k+1], results[k:k+1]); err != nil {
						return err
					}
				}
			}
		}
		for i < len(batch) {
			if n := s.importsAt(batch[i:]); n > 0 {
				if err := s.importBatch(tx, batch[i:i+n], results[i:i+n]); err != nil {
					tx.Rollback()
					return err
				}
				i += n
				continue
			}
			n := 1 // the jobs from i that share a savepoint
			for batch[i].rerunnable && i+n < len(batch) && batch[i+n].rerunnable {
				n++
			}
			if n > 1 {
				failed, err := s.runJobs(tx, batch[i:i+n], results[i:i+n])
				if err != nil {
					return err
				}
				if !failed {
					i += n
					continue
				}
				// One failed, undoing them all: each runs again under a
				// savepoint of its own, so that only it fails.
			}
			for end := i + n; i < end; i++ {
				if _, err := s.runJobs(tx, batch[i:i+1], results[i:i+1]); err != nil {
					return err
				}
			}
		}
		s.watch.Committing()
		committing = true
		return tx.Commit()
	}()
	for _, job := range batch {
		if !job.dataOnly {
			s.configChanges.Add(1) // after the commit: a read from now on sees it
			break
		}
	}
	if committing {
		s.watch.Committed(&s.configChanges) // after the count: a read waiting on it sees that too
	}
	// The connection is free again; preparing before the answers lets a
	// job that comes next run the statements prepared.
	s.stmts.txDone()
	if err == nil {
		for i, job := range batch {
			if job.imp != nil && job.imp.res != nil && results[i] == nil {
				s.unindexed += int64(len(job.imp.res.Added))
			}
		}
	}
	answerBatch(&s.storage, err, results, func(i int, err error) { batch[i].result <- err })
	s.indexPhones()
}

// runJobs runs jobs in tx under one savepoint, each one's result into
// results, until one fails (failed): then their changes are undone. An
// error is the transaction's, rolled back.
func (s *SQLite) runJobs(tx *sql.Tx, jobs []writeJob, results []error) (failed bool, err error) {
	if _, err := tx.Stmt(s.stmts.savepoint).Exec(); err != nil {
		tx.Rollback()
		return false, err
	}
	for k, job := range jobs {
		if results[k] = runJob(job.fn, preparedTx{tx, &s.stmts}); results[k] != nil {
			failed = true
			if _, err := tx.Stmt(s.stmts.rollback).Exec(); err != nil {
				// SQLITE_FULL may roll the whole transaction back,
				// savepoints included: say why, without handing the
				// job's error (wrapped) to the batch's other jobs.
				tx.Rollback()
				return true, fmt.Errorf("%v, then rolling back to its savepoint: %w", results[k], err)
			}
			break
		}
	}
	if _, err := tx.Stmt(s.stmts.release).Exec(); err != nil {
		tx.Rollback()
		return failed, err
	}
	return failed, nil
}

// runJob keeps a panicking job from taking the writer (and every other
// job's acknowledgement) down with it.
func runJob(fn func(sqldb.SQLQueryer) error, tx preparedTx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("write job panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return fn(tx)
}
