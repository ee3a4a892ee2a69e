package console

import (
	"context"
	"encoding/csv"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"dialbox/internal/csvsafe"
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"dialbox/internal/importer"

	"github.com/julienschmidt/httprouter"
)

// Uploading contacts (docs/console.md#uploading-contacts): a CSV file
// posted from a scenario's or a campaign's page goes, as it arrives,
// through importer.CSV, the reader of `dialbox import`; the answer is a
// page written as the file is read, a line per chunk, and the rows
// skipped are kept in a file to download, with their reasons, for a day.

// uploadChunk is how many rows one import of an upload takes.
const uploadChunk = 1000

// uploadKeep is how long an upload's skipped rows stay downloadable.
const uploadKeep = 24 * time.Hour

// uploads are the files of skipped rows, in a folder of their own made at
// the first upload.
type uploads struct {
	mu    sync.Mutex
	dir   string
	files map[string]time.Time // id: when it expires
}

// create makes the file of a new upload's skipped rows; it forgets the
// files past uploadKeep first.
func (u *uploads) create(now time.Time) (string, *os.File, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.dir == "" {
		dir, err := os.MkdirTemp("", "dialbox-uploads-")
		if err != nil {
			return "", nil, err
		}
		u.dir, u.files = dir, map[string]time.Time{}
	}
	for id, expires := range u.files {
		if now.After(expires) {
			os.Remove(filepath.Join(u.dir, id+".csv"))
			delete(u.files, id)
		}
	}
	id := randomToken()
	// Owner-only: the rows hold phone numbers and personal fields.
	f, err := os.OpenFile(filepath.Join(u.dir, id+".csv"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", nil, err
	}
	u.files[id] = now.Add(uploadKeep)
	return id, f, nil
}

// path is the file of an upload's skipped rows, "" when there is none (or
// no more).
func (u *uploads) path(id string, now time.Time) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if expires, ok := u.files[id]; !ok || now.After(expires) {
		return ""
	}
	return filepath.Join(u.dir, id+".csv")
}

// removeAll removes every upload's file, when the server stops.
func (u *uploads) removeAll() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.dir != "" {
		os.RemoveAll(u.dir)
		u.dir, u.files = "", nil
	}
}

// uploadStep is one line of the upload's page: the counts after a chunk,
// or (Done) the end, with what stopped it, if anything did.
type uploadStep struct {
	Rows, Added, Skipped int
	Done                 bool
	Err                  string
	SkippedURL           string // the skipped rows' download, when there are any
}

type uploadView struct {
	App      *domain.Application
	Back     string
	Name     string // the file's name, as the browser gave it
	Progress <-chan uploadStep
}

