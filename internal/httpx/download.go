package httpx

import (
	"io"
	"log/slog"
	"mime"
	"net/http"
	"time"
)

// Download is an answer that is a file written as it is read (a results
// export, docs/admin.md#results-as-csv): its length is not known ahead,
// and no part of it is held longer than it takes to write.
type Download struct {
	Name, ContentType string
	Write             func(w io.Writer) error
}

// DownloadWriteTimeout bounds each write of a download instead of the
// whole answer (http.write_timeout would cut a long export): a client
// that stops reading is let go after it.
const DownloadWriteTimeout = time.Minute

// Serve writes the download. An error once its first bytes are out cannot
// be answered: it is logged and the connection cut (http.ErrAbortHandler),
// so the client sees a broken download, never a short file that looks
// whole. Callers that recover panics let that one through.
func (d *Download) Serve(w http.ResponseWriter, r *http.Request, log *slog.Logger) {
	h := w.Header()
	h.Set("Content-Type", d.ContentType)
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": d.Name}))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	err := d.Write(deadlineWriter{w, http.NewResponseController(w)})
	if err != nil {
		if r.Context().Err() == nil {
			log.Error("download cut short", "path", r.URL.Path, "err", err)
		}
		panic(http.ErrAbortHandler)
	}
}

// deadlineWriter moves the write deadline on before each write.
type deadlineWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (d deadlineWriter) Write(p []byte) (int, error) {
	d.rc.SetWriteDeadline(time.Now().Add(DownloadWriteTimeout)) // an error: a writer without deadlines
	return d.w.Write(p)
}
