package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"dialbox/internal/config"
	"dialbox/internal/domain"
	"dialbox/internal/recordings"
	"dialbox/internal/sqldb"
	"dialbox/internal/writehealth"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Postgres is the store on PostgreSQL, for several dialbox nodes on
// one database (docs/postgres.md). It implements all of Store, most of it
// through the queries it shares with SQLite on sqlStore
// (docs/architecture.md#one-query-layer); what is its own is the pool, the
// group-commit writers and settlers, claims with leases, LISTEN/NOTIFY and
// COPY.
type Postgres struct {
	sqlStore // the queries both stores share (tx.go)

	pool *pgxpool.Pool
	// node names this process in the leases it takes (nodeIDFor).
	node string
	// lease is how long a claim of this node outlives its last renewal.
	lease time.Duration
	// heldMessages are the outbox messages this node took and has neither
	// recorded an attempt of nor given back: the ones whose leases it
	// renews.
	heldMu       sync.Mutex
	heldMessages map[int64]struct{}
	// metrics are its commits, imports, claims and takeovers.
	Metrics Metrics
	known   int // the migrations this dialbox knows (Migrations)

	closeGuard // against importing racing Close
	writers    []chan *pgImport
	// settlers group-commit calls' settling (settle), taken in turn.
	settlers    []chan pgJob
	nextSettler atomic.Uint64
	// stopLeases ends keepLeases, which renews this node's call leases.
	stopLeases chan struct{}
	// stopFolding ends keepCountsFolded (postgres_console.go).
	stopFolding chan struct{}
	// stopListening ends listenConfig (postgres_notify.go).
	stopListening context.CancelFunc
	done          sync.WaitGroup

	// configChanges counts the commits that may change configuration,
	// this node's and, through NOTIFY, the others' (ConfigVersion); deaf
	// is set while this node does not hear the others'
	// (postgres_notify.go).
	configChanges atomic.Uint64
	deaf          atomic.Bool
	// storage is the last import or settling that failed for want of room.
	storage writehealth.State
	// recordings is where the calls' recordings are (OpenPostgres).
	recordings recordings.Files
}

// pgJob is one import or call settling waiting for its writer's next
// commit.
type pgJob struct {
	fn func(pgx.Tx) error
	// last holds the statements fn left to the end of the batch (pgTx's
	// execLast): writes to a tenant's hot rows, which the transaction then
	// holds only for one round trip and the commit.
	last   *[]pgStmt
	result chan error
}

// pgStmt is one statement left to the end of a batch.
type pgStmt struct {
	query string
	args  []any
}

// postgresWriters is how many group-commit writers run, each with its own
// connection and transaction. Imports of one application always go to the
// same writer: its unfinished-contacts count (a row every import updates)
// and its pending-phone index are then only ever written by one of them,
// so two writers never wait on each other, nor deadlock.
const postgresWriters = 4

// postgresSettlers is how many group-commit writers settle calls. Every
// settle writes its tenant's hot rows (the count of unfinished contacts,
// the wallet), which a transaction holds until its commit: one commit per
// call would make a tenant's settles on every node wait on each other's
// disk flushes one by one, where a batch waits once.
const postgresSettlers = 2

// nodeIDFor is the id of a node named name (the hostname when empty): the
// process id and a random part make every start a new node, so a
// restarted node never renews the leases its last run left, which another
// node settles (docs/postgres.md#nodes-and-leases).
func nodeIDFor(name string) string {
	if name == "" {
		name, _ = os.Hostname()
	}
	return fmt.Sprintf("%s-%d-%s", name, os.Getpid(), uuid.NewString()[:8])
}

// OpenPostgres connects to the database at url, brings its schema up to
// date with migrations (schema_postgres.sql's blocks, which the root
// embeds) and starts the writers; node names this node and sets its leases;
// the store records into m; rec is the folder of the calls' recordings,
// removed with the calls a delete takes (none: files are left alone).
func OpenPostgres(ctx context.Context, url string, migrations []string, node config.ClusterConfig, m Metrics, rec recordings.Files) (*Postgres, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	// Acknowledged means committed: whatever the server's default, this
	// node's commits wait for the WAL flush.
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	// Each connection names its node in pg_stat_activity, unless the URL
	// names the application itself (docs/cluster.md#the-database).
	id := nodeIDFor(node.NodeName)
	if _, named := cfg.ConnConfig.RuntimeParams["application_name"]; !named {
		cfg.ConnConfig.RuntimeParams["application_name"] = "dialbox " + id
	}
	cfg.MaxConns = max(cfg.MaxConns, postgresWriters+4)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	if err := MigratePostgres(ctx, pool, migrations, len(migrations)); err != nil {
		pool.Close()
		return nil, fmt.Errorf("database: %w", err)
	}
	s := &Postgres{pool: pool, node: id, lease: node.Lease.Duration,
		heldMessages: map[int64]struct{}{}, Metrics: m, known: len(migrations), recordings: rec}
	s.sqlStore = sqlStore{db: sqldb.PGX(pool),
		writeConfig: pgxWrite(s.configWrite), writeData: pgxWrite(s.dataWrite), writeRerunnable: pgxWrite(s.dataWrite)}
	s.stopLeases, s.stopFolding = make(chan struct{}), make(chan struct{})
	s.done.Add(3)
	go s.keepLeases(s.stopLeases)
	go s.keepCountsFolded(s.stopFolding)
	s.deaf.Store(true) // until listenConfig listens
	listenCtx, stopListening := context.WithCancel(context.Background())
	s.stopListening = stopListening
	go s.listenConfig(listenCtx)
	for range postgresWriters {
		jobs := make(chan *pgImport, 1024)
		s.writers = append(s.writers, jobs)
		s.done.Add(1)
		go func() {
			defer s.done.Done()
			groupCommit(jobs, func(*pgImport) bool { return false }, s.commitImports)
		}()
	}
	for range postgresSettlers {
		jobs := make(chan pgJob, 1024)
		s.settlers = append(s.settlers, jobs)
		s.done.Add(1)
		go s.settler(jobs)
	}
	return s, nil
}

