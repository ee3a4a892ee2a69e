package httpx

import (
	"bytes"
	"dialbox/internal/domain"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/julienschmidt/httprouter"
)

// Handler serves one route. It returns the result to answer as
// {"status":1,"result":...}, or an error for the edge to map: a domain
// *Error, a wire *Error decided by an edge check, or anything else,
// which is internal (logged, and answered with the API's own body).
type Handler func(r *http.Request, ps httprouter.Params) (any, error)

// Error is an error body of either API: {"status":0,"code":N,"message":"..."}.
type Error struct {
	Code    int                 `json:"code"`
	Message string              `json:"message"`
	Details []domain.FieldError `json:"details,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

type ErrorBody struct {
	Status  int                 `json:"status"`
	Code    int                 `json:"code"`
	Message string              `json:"message"`
	Details []domain.FieldError `json:"details,omitempty"`
}

// ---- the public API's error bodies ----

// The bodies edge checks answer (authentication, rate and concurrency
// limits) and the operations' internal-error bodies, spelled as the spec's
// tables spell them.
var (
	ErrUnauthorized = &Error{Code: 401, Message: "Unauthorized"}
	ErrAppNotFound  = &Error{Code: 1201, Message: "Application is not found"}
	ErrRateLimited  = &Error{Code: 429, Message: "Too many requests"}
	// errOverloaded sheds an import over limits.max_concurrent_imports.
	ErrOverloaded = &Error{Code: 429, Message: "Too many requests",
		Details: []domain.FieldError{{Field: "contacts", Reason: "too many imports in progress; retry shortly"}}}
	ErrUnknownA = &Error{Code: 9999, Message: "Unknown error"}
	errUnknownB = &Error{Code: 9999, Message: "Uknown error"}
	ErrSystemC  = &Error{Code: 500, Message: "Lỗi hệ thống"}
)

// Operation names a public operation and the internal-error body its table
// gives (the three differ: "Unknown error", "Uknown error", "Lỗi hệ thống").
type Operation struct {
	Name     string
	Internal *Error
}

var (
	OpAddToScenario = Operation{"A", ErrUnknownA}
	OpListScenarios = Operation{"B", errUnknownB}
	OpAddToCampaign = Operation{"C", ErrSystemC}
)

// PublicBodies answer the domain errors of the spec's error tables, plus
// dialbox's documented extensions (3001, 404, 413, 429).
var PublicBodies = map[string]*Error{
	domain.ETOOLARGE:        {Code: 413, Message: "Too many contacts"},
	domain.ECONTENTEMPTY:    {Code: 1208, Message: "Scenario content is empty"},
	domain.EWALLETEXPIRED:   {Code: 1104, Message: "Portal wallet is expired"},
	domain.EWALLETEMPTY:     {Code: 1105, Message: "Portal wallet is out of money"},
	domain.EPOOLUNAVAILABLE: {Code: 2301, Message: "Pool hotline is not available"},
	domain.EALLINVALID:      {Code: 1403, Message: "All contacts is invalid"},
	domain.EIMPORTFAILED:    {Code: 1402, Message: "Import contacts failed"},
}

// PublicNotFound answers ENOTFOUND, per entity.
var PublicNotFound = map[string]*Error{
	"Scenario": {Code: 3001, Message: "Scenario is not found"},
	"Campaign": {Code: 404, Message: "Campaign is not found"},
}

// PublicError is the body operation op answers for err. known is false for
// an internal error (op's own internal-error body), which the caller logs.
func PublicError(op Operation, err error) (body *Error, known bool) {
	return errorBody(err, op.Internal, func(e *domain.Error) *Error {
		switch e.Code {
		case domain.EQUEUEFULL:
			return &Error{Code: 429, Message: "Too many requests", Details: e.Details}
		case domain.ENOTFOUND:
			return PublicNotFound[e.Entity]
		}
		return PublicBodies[e.Code]
	})
}

// errorBody is the body an API answers for err: a body already, as it is;
// a domain error's invalid fields as "Validation Failed" with their
// details, in both APIs; another domain error as the API's own body tells
// (nil: it has none); anything else as internal, with known false.
func errorBody(err error, internal *Error, own func(*domain.Error) *Error) (body *Error, known bool) {
	var wire *Error
	if errors.As(err, &wire) {
		return wire, true
	}
	var e *domain.Error
	if errors.As(err, &e) {
		if e.Code == domain.EINVALID {
			return &Error{Code: 400, Message: "Validation Failed", Details: e.Details}, true
		}
		if b := own(e); b != nil {
			return b, true
		}
	}
	return internal, false
}

// SemanticStatus maps an error code to the HTTP status of its body in the
// "semantic" mode (docs/design.md#http-status-of-error-bodies).
func SemanticStatus(code int) int {
	switch code {
	case 400:
		return http.StatusBadRequest
	case 401, 1201:
		return http.StatusUnauthorized
	case 1104, 1105:
		return http.StatusPaymentRequired
	case 3001, 404:
		return http.StatusNotFound
	case 413:
		return http.StatusRequestEntityTooLarge
	case 1208, 1403:
		return http.StatusUnprocessableEntity
	case 429:
		return http.StatusTooManyRequests
	case 2301:
		return http.StatusServiceUnavailable
	default: // 1402, 500, 9999 and anything unforeseen
		return http.StatusInternalServerError
	}
}

// ---- the admin API's error bodies ----

// Admin errors: the public envelope, with the HTTP status equal to the code.
var ErrAdminInternal = &Error{Code: 500, Message: "Internal error"}

// AdminError is the admin API's body for err; known is false for an
// internal error, which the caller logs.
func AdminError(err error) (body *Error, known bool) {
	return errorBody(err, ErrAdminInternal, func(e *domain.Error) *Error {
		switch {
		case e.Code == domain.ENOTFOUND && e.Entity != "":
			return &Error{Code: 404, Message: e.Message}
		case e.Code == domain.ECONFLICT:
			return &Error{Code: 409, Message: e.Message}
		case e.Code == domain.EBADCONFIG:
			return &Error{Code: 422, Message: e.Message}
		}
		return nil
	})
}

func WriteAdminError(w http.ResponseWriter, e *Error) {
	status := e.Code
	if status < 400 || status > 599 {
		status = http.StatusInternalServerError
	}
	WriteJSON(w, status, ErrorBody{Code: e.Code, Message: e.Message, Details: e.Details})
}

// ---- reading requests ----

// BodyRules are how an API reads a JSON request body.
type BodyRules struct {
	Max int64 // bytes
	// whole: a body over max is ETOOLARGE, and it must hold one JSON
	// object and nothing after it (the public API). Otherwise a body over
	// max fails as bad JSON (the admin API).
	Whole bool
	// numbers keeps numbers as json.Number, so contacts echo them as sent.
	Numbers bool
	// strict refuses unknown fields and quotes the decoder on bad JSON.
	strict bool
}

// AdminBody is how the admin API reads bodies.
var AdminBody = BodyRules{Max: 1 << 20, strict: true}

// DecodeJSON reads a JSON object body into v; every problem is EINVALID
// naming the field (or "body"), or ETOOLARGE.
func DecodeJSON(r *http.Request, v any, rules BodyRules) error {
	// Read whole, so a string that is not UTF-8 is refused naming its field
	// rather than turned into U+FFFD by the decoder.
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, rules.Max))
	var tooBig *http.MaxBytesError
	switch {
	case err != nil && !rules.Whole:
		return domain.Invalid("body", "must be a JSON object: "+err.Error())
	case errors.As(err, &tooBig):
		return domain.ErrTooLarge
	case err != nil:
		return domain.Invalid("body", "could not be read")
	}
	valid := utf8.Valid(body)
	if !valid {
		if fe := invalidUTF8Field(body); fe != nil {
			return domain.ValidationError(*fe)
		}
	}
	if cb, ok := v.(*ContactsBody); ok && valid && rules.Numbers {
		if contacts, ok := readContacts(body); ok {
			cb.Contacts = contacts
			return nil
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if rules.Numbers {
		dec.UseNumber()
	}
	if rules.strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typeErr) && typeErr.Field != "":
			return domain.Invalid(typeErr.Field, "must be "+JSONKind(typeErr.Type))
		case rules.strict && strings.HasPrefix(err.Error(), "json: unknown field "):
			return domain.Invalid(strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`), "is not a known field")
		case !rules.strict || errors.Is(err, io.EOF):
			return domain.Invalid("body", "must be a JSON object")
		}
		return domain.Invalid("body", "must be a JSON object: "+err.Error())
	}
	if rules.Whole {
		if _, err := dec.Token(); err != io.EOF {
			return domain.Invalid("body", "must hold one JSON object and nothing after it")
		}
	}
	return nil
}

