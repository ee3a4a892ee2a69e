package ops

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"dialbox/internal/tts"
)

// Metrics are one Main's counters and histograms of what happens in its
// process, in the registry its /metrics serves. Main builds them and hands
// each part the ones it records at construction (docs/architecture.md):
// several Mains in one process (the tests) count apart. Values that live
// in the database are read on scrape by the Main's dbCollector.
type Metrics struct {
	registry *prometheus.Registry
	http     HTTPMetrics
	// trunkRegistered is the SIP dialer's dialbox_sip_trunk_registered.
	TrunkRegistered *prometheus.GaugeVec
	// endpointsAtShare is the webhook deliverer's
	// dialbox_webhook_endpoints_at_share.
	EndpointsAtShare prometheus.Gauge
}

// NewMetrics makes and registers a Main's metrics, dialbox_build_info
// saying version, with more: what other parts record (the store's).
func NewMetrics(version string, more ...prometheus.Collector) *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		http: HTTPMetrics{
			requests: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "dialbox_http_requests_total",
				Help: "HTTP requests by operation (A, B, C, admin, sink, metrics, healthz, readyz, openapi.yaml, other) and result code (bodies in the API envelope: 1 for success, else the error code; other responses: the HTTP status).",
			}, []string{"op", "code"}),
			duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
				Name:    "dialbox_http_request_duration_seconds",
				Help:    "Time from a request's arrival to the end of its response, by operation and result code.",
				Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
			}, []string{"op", "code"}),
		},
		TrunkRegistered: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "dialbox_sip_trunk_registered",
			Help: "Per trunk with register = true: 1 while its last REGISTER was accepted, 0 while it fails (retried with backoff; the log says why).",
		}, []string{"trunk"}),
		EndpointsAtShare: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "dialbox_webhook_endpoints_at_share",
			Help: "Webhook endpoints with webhooks.max_in_flight_per_endpoint attempts under way on this node at the dispatcher's last look: slow receivers; their other due messages wait, the other endpoints' do not.",
		}),
	}
	buildInfo := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dialbox_build_info",
		Help: "Always 1; the version label is the running build.",
	}, []string{"version"})
	buildInfo.WithLabelValues(version).Set(1)
	m.registry.MustRegister(m.http.requests, m.http.duration, m.TrunkRegistered, m.EndpointsAtShare, buildInfo,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.registry.MustRegister(more...)
	return m
}

// HTTPMetrics are what the access log wrapped around every request
// (observed) records.
type HTTPMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func (m HTTPMetrics) observe(op, code string, d time.Duration) {
	m.requests.WithLabelValues(op, code).Inc()
	m.duration.WithLabelValues(op, code).Observe(d.Seconds())
}

// MetricsHandler serves a Main's metrics (process), its database gauges
// and its other collectors. A failing database query leaves its metrics
// out rather than failing the whole scrape.
func MetricsHandler(process prometheus.Gatherer, store Database, log *slog.Logger, collectors ...prometheus.Collector) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(&dbCollector{store: store, log: log})
	reg.MustRegister(collectors...)
	return promhttp.HandlerFor(prometheus.Gatherers{process, reg},
		promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)})
}

// TTSCache is the SIP dialer's TTS cache as its collector reads it.
type TTSCache interface {
	Stats() (tts.CacheStats, error)
}

// ttsCacheCollector reads the SIP dialer's TTS cache on every scrape: its
// files as they are on disk (docs/sip.md#text-to-speech).
type ttsCacheCollector struct {
	cache TTSCache
	log   *slog.Logger
}

func (c ttsCacheCollector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c ttsCacheCollector) Collect(ch chan<- prometheus.Metric) {
	s, err := c.cache.Stats()
	if err != nil {
		c.log.Warn("metrics: reading the TTS cache", "err", err)
		return
	}
	for _, m := range ttsCacheMetrics {
		ch <- prometheus.MustNewConstMetric(m.desc, m.kind, float64(m.value(s)))
	}
}