// Close finishes queued imports and closes the pool.
func (s *Postgres) Close() error {
	closing := s.shut(func() {
		for _, w := range s.writers {
			close(w)
		}
		for _, w := range s.settlers {
			close(w)
		}
		close(s.stopLeases)
		close(s.stopFolding)
		s.stopListening()
	})
	if !closing {
		return nil
	}
	s.done.Wait()
	s.pool.Close()
	return nil
}

// Ping checks the database takes writes: a transaction that starts and
// commits is not enough, as a standby (after a failover the URL may still
// name the old primary) or default_transaction_read_only runs one.
func (s *Postgres) Ping(ctx context.Context) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var readOnly string
		if err := tx.QueryRow(ctx, `SELECT current_setting('transaction_read_only')`).Scan(&readOnly); err != nil {
			return err
		}
		if readOnly == "on" {
			return errors.New("the PostgreSQL server takes no writes (a standby, or default_transaction_read_only is on)")
		}
		return nil
	})
}

func (s *Postgres) CheckStorage(ctx context.Context) error {
	failure := s.storage.Failure()
	if failure == nil {
		return nil
	}
	if err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO admin_settings (key, value) VALUES ($1, $2)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, writehealth.ProbeKey, writehealth.ProbeValue); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM admin_settings WHERE key = $1`, writehealth.ProbeKey)
		return err
	}); err != nil {
		return fmt.Errorf("a write could not be stored (%v), nor can a probe write: %w", failure, err)
	}
	s.storage.Clear(failure)
	return nil
}

func (s *Postgres) Migrations(ctx context.Context) (at, known int, err error) {
	at, err = postgresVersion(ctx, s.pool)
	return at, s.known, err
}

// NodeID is the id this node's leases carry, shown in /metrics.
func (s *Postgres) NodeID() string { return s.node }

func (s *Postgres) ConfigVersion() (uint64, bool) {
	return s.configChanges.Load(), !s.deaf.Load()
}

// settleJob runs fn (a call's settling) in the group commit of the next
// settler, the statements it leaves in last at the end of the batch.
func (s *Postgres) settleJob(ctx context.Context, fn func(pgx.Tx) error, last *[]pgStmt) error {
	return s.submit(ctx, s.settlers[s.nextSettler.Add(1)%postgresSettlers], pgJob{fn: fn, last: last})
}

func (s *Postgres) submit(ctx context.Context, writer chan pgJob, job pgJob) error {
	job.result = make(chan error, 1)
	return enqueue(ctx, &s.closeGuard, writer, job, job.result)
}

func (s *Postgres) settler(jobs chan pgJob) {
	defer s.done.Done()
	// A PostgreSQL job never needs a batch of its own.
	groupCommit(jobs, func(pgJob) bool { return false }, s.commit)
}

// commit runs the batch in one transaction, each job in its own savepoint
// so a failing job undoes only its own rows, then the statements the jobs
// left to the end in one round trip (a failing one fails the batch), and
// answers every job after the commit.
func (s *Postgres) commit(batch []pgJob) {
	start := time.Now()
	defer func() { s.Metrics.commits.observe(len(batch), time.Since(start)) }()
	ctx := context.Background()
	results := make([]error, len(batch))
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for i, job := range batch {
			if _, err := tx.Exec(ctx, `SAVEPOINT job`); err != nil {
				return err
			}
			if results[i] = runPgJob(job.fn, tx); results[i] != nil {
				if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT job`); err != nil {
					return err
				}
			}
			if _, err := tx.Exec(ctx, `RELEASE SAVEPOINT job`); err != nil {
				return err
			}
		}
		var last pgx.Batch
		for i, job := range batch {
			if results[i] == nil && job.last != nil {
				for _, st := range *job.last {
					last.Queue(st.query, st.args...)
				}
			}
		}
		if last.Len() == 0 {
			return nil
		}
		return tx.SendBatch(ctx, &last).Close()
	})
	answerBatch(&s.storage, err, results, func(i int, err error) { batch[i].result <- err })
}

// runPgJob keeps a panicking job from taking its writer down.
func runPgJob(fn func(pgx.Tx) error, tx pgx.Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("write job panicked: %v", r)
		}
	}()
	return fn(tx)
}

// ---- imports ----

// Import is SQLite.Import's contract on PostgreSQL, pipelined with the
// other imports of its application's writer (commitImports), answered once
// their transaction has committed.
func (s *Postgres) Import(ctx context.Context, req domain.ImportRequest, now time.Time) (*domain.ImportResult, error) {
	job := newPgImport(req, now)
	err := enqueue(ctx, &s.closeGuard, s.writers[uint64(req.AppID)%postgresWriters], job, job.result)
	return imported(s.Metrics.imports, job.res, job.allInvalid, err)
}
