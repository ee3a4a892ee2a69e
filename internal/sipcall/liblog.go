package sipcall

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emiago/diago/media"
	"github.com/emiago/sipgo/sip"
)

// sipgo and diago log through the UserAgent's logger behind a
// libraryHandler, which keeps what anyone on the network can make them log
// small (docs/sip.md#security): sipgo writes every datagram it cannot parse, at
// ERROR, payload and all, so a flood of junk on the SIP port would flood
// the log.
const (
	// libraryBurst lines of one message (info and above) are let through
	// per libraryWindow; the next one let through says how many were left
	// out. Debug lines, asked for, are all kept.
	libraryBurst  = 5
	libraryWindow = time.Minute
	// libraryValueMax bytes of a message or value are kept, with the
	// length of what was cut.
	libraryValueMax = 256
	// libraryMessages distinct messages are counted at once; the
	// libraries' messages are constants, so more is a misbehaving one.
	libraryMessages = 256
	// junkStart bytes of an unparsable message are shown, enough to tell
	// a scanner's probe from a misconfigured device.
	junkStart = 64
)

// sipgoParseFailure is sipgo's message for a datagram (or TCP message)
// that is not SIP.
const sipgoParseFailure = "failed to parse"

// libraryHandler rate-limits and cuts the libraries' log lines before
// next writes them.
type libraryHandler struct {
	next   slog.Handler
	counts *lineCounts
}

func newLibraryHandler(next slog.Handler, now func() time.Time) slog.Handler {
	return &libraryHandler{next: next, counts: &lineCounts{now: now, byMessage: map[string]*lineCount{}}}
}

// lineCounts are the lines of each message in its current window.
type lineCounts struct {
	now       func() time.Time
	mu        sync.Mutex
	byMessage map[string]*lineCount
}

type lineCount struct {
	since      time.Time
	lines      int
	suppressed int
}

// allow says whether a line of msg may be written now and, if it may, how
// many were left out before it.
func (c *lineCounts) allow(msg string) (bool, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	n, ok := c.byMessage[msg]
	if !ok {
		if len(c.byMessage) >= libraryMessages {
			for m, old := range c.byMessage {
				if now.Sub(old.since) >= libraryWindow && old.suppressed == 0 {
					delete(c.byMessage, m)
				}
			}
			if len(c.byMessage) >= libraryMessages {
				return false, 0
			}
		}
		n = &lineCount{since: now}
		c.byMessage[msg] = n
	}
	if now.Sub(n.since) >= libraryWindow {
		n.since, n.lines = now, 0
	}
	if n.lines >= libraryBurst {
		n.suppressed++
		return false, 0
	}
	n.lines++
	left := n.suppressed
	n.suppressed = 0
	return true, left
}

func (h *libraryHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h *libraryHandler) Handle(ctx context.Context, r slog.Record) error {
	left := 0
	if r.Level >= slog.LevelInfo {
		ok, n := h.counts.allow(r.Message)
		if !ok {
			return nil
		}
		left = n
	}
	out := slog.NewRecord(r.Time, r.Level, cut(r.Message), r.PC)
	junk := r.Message == sipgoParseFailure
	if junk {
		// Not dialbox's error: someone sent what is not SIP.
		out.Message, out.Level = "sip: unparsable message dropped", slog.LevelWarn
	}
	r.Attrs(func(a slog.Attr) bool {
		if junk && a.Key == "data" {
			data := a.Value.String()
			out.AddAttrs(slog.Int("size", len(data)), slog.String("start", data[:min(len(data), junkStart)]))
			return true
		}
		out.AddAttrs(cutAttr(a))
		return true
	})
	if left > 0 {
		out.AddAttrs(slog.Int("suppressed", left))
	}
	return h.next.Handle(ctx, out)
}

func (h *libraryHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	cutAttrs := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		cutAttrs[i] = cutAttr(a)
	}
	return &libraryHandler{next: h.next.WithAttrs(cutAttrs), counts: h.counts}
}

func (h *libraryHandler) WithGroup(name string) slog.Handler {
	return &libraryHandler{next: h.next.WithGroup(name), counts: h.counts}
}

// cut keeps libraryValueMax bytes of s.
func cut(s string) string {
	if len(s) <= libraryValueMax {
		return s
	}
	return fmt.Sprintf("%s...(%d bytes)", s[:libraryValueMax], len(s))
}

// cutAttr cuts a's value where it is text: a string, an error or anything
// printed through its String method, and in groups.
func cutAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, cut(v.String()))
	case slog.KindGroup:
		attrs := v.Group()
		out := make([]any, len(attrs))
		for i, g := range attrs {
			out[i] = cutAttr(g)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, cut(x.Error()))
		case fmt.Stringer:
			return slog.String(a.Key, cut(x.String()))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// libraryDefault is where sipgo's and diago's package default loggers
// write, which some of their lines use whatever logger they were given: the
// logger of the latest UserAgent, so that those lines too have dialbox's
// format. The packages read their default without a lock, so it is set
// once and forwards.
var libraryDefault struct {
	once sync.Once
	to   atomic.Pointer[slog.Logger]
}

// routeLibraryDefaults sends the packages' default loggers' lines to log.
func routeLibraryDefaults(log *slog.Logger) {
	libraryDefault.to.Store(log)
	libraryDefault.once.Do(func() {
		forward := slog.New(forwardHandler{})
		sip.SetDefaultLogger(forward)
		media.SetDefaultLogger(forward)
	})
}

// forwardHandler writes to libraryDefault's logger of the moment, with the
// attributes and groups a library added to its default logger.
type forwardHandler struct {
	derive []func(slog.Handler) slog.Handler
}

func (f forwardHandler) handler() slog.Handler {
	h := libraryDefault.to.Load().Handler()
	for _, d := range f.derive {
		h = d(h)
	}
	return h
}

func (f forwardHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return f.handler().Enabled(ctx, level)
}

func (f forwardHandler) Handle(ctx context.Context, r slog.Record) error {
	return f.handler().Handle(ctx, r)
}

func (f forwardHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return forwardHandler{derive: append(f.derive[:len(f.derive):len(f.derive)], func(h slog.Handler) slog.Handler { return h.WithAttrs(attrs) })}
}

func (f forwardHandler) WithGroup(name string) slog.Handler {
	return forwardHandler{derive: append(f.derive[:len(f.derive):len(f.derive)], func(h slog.Handler) slog.Handler { return h.WithGroup(name) })}
}