// ttsCacheMetrics are the TTS cache's metrics, each with the figure of
// its stats it reports.
var ttsCacheMetrics = []struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(tts.CacheStats) int64
}{
	{prometheus.NewDesc("dialbox_tts_cache_entries", "Renderings in the TTS cache (tts.cache_dir), one WAV file each.", nil, nil), prometheus.GaugeValue, func(s tts.CacheStats) int64 { return int64(s.Entries) }},
	{prometheus.NewDesc("dialbox_tts_cache_bytes", "Size of the renderings in the TTS cache, bounded by tts.cache_max_mib.", nil, nil), prometheus.GaugeValue, func(s tts.CacheStats) int64 { return s.Bytes }},
	{prometheus.NewDesc("dialbox_tts_cache_hits_total", "Prompts answered from the TTS cache since the start.", nil, nil), prometheus.CounterValue, func(s tts.CacheStats) int64 { return s.Hits }},
	{prometheus.NewDesc("dialbox_tts_cache_misses_total", "Prompts the TTS engine rendered since the start.", nil, nil), prometheus.CounterValue, func(s tts.CacheStats) int64 { return s.Misses }},
	{prometheus.NewDesc("dialbox_tts_cache_evictions_total", "Renderings removed from the TTS cache since the start: unused for tts.cache_max_age, or the least recently used beyond tts.cache_max_mib or tts.cache_min_free_mib.", nil, nil), prometheus.CounterValue, func(s tts.CacheStats) int64 { return s.Evicted }},
	{prometheus.NewDesc("dialbox_tts_cache_skipped_total", "Renderings not stored since the start, because the cache's file system had less than tts.cache_min_free_mib free even after the cache gave back its own.", nil, nil), prometheus.CounterValue, func(s tts.CacheStats) int64 { return s.Skipped }},
}

// retainedBytesGauges report what each part of memory bounded in bytes
// holds, read at each scrape: size gives a part's entries and bytes.
func retainedBytesGauges(parts map[string]func() (entries, bytes int)) []prometheus.Collector {
	var gauges []prometheus.Collector
	for part, size := range parts {
		gauges = append(gauges, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "dialbox_memory_retained_bytes",
			Help:        "Bytes held in memory by the request journal, the webhook sink and the verified-token cache, each within its bound.",
			ConstLabels: prometheus.Labels{"part": part}},
			func() float64 { _, bytes := size(); return float64(bytes) }))
	}
	return gauges
}

// dbCollector reads on every scrape the values kept in the database, so
// they are right after a restart and whichever component changed them. Its
// queries are in the SQL every store speaks (MetricsRows).
type dbCollector struct {
	store Database
	log   *slog.Logger
}

var (
	descQueueDepth = prometheus.NewDesc("dialbox_queue_depth",
		"Contacts queued (waiting for their next attempt) per scenario.", []string{"tenant", "scenario"}, nil)
	descCallsInProgress = prometheus.NewDesc("dialbox_calls_in_progress",
		"Calls being dialled or talking now.", []string{"tenant"}, nil)
	descCallsTotal = prometheus.NewDesc("dialbox_calls_total",
		"Ended call attempts by outcome (ANSWERED, BUSY, NO_ANSWER, FAILED, REJECTED, VOICE_MAIL, INVALID_NUMBER, CANCELED, and DO_NOT_CALL for an attempt a do-not-call list or the destination policy kept from being dialled).", []string{"outcome"}, nil)
	descCallsBlocked = prometheus.NewDesc("dialbox_calls_blocked_total",
		"Attempts the calling rules kept from being dialled, by reason (dnc_national, dnc_tenant; destination_premium, destination_special, destination_foreign, destination_denied; daily_limit, advertising_hours: delayed, not dropped).", []string{"reason"}, nil)
	descWalletBalance = prometheus.NewDesc("dialbox_wallet_balance_vnd",
		"Wallet balance per tenant in VND (prepaid=\"false\": postpaid, not checked).", []string{"tenant", "prepaid"}, nil)
	descWebhookDeliveries = prometheus.NewDesc("dialbox_webhook_deliveries_total",
		"Webhook delivery attempts by result: success (2xx), http_error (other status), network_error (no response).", []string{"result"}, nil)
	descWebhookLatency = prometheus.NewDesc("dialbox_webhook_delivery_duration_seconds",
		"Time of webhook delivery attempts, from sending to the response or the error.", nil, nil)
	descOutboxBacklog = prometheus.NewDesc("dialbox_webhook_outbox_backlog",
		"Webhook messages waiting for delivery (pending).", nil, nil)
	descOutboxOldest = prometheus.NewDesc("dialbox_webhook_outbox_oldest_age_seconds",
		"Age of the oldest pending webhook message (0 when none is pending).", nil, nil)
	descRecordingFiles = prometheus.NewDesc("dialbox_recordings_files",
		"Call recordings kept (listed on their calls), one WAV file each.", nil, nil)
	descRecordingBytes = prometheus.NewDesc("dialbox_recordings_bytes",
		"Disk space of the call recordings kept, in bytes.", nil, nil)
	descScrapeErrors = prometheus.NewDesc("dialbox_metrics_db_errors",
		"Database queries of this scrape that failed (their metrics are left out).", nil, nil)
)

// webhookLatencyBuckets are in seconds; the query below counts attempts
// at or under each.
var webhookLatencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15}

func (c *dbCollector) Describe(ch chan<- *prometheus.Desc) {
	prometheus.DescribeByCollect(c, ch)
}

