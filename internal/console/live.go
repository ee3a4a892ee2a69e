package console

import (
	"context"
	"dialbox/internal/httpx"
	"encoding/json"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"
)

// Live pages: one Server-Sent Events stream per page, sending the page's
// live parts again, rendered by the same templates, when they change
// (docs/console.md#live-updates). console.js swaps them in; without
// JavaScript the page is the same, as of its loading.

// liveFragment is one live part of a page: the element's id and its new
// inner HTML.
type liveFragment struct {
	ID   string `json:"id"`
	HTML string `json:"html"`
}

// liveFunc renders a page's live parts now; nil fragments: nothing new.
type liveFunc func(ctx context.Context) ([]liveFragment, error)

// liveHeartbeat is how often an idle stream says it is alive (a comment
// line), so proxies and the browser do not drop it.
const liveHeartbeat = 15 * time.Second

// liveWriteTimeout bounds each event's write: the server's WriteTimeout
// would otherwise cut the long-lived answer.
const liveWriteTimeout = 10 * time.Second

// fragments renders the named templates of page with data.
func (c *Console) fragments(page string, data any, names ...string) ([]liveFragment, error) {
	out := make([]liveFragment, 0, len(names))
	for _, name := range names {
		html, err := c.fragment(page, name, data)
		if err != nil {
			return nil, err
		}
		out = append(out, liveFragment{ID: name, HTML: html})
	}
	return out, nil
}

func (c *Console) live(open func(r *http.Request, ps httprouter.Params) (liveFunc, error)) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		c.headers(w)
		if c.sessions.get(r, c.now()) == nil {
			w.WriteHeader(http.StatusNoContent) // an EventSource does not reconnect after a 204
			return
		}
		err := checkFields(r.URL.Query())
		var render liveFunc
		if err == nil {
			render, err = open(r, ps)
		}
		if err != nil {
			status, msg, _ := httpx.ConsoleError(err)
			http.Error(w, msg, status)
			return
		}
		rc := http.NewResponseController(w)
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Accel-Buffering", "no") // a buffering proxy would hold the events
		w.WriteHeader(http.StatusOK)
		write := func(b []byte) bool {
			if rc.SetWriteDeadline(time.Now().Add(liveWriteTimeout)) != nil {
				return false
			}
			if _, err := w.Write(b); err != nil {
				return false
			}
			return rc.Flush() == nil
		}
		if !write([]byte("retry: 3000\n\n")) {
			return
		}
		ticker := time.NewTicker(c.liveEvery)
		defer ticker.Stop()
		sent := map[string]string{}
		lastWrite := time.Now()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-c.stop:
				return
			case <-ticker.C:
			}
			if c.sessions.get(r, c.now()) == nil {
				write([]byte("event: signedout\ndata: {}\n\n"))
				return
			}
			frags, err := render(r.Context())
			if err != nil {
				if r.Context().Err() == nil {
					c.log.Error("console live update failed", "path", r.URL.Path, "err", err)
				}
				return
			}
			for _, f := range frags {
				if sent[f.ID] == f.HTML {
					continue
				}
				sent[f.ID] = f.HTML
				b, _ := json.Marshal(f)
				if !write(append(append([]byte("event: fragment\ndata: "), b...), '\n', '\n')) {
					return
				}
				lastWrite = time.Now()
			}
			if time.Since(lastWrite) >= liveHeartbeat {
				if !write([]byte(": heartbeat\n\n")) {
					return
				}
				lastWrite = time.Now()
			}
		}
	}
}
