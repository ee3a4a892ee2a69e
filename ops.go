package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"
)

// opsServer is what an operator needs around the API: /metrics (on the
// main listener or its own), /healthz, /readyz, /openapi.yaml, and the
// request id and access log wrapped around every route.
type opsServer struct {
	metrics     *http.Server // nil when /metrics is on the main listener
	metricsAddr string       // the separate listener's address
}

// startOps adds the operator routes to router and returns the handler to
// serve: router wrapped in the access log.
func (m *Main) startOps(router *httprouter.Router) (http.Handler, error) {
	m.ops = &opsServer{}
	collectors := retainedBytesGauges(map[string]func() (int, int){
		"journal":     m.api.journal.size,
		"sink":        m.sink.size,
		"token_cache": m.api.tokens.size,
	})
	if m.sip != nil {
		collectors = append(collectors, ttsCacheCollector{cache: m.sip.speech, log: m.Log})
	}
	metrics := metricsHandler(m.metrics.registry, m.store, m.Log, collectors...)
	router.GET("/healthz", wrap(http.HandlerFunc(healthz)))
	router.GET("/readyz", wrap(readyz(append(storeChecks(m.store), m.callingChecks()...))))
	router.GET("/openapi.yaml", wrap(http.HandlerFunc(serveOpenAPI)))
	if m.Config.Metrics.Listen == "" {
		router.GET("/metrics", wrap(metrics))
	} else {
		ln, err := net.Listen("tcp", m.Config.Metrics.Listen)
		if err != nil {
			return nil, fmt.Errorf("metrics.listen %s: %w", m.Config.Metrics.Listen, err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", metrics)
		m.ops.metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := m.ops.metrics.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				m.Log.Error("metrics server stopped", "err", err)
			}
		}()
		m.ops.metricsAddr = ln.Addr().String()
		m.Log.Info("metrics serving", "addr", m.ops.metricsAddr)
	}
	access := m.AccessLog
	if access == nil {
		access = m.Log
	}
	return observed(access, m.metrics.http, router), nil
}

// callingChecks report whether webhook delivery and (when enabled) the call
// engine are running.
func (m *Main) callingChecks() []readinessCheck {
	checks := []readinessCheck{{"webhook_delivery", func(context.Context) string {
		if m.webhooks != nil && m.webhooks.Running() {
			return ""
		}
		return "not running"
	}}}
	if m.Config.Engine.Enabled {
		checks = append(checks, readinessCheck{"engine", func(context.Context) string {
			if m.engine != nil && m.engine.Running() {
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

func (o *opsServer) Close() error {
	if o == nil || o.metrics == nil {
		return nil
	}
	return o.metrics.Close()
}
