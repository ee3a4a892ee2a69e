package admin

import (
	"dialbox/internal/dnc"
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/julienschmidt/httprouter"
)

// The do-not-call lists (docs/compliance.md): /admin/v1/dnc is the
// national register, /admin/v1/apps/:app/dnc a tenant's own list. Each
// counts, adds numbers (JSON), is replaced whole by an uploaded file, and
// looks up and removes one number.

func (a *Admin) dncRoutes(r *httprouter.Router, base string) {
	r.GET(base, a.handle(a.countDNC))
	r.POST(base+"/numbers", a.handle(a.addDNC))
	r.PUT(base+"/numbers", func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		a.handle(func(r *http.Request, ps httprouter.Params) (any, error) { return a.replaceDNC(w, r, ps) })(w, r, ps)
	})
	r.GET(base+"/numbers/:number", a.handle(a.lookupDNC))
	r.DELETE(base+"/numbers/:number", a.handle(a.removeDNC))
}

// dncList is the list a route names: the national register, or the
// tenant's when the path has an :app.
func (a *Admin) dncList(r *http.Request, ps httprouter.Params) (int64, error) {
	if ps.ByName("app") == "" {
		return domain.NationalList, nil
	}
	app, err := a.app(r, ps)
	if err != nil {
		return 0, err
	}
	return app.ID, nil
}

func (a *Admin) countDNC(r *http.Request, ps httprouter.Params) (any, error) {
	list, err := a.dncList(r, ps)
	if err != nil {
		return nil, err
	}
	n, loaded, err := a.dnc.CountDNC(r.Context(), list)
	var at *time.Time
	if !loaded.IsZero() {
		at = &loaded
	}
	return map[string]any{"count": n, "loaded_at": at}, err
}

func (a *Admin) addDNC(r *http.Request, ps httprouter.Params) (any, error) {
	list, err := a.dncList(r, ps)
	if err != nil {
		return nil, err
	}
	var b struct {
		Numbers []string `json:"numbers"`
	}
	if err := httpx.DecodeJSON(r, &b, httpx.AdminBody); err != nil {
		return nil, err
	}
	if len(b.Numbers) == 0 {
		return nil, domain.Invalid("numbers", "must hold at least one phone number")
	}
	var bad []domain.FieldError
	phones := make([]string, len(b.Numbers))
	for i, raw := range b.Numbers {
		if phones[i], err = domain.NormalizePhone(raw, a.region); err != nil {
			bad = append(bad, domain.FieldError{Field: "numbers[" + strconv.Itoa(i) + "]", Reason: err.Error()})
		}
	}
	if len(bad) > 0 {
		return nil, domain.ValidationError(bad...)
	}
	added, err := a.dnc.AddDNC(r.Context(), list, phones, a.now())
	return map[string]int{"added": added, "duplicate": len(phones) - added}, err
}

// replaceDNC reads the body as a list file, streamed: only its numbers are
// kept in memory, 8 bytes each. A national register is a body of about
// 130 MB that may take longer than http.read_timeout to arrive and longer
// than http.write_timeout to load, so once the token is checked this
// route's deadlines follow the upload instead
// (docs/configuration.md#http): the body may take as long as it
// needs while it keeps coming, and the answer gets write_timeout once the
// list is loaded.
func (a *Admin) replaceDNC(w http.ResponseWriter, r *http.Request, ps httprouter.Params) (any, error) {
	list, err := a.dncList(r, ps)
	if err != nil {
		return nil, err
	}
	var force bool
	switch r.URL.Query().Get("force") {
	case "", "false":
	case "true":
		force = true
	default:
		return nil, domain.Invalid("force", "must be true or false")
	}
	rc := http.NewResponseController(w)
	body := &uploadBody{r: r.Body, rc: rc, timeout: a.readTimeout}
	rep, err := dnc.Import(r.Context(), a.dnc, body, dnc.Length{Bytes: r.ContentLength, Claimed: true},
		dnc.Load{List: list, Region: a.region, Replace: true, Force: force, Now: a.now()})
	rc.SetWriteDeadline(time.Now().Add(a.writeTimeout)) // an error: a writer without deadlines
	var fileErr *dnc.FileError
	if errors.As(err, &fileErr) {
		return nil, domain.Invalid("body", fileErr.Error())
	}
	if shrink := (*dnc.ShrinkError)(nil); errors.As(err, &shrink) {
		return nil, domain.Conflict("Replacing the list would drop more than %.0f%% of its %d numbers (the file holds %d); send it with ?force=true to replace the list anyway",
			dnc.ReplaceMaxShrink*100, shrink.Listed, shrink.File)
	}
	return rep, err
}

// dncNumber is the list a route names and its :number in E.164.
func (a *Admin) dncNumber(r *http.Request, ps httprouter.Params) (list int64, e164 string, err error) {
	if list, err = a.dncList(r, ps); err != nil {
		return 0, "", err
	}
	if e164, err = domain.NormalizePhone(ps.ByName("number"), a.region); err != nil {
		return 0, "", domain.Invalid("number", err.Error())
	}
	return list, e164, nil
}

func (a *Admin) lookupDNC(r *http.Request, ps httprouter.Params) (any, error) {
	list, e164, err := a.dncNumber(r, ps)
	if err != nil {
		return nil, err
	}
	lists, err := a.dnc.LookupDNC(r.Context(), list, e164)
	return map[string]any{"number": e164, "lists": lists}, err
}

func (a *Admin) removeDNC(r *http.Request, ps httprouter.Params) (any, error) {
	list, e164, err := a.dncNumber(r, ps)
	if err != nil {
		return nil, err
	}
	err = a.dnc.RemoveDNC(r.Context(), list, e164)
	return map[string]string{"deleted": e164}, notFound(err, "Number")
}

// uploadBody is a request body whose read deadline moves on as it is read:
// the client may take as long as it needs, but not stall for about timeout.
// At the end of the body it leaves the deadline alone: the server lifts it
// then, to watch the idle connection while the handler still works, and a
// deadline set after that would cancel the request.
type uploadBody struct {
	r       io.Reader
	rc      *http.ResponseController
	timeout time.Duration
	moved   time.Time // when the deadline was last moved
	ended   bool
}

func (b *uploadBody) Read(p []byte) (int, error) {
	// Moved at most ten times a timeout: each is a timer update, and a
	// 130 MB body is read 4 KB at a time.
	if now := time.Now(); !b.ended && now.Sub(b.moved) >= b.timeout/10 {
		b.rc.SetReadDeadline(now.Add(b.timeout)) // an error: a reader without deadlines
		b.moved = now
	}
	n, err := b.r.Read(p)
	if err != nil {
		b.ended = true
	}
	return n, err
}