// upload reads the contacts file posted to a scenario's page, or with
// campaign a campaign's. The form's CSRF token comes first, before the
// file, so the file is read only for a form of this console.
func (c *Console) upload(campaign bool) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		c.headers(w)
		s := c.sessions.get(r, c.now())
		if s == nil {
			c.render(w, http.StatusForbidden, layoutData{view: view{Page: "error", Title: "Signed out",
				Data: "You are not signed in (or the session expired): sign in again, then upload the file again."}, Status: 403})
			return
		}
		defer c.recoverPanic(w, r, s)
		mr, err := r.MultipartReader()
		if err != nil {
			c.fail(w, r, s, domain.Invalid("contacts", "must be sent as a file upload (multipart/form-data)"))
			return
		}
		part, err := mr.NextPart()
		var token []byte
		if err == nil && part.FormName() == csrfField {
			token, _ = io.ReadAll(io.LimitReader(part, 100))
		}
		if !s.validCSRF(string(token)) {
			c.render(w, http.StatusForbidden, layoutData{view: view{Page: "error", Title: "Refused",
				Data: "This form was refused: it did not carry the console's security token. Reload the page and try again."},
				CSRF: s.csrf, SignedIn: true, Status: 403})
			return
		}
		file, err := mr.NextPart()
		if err != nil || file.FormName() != "contacts" {
			c.fail(w, r, s, domain.Invalid("contacts", "must be a CSV file"))
			return
		}
		ctx := r.Context()
		app, sc, campaignID, back, err := c.uploadTarget(ctx, ps, campaign)
		if err != nil {
			c.fail(w, r, s, err)
			return
		}
		id, skippedFile, err := c.uploads.create(c.now())
		if err != nil {
			c.fail(w, r, s, err)
			return
		}
		steps := make(chan uploadStep)
		name := domain.QuotedPrefix(file.FileName())
		go func() {
			defer close(steps)
			imp := &importer.CSV{Importer: c.importer, App: app, Scenario: sc, CampaignID: campaignID, Chunk: uploadChunk}
			out, started := csv.NewWriter(skippedFile), false
			imp.Skipped = func(row int, reason string, header, rec []string) error {
				if !started { // the header goes first
					started = true
					out.Write(csvsafe.Row(append([]string{"row", "reason"}, header...)))
				}
				return out.Write(csvsafe.Row(append([]string{strconv.Itoa(row), reason}, rec...)))
			}
			imp.Progress = func() {
				select {
				case steps <- uploadStep{Rows: imp.Rows, Added: imp.Added, Skipped: imp.SkippedRows}:
				case <-ctx.Done():
				}
			}
			err := imp.Run(ctx, file)
			out.Flush()
			err = errors.Join(err, out.Error(), skippedFile.Close())
			end := uploadStep{Rows: imp.Rows, Added: imp.Added, Skipped: imp.SkippedRows, Done: true}
			if imp.SkippedRows > 0 {
				end.SkippedURL = "/console/uploads/" + id + "/skipped.csv"
			}
			detail := "uploaded " + name + ": " + strconv.Itoa(imp.Rows) + " rows read, " + strconv.Itoa(imp.Added) + " added, " +
				strconv.Itoa(imp.SkippedRows) + " skipped"
			if err != nil {
				end.Err = uploadError(err)
				detail += "; stopped: " + end.Err
			}
			c.audit(r, s, app.APIKey, detail)
			select {
			case steps <- end:
			case <-ctx.Done():
			}
		}()
		// The file is read while the page is written (HTTP/1.1 allows it
		// only when asked for).
		http.NewResponseController(w).EnableFullDuplex()
		d := layoutData{view: view{Page: "upload", Title: "Uploading contacts",
			Data: &uploadView{App: app, Back: back, Name: name, Progress: steps}}, CSRF: s.csrf, SignedIn: true}
		c.renderStream(w, d)
		for range steps { // a page cut short leaves the import to end
		}
	}
}

// uploadError says why an upload stopped, in operation A's words for a
// chunk it refused.
func uploadError(err error) string {
	var ce *importer.ChunkError
	if errors.As(err, &ce) {
		_, msg, _ := httpx.ConsoleError(ce.Err)
		return msg + ": rows from " + strconv.Itoa(ce.First) + " on were not imported"
	}
	return err.Error()
}

// uploadTarget is where an upload's contacts go: the scenario, or the
// campaign and its scenario; back is the page the upload came from.
func (c *Console) uploadTarget(ctx context.Context, ps httprouter.Params, campaign bool) (*domain.Application, *domain.Scenario, string, string, error) {
	app, err := c.app(ctx, ps)
	if err != nil {
		return nil, nil, "", "", err
	}
	scenarioID, campaignID := ps.ByName("scenario"), ""
	back := "/console/apps/" + url.PathEscape(app.APIKey) + "/scenarios/" + url.PathEscape(scenarioID)
	if campaign {
		k, err := c.reads.Campaign(ctx, app.ID, ps.ByName("campaign"))
		if err != nil {
			return nil, nil, "", "", err
		}
		scenarioID, campaignID = k.ScenarioID, k.ID
		back = "/console/apps/" + url.PathEscape(app.APIKey) + "/campaigns/" + url.PathEscape(k.ID)
	}
	sc, err := c.reads.Scenario(ctx, app.ID, scenarioID)
	return app, sc, campaignID, back, err
}

// skippedRows serves an upload's skipped rows, behind the session.
func (c *Console) skippedRows(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	c.headers(w)
	s := c.sessions.get(r, c.now())
	path := c.uploads.path(ps.ByName("upload"), c.now())
	if s == nil || path == "" {
		c.fail(w, r, s, domain.NotFound("Upload"))
		return
	}
	f := &httpx.ServedFile{Path: path, Name: "skipped-rows.csv", ContentType: "text/csv; charset=utf-8", Missing: domain.NotFound("Upload")}
	if err := f.Serve(w); err != nil {
		c.fail(w, r, s, err)
	}
}

// renderStream writes a page as its template runs, each part sent at once:
// a page that ranges over a channel shows each of its values as it comes.
func (c *Console) renderStream(w http.ResponseWriter, d layoutData) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if err := c.pages[d.Page].ExecuteTemplate(flushWriter{w, http.NewResponseController(w)}, "layout", d); err != nil {
		c.log.Error("console template failed", "page", d.Page, "err", err)
	}
}

// flushWriter sends each write at once.
type flushWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		f.rc.Flush()
	}
	return n, err
}
