package ops

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/prometheus/client_golang/prometheus"
)

// Server is what an operator needs around the API: /metrics (on the
// main listener or its own), /healthz, /readyz, /openapi.yaml, and the
// request id and access log wrapped around every route.
type Server struct {
	// Handler is the router wrapped in the access log: what the main
	// listener serves.
	Handler http.Handler
	// MetricsAddr is the separate metrics listener's address; "" when
	// /metrics is on the main listener.
	MetricsAddr string
	metrics     *http.Server // nil when /metrics is on the main listener
}

// Parts are what the operator routes read, each handed in complete.
type Parts struct {
	// Router gets the operator routes; the access log wraps it whole.
	Router *httprouter.Router
	// Metrics is the registry /metrics serves and the HTTP metrics the
	// access log records.
	Metrics *Metrics
	Store   Database
	// Node is the id this node's leases carry (PostgreSQL); "" leaves
	// dialbox_node_info out.
	Node string
	Log  *slog.Logger
	// AccessLog gets the line per request; nil: Log.
	AccessLog *AccessLog
	// MetricsListen is metrics.listen: "" serves /metrics on the main
	// listener.
	MetricsListen string
	// Retained gives, for each part of memory bounded in bytes, what it
	// holds (dialbox_memory_retained_bytes).
	Retained map[string]func() (entries, bytes int)
	// TTSCache is the SIP dialer's; nil with the simulated dialer.
	TTSCache TTSCache
	Webhooks Runner
	// Engine is nil when engine.enabled is false: /readyz leaves it out.
	Engine Runner
	// OpenAPI serves /openapi.yaml.
	OpenAPI http.Handler
	// Version is the running build's, on /healthz and dialbox_build_info.
	Version string
}

// Database is what the readiness checks and the database collector
// read of the store.
type Database interface {
	// Ping commits a no-op write through the store's normal write path.
	Ping(ctx context.Context) error
	// CheckStorage is nil unless a write failed for want of room and no
	// probe write has been stored since.
	CheckStorage(ctx context.Context) error
	// Migrations says which migration the database is at and the last one
	// this build knows.
	Migrations(ctx context.Context) (at, known int, err error)
	// MetricsRows runs one of the collector's read-only queries, which
	// take no arguments, calling row for each row.
	MetricsRows(ctx context.Context, query string, row func(scan func(...any) error) error) error
}

// Runner is a part /readyz checks is running: webhook delivery, the engine.
type Runner interface{ Running() bool }

// New adds the operator routes to p.Router and, with metrics.listen
// set, serves /metrics on its own listener.
func New(p Parts) (*Server, error) {
	o := &Server{}
	collectors := retainedBytesGauges(p.Retained)
	if p.TTSCache != nil {
		collectors = append(collectors, ttsCacheCollector{cache: p.TTSCache, log: p.Log})
	}
	if p.Node != "" {
		node := prometheus.NewGauge(prometheus.GaugeOpts{Name: "dialbox_node_info",
			Help: "Always 1; the node label is the id this node's leases carry.", ConstLabels: prometheus.Labels{"node": p.Node}})
		node.Set(1)
		collectors = append(collectors, node)
	}
	metrics := MetricsHandler(p.Metrics.registry, p.Store, p.Log, collectors...)
	router := p.Router
	router.GET("/healthz", wrap(healthz(p.Version)))
	router.GET("/readyz", wrap(readyz(append(storeChecks(p.Store), callingChecks(p.Webhooks, p.Engine)...))))
	router.GET("/openapi.yaml", wrap(p.OpenAPI))
	if p.MetricsListen == "" {
		router.GET("/metrics", wrap(metrics))
	} else {
		ln, err := net.Listen("tcp", p.MetricsListen)
		if err != nil {
			return nil, fmt.Errorf("metrics.listen %s: %w", p.MetricsListen, err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", metrics)
		o.metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := o.metrics.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				p.Log.Error("metrics server stopped", "err", err)
			}
		}()
		o.MetricsAddr = ln.Addr().String()
		p.Log.Info("metrics serving", "addr", o.MetricsAddr)
	}
	access := p.AccessLog
	if access == nil {
		access = &AccessLog{log: p.Log}
	}
	o.Handler = observed(access, p.Metrics.http, router)
	return o, nil
}

// callingChecks report whether webhook delivery and (when enabled) the call
// engine are running.
func callingChecks(webhooks, engine Runner) []readinessCheck {
	checks := []readinessCheck{{"webhook_delivery", func(context.Context) string {
		if webhooks != nil && webhooks.Running() {
			return ""
		}
		return "not running"
	}}}
	if engine != nil {
		checks = append(checks, readinessCheck{"engine", func(context.Context) string {
			if engine.Running() {
				return ""
			}
			return "not running"
		}})
	}
	return checks
}

func wrap(h http.Handler) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) { h.ServeHTTP(w, r) }
}

// Close stops the separate metrics listener, if any.
func (o *Server) Close() error {
	if o == nil || o.metrics == nil {
		return nil
	}
	return o.metrics.Close()
}
