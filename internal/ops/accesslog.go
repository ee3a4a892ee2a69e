package ops

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"dialbox/internal/config"
)

// AccessLog writes the line per request. One NewAccessLog made writes a
// line by hand, the bytes its slog handler would write (TestAccessLine
// holds them to it), when every string of the line is plain, as nearly
// all are: slog's record, its attributes and its handler were about a
// twentieth of a one-contact request's CPU. Any other line, and every
// line of an AccessLog around another logger, goes through slog.
type AccessLog struct {
	log  *slog.Logger
	out  io.Writer // where log writes; nil: every line through log
	json bool
}

// NewAccessLog is the access log of the log section's format and level,
// written to w.
func NewAccessLog(c config.LogConfig, w io.Writer) *AccessLog {
	return &AccessLog{log: NewLogger(c, w), out: w, json: c.Format == "json"}
}

// accessLine is what one line says of a request.
type accessLine struct {
	requestID, method, path, op, tenant, code string
	status                                    int
	latencyMS                                 float64
}

var lineBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

func (a *AccessLog) write(ctx context.Context, level slog.Level, l accessLine) {
	if !a.log.Enabled(ctx, level) {
		return
	}
	if a.out != nil {
		buf := lineBuffers.Get().(*[]byte)
		b, ok := l.append((*buf)[:0], a.json, time.Now(), level)
		if ok {
			a.out.Write(b)
		}
		if cap(b) <= 4<<10 { // a long path's buffer is not kept
			*buf = b
			lineBuffers.Put(buf)
		}
		if ok {
			return
		}
	}
	a.log.LogAttrs(ctx, level, "request",
		slog.String("request_id", l.requestID), slog.String("method", l.method), slog.String("path", l.path),
		slog.String("op", l.op), slog.String("tenant", l.tenant), slog.String("code", l.code),
		slog.Int("http_status", l.status), slog.Float64("latency_ms", l.latencyMS))
}

// append appends the line as slog's text or JSON handler writes it at t;
// ok is false, and b not to be used, when a string is not plain or the
// latency would be written in exponent form in JSON.
func (l accessLine) append(b []byte, json bool, t time.Time, level slog.Level) (_ []byte, ok bool) {
	t = t.Round(0) // no monotonic reading, as slog's record
	if json {
		if y := t.Year(); y < 0 || y >= 10000 { // slog's JSON handler adds an error
			return b, false
		}
		b = append(b, `{"time":"`...)
		b = t.AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","level":"`...)
	} else {
		b = append(b, "time="...)
		b = appendRFC3339Millis(b, t)
		b = append(b, " level="...)
	}
	b = append(b, level.String()...)
	if json {
		b = append(b, `","msg":"request"`...)
	} else {
		b = append(b, " msg=request"...)
	}
	for _, kv := range [...]struct{ key, value string }{{"request_id", l.requestID}, {"method", l.method},
		{"path", l.path}, {"op", l.op}, {"tenant", l.tenant}, {"code", l.code}} {
		if !plain(kv.value) {
			return b, false
		}
		b = appendKey(b, json, kv.key)
		switch {
		case json:
			b = append(append(append(b, '"'), kv.value...), '"')
		case kv.value == "":
			b = append(b, `""`...)
		default:
			b = append(b, kv.value...)
		}
	}
	b = strconv.AppendInt(appendKey(b, json, "http_status"), int64(l.status), 10)
	b = appendKey(b, json, "latency_ms")
	if json {
		// encoding/json writes a float in exponent form below 1e-6 and
		// from 1e21, as strconv's 'f' between, and no NaN.
		if !(l.latencyMS == 0 || l.latencyMS >= 1e-6 && l.latencyMS < 1e21) {
			return b, false
		}
		b = strconv.AppendFloat(b, l.latencyMS, 'f', -1, 64)
		return append(b, "}\n"...), true
	}
	b = strconv.AppendFloat(b, l.latencyMS, 'g', -1, 64)
	return append(b, '\n'), true
}

func appendKey(b []byte, json bool, key string) []byte {
	if json {
		return append(append(append(b, `,"`...), key...), `":`...)
	}
	return append(append(append(b, ' '), key...), '=')
}

// plain says whether s is written as it is by both handlers: printable
// ASCII but for the space, '=', '"' and '\\' (which the text handler
// quotes or the JSON handler escapes).
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '=' || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// appendRFC3339Millis is slog's text handler's time: RFC 3339 in
// milliseconds, always three digits of them.
func appendRFC3339Millis(b []byte, t time.Time) []byte {
	const prefixLen = len("2006-01-02T15:04:05.000")
	n := len(b)
	t = t.Truncate(time.Millisecond).Add(time.Millisecond / 10)
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b[:n+prefixLen], b[n+prefixLen+1:]...) // the fourth digit dropped
}