// JSONKind is what a value of Go type t is in JSON, as an error's reason
// says it.
func JSONKind(t reflect.Type) string {
	goType := t.String()
	switch strings.TrimPrefix(goType, "*") {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "int", "int64", "float64":
		return "a number"
	}
	if strings.HasPrefix(goType, "[]") {
		return "an array"
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Struct || t.Kind() == reflect.Map {
		return "an object"
	}
	return "of type " + goType
}

// IntParam parses an optional integer query parameter within [min, max].
func IntParam(s string, def, min, max int) (int, bool) {
	if s == "" {
		return def, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < min || n > max {
		return 0, false
	}
	return n, true
}

// ---- writing answers ----

// WriteSuccess writes {"status":1,"result":...}. A result already in JSON
// (a cached page) is written as it is, not parsed and compacted again, and
// a whole cached body without even being wrapped.
func WriteSuccess(w http.ResponseWriter, result any) {
	switch r := result.(type) {
	case successBody:
		writeBody(w, http.StatusOK, r)
		return
	case json.RawMessage:
		writeBody(w, http.StatusOK, WrapSuccess(r))
		return
	}
	raw, err := domain.MarshalJSON(result)
	if err != nil { // results are plain data: not expected
		WriteJSON(w, http.StatusInternalServerError, ErrorBody{Code: ErrUnknownA.Code, Message: ErrUnknownA.Message})
		return
	}
	writeBody(w, http.StatusOK, WrapSuccess(raw))
}

// successBody is a whole success body, {"status":1,"result":...}, ready to
// be written again and again (operation B's cached pages).
type successBody []byte

func WrapSuccess(result json.RawMessage) successBody {
	b := make([]byte, 0, len(result)+len(`{"status":1,"result":}`))
	b = append(b, `{"status":1,"result":`...)
	return append(append(b, result...), '}')
}

func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := domain.MarshalJSON(v)
	if err != nil {
		b = []byte(`{"status":0,"code":9999,"message":"Unknown error"}`)
		status = http.StatusInternalServerError
	}
	writeBody(w, status, b)
}

// writeBody writes a whole body in one Write. b must not change afterwards:
// the journal keeps it without a copy.
func writeBody(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// NewRouter is httprouter without its redirects. By default it answers a
// path it could fix (a trailing slash, "..", the wrong case) with a 301 or
// 308 and an HTML body; an API client does not follow those as it would a
// browser, and the fake must answer as the cloud does. Such a path gets
// the router's NotFound, the API's JSON 404, like any other unknown path.
// Nothing in front of the router (observed, the access log) rewrites or
// redirects paths; only the separate metrics listener's ServeMux does, for
// /metrics alone.
func NewRouter() *httprouter.Router {
	r := httprouter.New()
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	return r
}

// ---- the web console's error pages ----

// ConsoleError is the HTTP status and the sentence the console shows for
// err; known is false for an internal error, which the caller logs.
func ConsoleError(err error) (status int, message string, known bool) {
	var e *domain.Error
	if errors.As(err, &e) {
		switch e.Code {
		case domain.EINVALID:
			parts := make([]string, 0, len(e.Details))
			for _, d := range e.Details {
				parts = append(parts, d.Field+" "+d.Reason)
			}
			return http.StatusBadRequest, "Not done: " + strings.Join(parts, "; ") + ".", true
		case domain.ENOTFOUND:
			return http.StatusNotFound, e.Message + ".", true
		case domain.ECONFLICT:
			return http.StatusConflict, e.Message + ".", true
		case domain.EBADCONFIG:
			return http.StatusUnprocessableEntity, e.Message, true
		}
	}
	return http.StatusInternalServerError, "Internal error: the server log has the details.", false
}

// PageParams reads limit (see LimitParam) and offset (default 0).
func PageParams(q url.Values) (int, int, error) {
	limit, err := LimitParam(q)
	if err != nil {
		return 0, 0, err
	}
	offset, ok := IntParam(q.Get("offset"), 0, 0, 1<<31-1)
	if !ok {
		return 0, 0, domain.Invalid("offset", "must be an integer of 0 or more")
	}
	return limit, offset, nil
}

// LimitParam reads limit, the page size of the admin API's and the console's paged lists
// (the journal has its own): 1 to 500, default 50.
func LimitParam(q url.Values) (int, error) {
	limit, ok := IntParam(q.Get("limit"), 50, 1, 500)
	if !ok {
		return 0, domain.Invalid("limit", "must be an integer from 1 to 500")
	}
	return limit, nil
}

// TimeParam reads an optional RFC 3339 query parameter.
func TimeParam(q url.Values, name string) (time.Time, error) {
	s := q.Get(name)
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return t, domain.Invalid(name, "must be an RFC 3339 time like \"2026-01-01T00:00:00Z\"")
	}
	return t, nil
}

// CursorPageParams reads from, to, limit and cursor (a next_cursor of an
// earlier page), and complains of the first bad one in that order.
func CursorPageParams(q url.Values) (domain.CursorPage, error) {
	var p domain.CursorPage
	var err error
	if p.From, err = TimeParam(q, "from"); err != nil {
		return p, err
	}
	if p.To, err = TimeParam(q, "to"); err != nil {
		return p, err
	}
	if p.Limit, err = LimitParam(q); err != nil {
		return p, err
	}
	if c := q.Get("cursor"); c != "" {
		if p.Cursor, err = strconv.ParseInt(c, 10, 64); err != nil || p.Cursor <= 0 {
			return p, domain.Invalid("cursor", "must be the next_cursor of an earlier page")
		}
	}
	return p, nil
}

// ServedFile is an answer that is a file, not JSON (the admin API's, the
// console's recording): the body is the
// file, downloaded under name.
type ServedFile struct {
	Path, Name, ContentType string
	Missing                 error // the answer when the file is not there
}

// Serve writes the file; an error only when it could not be opened (then
// nothing was written).
func (f *ServedFile) Serve(w http.ResponseWriter) error {
	file, err := os.Open(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return f.Missing // removed since its call was read (retention)
	}
	if err != nil {
		return err
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", f.ContentType)
	h.Set("Content-Length", strconv.FormatInt(fi.Size(), 10))
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": f.Name}))
	w.WriteHeader(http.StatusOK)
	io.Copy(w, file) // a client gone mid-way is no error of ours
	return nil
}

// StatusWriter keeps the status its handler answered, for the access log
// and the sandbox's journal: the first one written, 200 when a body comes
// first, 0 while nothing is answered.
type StatusWriter struct {
	http.ResponseWriter
	Status int
}

func (w *StatusWriter) WriteHeader(status int) {
	if w.Status == 0 {
		w.Status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *StatusWriter) Write(b []byte) (int, error) {
	if w.Status == 0 {
		w.Status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap is the writer wrapped, as http.ResponseController and
// the access log's ops.NoteRequest look for it.
func (w *StatusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
