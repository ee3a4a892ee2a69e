package store

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are what a store records of its own work: its commits, the
// contacts it imported and, on PostgreSQL, its part in the cluster.
type Metrics struct {
	commits commitMetrics
	imports importMetrics
	stmts   stmtMetrics    // nil counters on PostgreSQL, whose driver caches its own
	Cluster clusterMetrics // nil counters on SQLite, which never uses them
}

// NewMetrics makes the metrics of a SQLite store, or of a PostgreSQL
// one (postgres). A command opens its store with metrics no registry
// serves.
func NewMetrics(postgres bool) Metrics {
	m := Metrics{imports: importMetrics{
		added: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dialbox_contacts_imported_total",
			Help: "Contacts added by operations A and C and the import command.",
		}),
		skipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dialbox_contacts_skipped_total",
			Help: "Contacts of import requests that were not added (invalid, duplicate).",
		}),
	}}
	if !postgres {
		m.commits = newCommitMetrics("sqlite", "Write jobs sharing one SQLite transaction (group commit).",
			"Time to run a batch of write jobs and durably commit it.")
		m.stmts = newStmtMetrics()
		return m
	}
	m.commits = newCommitMetrics("postgres", "Write jobs sharing one PostgreSQL transaction of one of this node's writers (group commit).",
		"Time to run a batch of write jobs and durably commit it, round trips to PostgreSQL included.")
	m.Cluster = clusterMetrics{
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dialbox_call_claims_total",
			Help: "Calls this node's scheduler asked to claim, by result: taken, or refused (the contact was taken by another node, or a limit counted across every node was reached).",
		}, []string{"result"}),
		takeovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dialbox_lease_takeovers_total",
			Help: "What another node claimed and left its lease to run out on, taken over by this node, by kind: call (settled CANCELED, not charged, queued again) or message (sent by this node).",
		}, []string{"kind"}),
		renewalFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dialbox_lease_renewal_failures_total",
			Help: "Renewals of this node's leases (its calls up, the webhook messages it holds) that failed; after cluster.lease without one they are another node's.",
		}),
	}
	// Both kinds show from the start, at 0.
	m.Cluster.takeovers.WithLabelValues(takeoverCall)
	m.Cluster.takeovers.WithLabelValues(takeoverMessage)
	return m
}

// newCommitMetrics are the group-commit writer's metrics on database db
// (dialbox_<db>_commit_*), told in their helps.
func newCommitMetrics(db, jobsHelp, durationHelp string) commitMetrics {
	return commitMetrics{
		jobs: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "dialbox_" + db + "_commit_batch_jobs",
			Help:    jobsHelp,
			Buckets: prometheus.ExponentialBuckets(1, 2, 9), // 1 .. 256 = maxJobsPerCommit
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "dialbox_" + db + "_commit_duration_seconds",
			Help:    durationHelp,
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
	}
}

// Collectors are the store's metrics, to register.
func (m Metrics) Collectors() []prometheus.Collector {
	c := []prometheus.Collector{m.imports.added, m.imports.skipped, m.commits.jobs, m.commits.duration}
	if m.stmts.hits != nil {
		c = append(c, m.stmts.hits, m.stmts.misses, m.stmts.prepared, m.stmts.evictions)
	}
	if m.Cluster.claims != nil {
		c = append(c, m.Cluster.claims, m.Cluster.takeovers, m.Cluster.renewalFailures)
	}
	return c
}

// commitMetrics are what a store's group-commit writer records.
type commitMetrics struct {
	jobs, duration prometheus.Histogram
}

func (m commitMetrics) observe(jobs int, d time.Duration) {
	m.jobs.Observe(float64(jobs))
	m.duration.Observe(d.Seconds())
}

// importMetrics count the contacts of imports.
type importMetrics struct {
	added, skipped prometheus.Counter
}

func (m importMetrics) observe(added, skipped int) {
	m.added.Add(float64(added))
	m.skipped.Add(float64(skipped))
}

// clusterMetrics are a PostgreSQL node's counters of what it claims, takes
// over and fails to renew.
type clusterMetrics struct {
	claims, takeovers *prometheus.CounterVec
	renewalFailures   prometheus.Counter
}

// The kinds of dialbox_lease_takeovers_total.
const (
	takeoverCall    = "call"
	takeoverMessage = "message"
)

func (m clusterMetrics) observeClaims(asked, taken int) {
	m.claims.WithLabelValues("taken").Add(float64(taken))
	m.claims.WithLabelValues("refused").Add(float64(asked - taken))
}

func (m clusterMetrics) observeTakeover(kind string) { m.takeovers.WithLabelValues(kind).Inc() }

func (m clusterMetrics) observeLeaseRenewalFailure() { m.renewalFailures.Inc() }

// MetricsRows runs one of dbCollector's queries, which take no arguments,
// on either database.
func (s *sqlStore) MetricsRows(ctx context.Context, query string, row func(scan func(...any) error) error) error {
	return s.db.Query(ctx, query, nil, row)
}
