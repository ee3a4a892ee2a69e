package ops

import (
	"context"
	"dialbox/internal/httpx"
	"fmt"
	"net/http"
	"time"
)

// healthz answers while the process serves HTTP at all.
func healthz(version string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "alive", "version": version})
	}
}

// readinessCheck reports "" when its part is ready, else what is wrong.
type readinessCheck struct {
	name  string
	check func(context.Context) string
}

// readyz runs every check and answers 200 when all pass, else 503 with each
// failing check's reason, so an operator sees what is wrong.
func readyz(checks []readinessCheck) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		results := make(map[string]string, len(checks))
		status := http.StatusOK
		for _, c := range checks {
			results[c.name] = "ok"
			if problem := c.check(ctx); problem != "" {
				results[c.name] = problem
				status = http.StatusServiceUnavailable
			}
		}
		state := "ready"
		if status != http.StatusOK {
			state = "not ready"
		}
		httpx.WriteJSON(w, status, map[string]any{"status": state, "checks": results})
	}
}

// storeChecks are the database's readiness checks: the store takes a write
// (SQLite: the writer commits a no-op job, so the lock can be taken and the
// writer goroutine is alive; PostgreSQL: the server answers and is not
// read-only) and, after a write failed for want of room, stores a probe
// write again; and every migration of its schema is applied.
func storeChecks(s Database) []readinessCheck {
	return []readinessCheck{
		{"database", func(ctx context.Context) string {
			done := make(chan error, 1)
			go func() { done <- s.Ping(ctx) }()
			select {
			case err := <-done:
				if err == nil {
					err = s.CheckStorage(ctx)
				}
				if err != nil {
					return "not writable: " + err.Error()
				}
				return ""
			case <-ctx.Done():
				return "not writable: no commit within the time limit (writer stuck or database locked)"
			}
		}},
		{"migrations", func(ctx context.Context) string {
			v, want, err := s.Migrations(ctx)
			if err != nil {
				return "cannot read schema version: " + err.Error()
			}
			if v != want {
				return fmt.Sprintf("schema at migration %d of %d", v, want)
			}
			return ""
		}},
	}
}