func (c *dbCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	failed := 0
	run := func(name, query string, row func(scan func(...any) error) error) {
		if err := c.store.MetricsRows(ctx, query, row); err != nil {
			failed++
			c.log.Warn("metrics query failed", "metric", name, "err", err)
		}
	}
	// labelled runs a query whose rows are desc's label values, then its
	// value.
	labelled := func(name string, desc *prometheus.Desc, kind prometheus.ValueType, labels int, query string) {
		run(name, query, func(scan func(...any) error) error {
			values := make([]string, labels)
			dest := make([]any, labels, labels+1)
			for i := range values {
				dest[i] = &values[i]
			}
			var n float64
			if err := scan(append(dest, &n)...); err != nil {
				return err
			}
			ch <- prometheus.MustNewConstMetric(desc, kind, n, values...)
			return nil
		})
	}
	labelled("queue_depth", descQueueDepth, prometheus.GaugeValue, 2, `SELECT a.api_key, s.id,
		(SELECT count(*) FROM contacts c WHERE c.app_id = s.app_id AND c.scenario_id = s.id AND c.state = 'queued')
		FROM scenarios s JOIN applications a ON a.id = s.app_id`)
	labelled("calls_in_progress", descCallsInProgress, prometheus.GaugeValue, 1, `SELECT a.api_key,
		(SELECT count(*) FROM calls c WHERE c.app_id = a.id AND c.state = 'dialing') FROM applications a`)
	labelled("calls_total", descCallsTotal, prometheus.CounterValue, 1,
		`SELECT outcome, count(*) FROM calls WHERE state = 'ended' AND outcome IS NOT NULL GROUP BY outcome`)
	labelled("calls_blocked", descCallsBlocked, prometheus.CounterValue, 1, `SELECT reason, count(*) FROM call_blocks GROUP BY reason`)
	run("wallet_balance", `SELECT a.api_key, w.prepaid <> 0, w.balance FROM wallets w JOIN applications a ON a.id = w.app_id`, func(scan func(...any) error) error {
		var tenant string
		var prepaid bool
		var balance float64
		if err := scan(&tenant, &prepaid, &balance); err != nil {
			return err
		}
		p := "false"
		if prepaid {
			p = "true"
		}
		ch <- prometheus.MustNewConstMetric(descWalletBalance, prometheus.GaugeValue, balance, tenant, p)
		return nil
	})
	labelled("webhook_deliveries", descWebhookDeliveries, prometheus.CounterValue, 1, `SELECT CASE WHEN status_code BETWEEN 200 AND 299 THEN 'success'
			WHEN status_code IS NOT NULL THEN 'http_error' ELSE 'network_error' END, count(*)
		FROM webhook_attempts GROUP BY 1`)
	run("webhook_latency", webhookLatencyQuery(), func(scan func(...any) error) error {
		counts := make([]uint64, len(webhookLatencyBuckets))
		var count uint64
		var sumMS float64
		dest := []any{&count, &sumMS}
		for i := range counts {
			dest = append(dest, &counts[i])
		}
		if err := scan(dest...); err != nil {
			return err
		}
		buckets := make(map[float64]uint64, len(counts))
		for i, le := range webhookLatencyBuckets {
			buckets[le] = counts[i]
		}
		ch <- prometheus.MustNewConstHistogram(descWebhookLatency, count, sumMS/1000, buckets)
		return nil
	})
	run("outbox", `SELECT count(*), coalesce(min(created_at), 0) FROM webhook_messages WHERE state = 'pending'`, func(scan func(...any) error) error {
		var n float64
		var oldest int64
		if err := scan(&n, &oldest); err != nil {
			return err
		}
		age := 0.0
		if oldest > 0 {
			age = max(0, time.Since(time.UnixMilli(oldest)).Seconds())
		}
		ch <- prometheus.MustNewConstMetric(descOutboxBacklog, prometheus.GaugeValue, n)
		ch <- prometheus.MustNewConstMetric(descOutboxOldest, prometheus.GaugeValue, age)
		return nil
	})
	run("recordings", `SELECT count(*), coalesce(sum(recording_bytes), 0) FROM calls WHERE recording_bytes > 0`, func(scan func(...any) error) error {
		var files, bytes float64
		if err := scan(&files, &bytes); err != nil {
			return err
		}
		ch <- prometheus.MustNewConstMetric(descRecordingFiles, prometheus.GaugeValue, files)
		ch <- prometheus.MustNewConstMetric(descRecordingBytes, prometheus.GaugeValue, bytes)
		return nil
	})
	ch <- prometheus.MustNewConstMetric(descScrapeErrors, prometheus.GaugeValue, float64(failed))
}

func webhookLatencyQuery() string {
	q := `SELECT count(*), coalesce(sum(latency_ms), 0)`
	for _, le := range webhookLatencyBuckets {
		q += `, count(*) FILTER (WHERE latency_ms <= ` + strconv.FormatFloat(le*1000, 'f', -1, 64) + `)`
	}
	return q + ` FROM webhook_attempts`
}
