package ops

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"dialbox/internal/config"
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// NewLogger makes a logger of the format and level the log section asks for.
func NewLogger(c config.LogConfig, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: config.LogLevels[c.Level]}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// LogBuffer batches the access log: a write per request line cost a
// system call each and serialized every request on the handler's lock.
// Buffered lines go out when the buffer fills, every interval, before any
// line written through Immediate (so the order of lines is kept), and on
// Close.
type LogBuffer struct {
	mu       sync.Mutex
	buf      *bufio.Writer
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

func NewLogBuffer(out io.Writer, interval time.Duration) *LogBuffer {
	b := &LogBuffer{buf: bufio.NewWriterSize(out, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go b.flushEvery(interval)
	return b
}

func (b *LogBuffer) flushEvery(interval time.Duration) {
	defer close(b.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			b.mu.Lock()
			b.buf.Flush()
			b.mu.Unlock()
		}
	}
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Immediate is a writer whose lines go out at once, after what is buffered.
func (b *LogBuffer) Immediate() io.Writer { return immediateWriter{b} }

type immediateWriter struct{ b *LogBuffer }

func (w immediateWriter) Write(p []byte) (int, error) {
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	n, err := w.b.buf.Write(p)
	if err == nil {
		err = w.b.buf.Flush()
	}
	return n, err
}

// Close stops the timer and writes what is left.
func (b *LogBuffer) Close() error {
	b.stopOnce.Do(func() { close(b.stop) })
	<-b.done
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Flush()
}

// NoteRequest records the operation and, once authenticated, the tenant of
// a public API request on w, the writer the access-log middleware handed
// down (or one wrapping it, found through Unwrap); it does nothing outside
// that middleware. The writer carries it rather than the request's
// context: a new context is a copy of the request, two allocations each.
func NoteRequest(w http.ResponseWriter, op string, app *domain.Application) {
	for {
		switch rw := w.(type) {
		case *resultRecorder:
			rw.op = op
			if app != nil {
				rw.tenant = app.APIKey
			}
			return
		case interface{ Unwrap() http.ResponseWriter }:
			w = rw.Unwrap()
		default:
			return
		}
	}
}

// saneRequestID accepts a caller's X-Request-Id only if it is short and
// made of characters that cannot forge log lines or headers.
func saneRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_.:", c)) {
			return false
		}
	}
	return true
}

func newRequestID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// observed wraps every request: it gives it a request id (X-Request-Id),
// then writes one access log line and the request metrics into m.
func observed(log *AccessLog, m HTTPMetrics, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-Id")
		if !saneRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set("X-Request-Id", id)
		rec := &resultRecorder{StatusWriter: httpx.StatusWriter{ResponseWriter: w}}
		next.ServeHTTP(rec, r)

		op := rec.op
		if op == "" {
			op = routeClass(r.URL.Path)
		}
		code := rec.resultCode()
		elapsed := time.Since(start)
		m.observe(op, code, elapsed)
		level := slog.LevelInfo
		if rec.status() >= 500 {
			level = slog.LevelWarn
		}
		// The tenant is the API key only: never the token or a secret.
		log.write(r.Context(), level, accessLine{requestID: id, method: r.Method, path: r.URL.Path, op: op,
			tenant: rec.tenant, code: code, status: rec.status(), latencyMS: float64(elapsed.Microseconds()) / 1000})
	})
}

// routeClass names the non-public routes for logs and metrics without
// letting arbitrary paths become label values.
func routeClass(path string) string {
	switch {
	case strings.HasPrefix(path, "/admin/"):
		return "admin"
	case strings.HasPrefix(path, "/sink/"):
		return "sink"
	case path == "/metrics", path == "/healthz", path == "/readyz", path == "/openapi.yaml":
		return strings.TrimPrefix(path, "/")
	}
	return "other"
}

// resultRecorder keeps the HTTP status and the public API's result code,
// and what NoteRequest learns: the operation and the tenant.
// Every public API body is written by httpx.WriteJSON in one Write, beginning
// {"status":0,"code":N or {"status":1, so the code is read off its start.
type resultRecorder struct {
	httpx.StatusWriter
	sniffed    bool
	apiCode    string
	op, tenant string
}

func (r *resultRecorder) Write(b []byte) (int, error) {
	if !r.sniffed && len(b) > 0 {
		r.sniffed = true
		r.apiCode = sniffAPICode(b)
	}
	return r.StatusWriter.Write(b)
}

// Flush keeps streaming handlers (the sink) working through the wrapper.
func (r *resultRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *resultRecorder) status() int {
	if r.Status == 0 {
		return http.StatusOK
	}
	return r.Status
}

// resultCode is the public API's code ("1" for success, as the imports
// table records it), or the HTTP status for any other response.
func (r *resultRecorder) resultCode() string {
	if r.apiCode != "" {
		return r.apiCode
	}
	return strconv.Itoa(r.status())
}

func sniffAPICode(b []byte) string {
	b = b[:min(len(b), 40)]
	if bytes.HasPrefix(b, []byte(`{"status":1,`)) {
		return "1"
	}
	rest, ok := bytes.CutPrefix(b, []byte(`{"status":0,"code":`))
	if !ok {
		return ""
	}
	end := bytes.IndexFunc(rest, func(c rune) bool { return c < '0' || c > '9' })
	if end <= 0 {
		return ""
	}
	return string(rest[:end])
}
