package sandbox

import (
	"bytes"
	"dialbox/internal/config"
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Journal keeps the latest public API requests with their responses, for
// tests to verify what a client sent (like WireMock's /__admin/requests).
// It lives in memory, bounded by count, bytes and age: it is a test aid,
// not an audit log, and a restart empties it.
type Journal struct {
	maxAge   time.Duration
	bodyMax  int
	maxBytes int

	mu    sync.Mutex
	seq   int64
	ring  []*JournalEntry // oldest at start, len(ring) slots
	start int
	n     int
	bytes int // what the entries retain, by their retained
}

// JournalEntry is one public API request and the answer it got.
type JournalEntry struct {
	ID                int64     `json:"id"`
	At                time.Time `json:"at"`
	Method            string    `json:"method"`
	Path              string    `json:"path"`
	Query             string    `json:"query,omitempty"`
	PathTruncated     bool      `json:"path_truncated,omitempty"`
	QueryTruncated    bool      `json:"query_truncated,omitempty"`
	Operation         string    `json:"operation"`
	Tenant            string    `json:"tenant,omitempty"` // API key, once authenticated
	Status            int       `json:"status"`           // HTTP status
	Code              int       `json:"code"`             // 1 for a success body, else its error code
	LatencyMS         float64   `json:"latency_ms"`
	Fault             string    `json:"fault,omitempty"` // id of the fault rule that shaped the answer
	RequestBody       string    `json:"request_body"`
	RequestTruncated  bool      `json:"request_truncated,omitempty"`
	ResponseBody      string    `json:"response_body"`
	ResponseTruncated bool      `json:"response_truncated,omitempty"`

	// The headers "copy as curl" needs to send the request again
	// (docs/console.md#request-journal); kept in memory, never answered
	// by the admin API. Cut at maxJournalFieldBytes like the path.
	Authorization    string `json:"-"`
	ContentType      string `json:"-"`
	HeadersTruncated bool   `json:"-"`

	// The request's body and the answer as written, kept without a copy
	// and turned into RequestBody and ResponseBody only when the entry is
	// read (most never are).
	request       []byte
	requestHeld   int // bytes of the buffer request refers to
	response      []byte
	responseTotal int
	responseHeld  int // bytes of the buffer response refers to

	retained int // what the entry holds in memory, counted in Journal.bytes
}

// keepRequest copies the request's method, path, query and the two
// headers the entry keeps, each cut at maxJournalFieldBytes, into one
// string: a part of a request's line or header would otherwise keep all
// of it in memory, and one copy is one allocation rather than five.
func (e *JournalEntry) keepRequest(r *http.Request) {
	fields := [...]string{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), r.Header.Get("Content-Type")}
	var cut [len(fields)]bool
	n := 0
	for i, f := range fields {
		if len(f) > config.MaxJournalFieldBytes {
			fields[i], cut[i] = f[:config.MaxJournalFieldBytes], true
		}
		n += len(fields[i])
	}
	var b strings.Builder
	b.Grow(n)
	for _, f := range fields {
		b.WriteString(f)
	}
	all := b.String()
	for i := range fields {
		fields[i], all = all[:len(fields[i])], all[len(fields[i]):]
	}
	e.Method, e.Path, e.Query, e.Authorization, e.ContentType = fields[0], fields[1], fields[2], fields[3], fields[4]
	e.PathTruncated, e.QueryTruncated, e.HeadersTruncated = cut[1], cut[2], cut[3] || cut[4]
}

// retainedBytes is what e holds in memory.
func (e *JournalEntry) retainedBytes() int {
	return len(e.Method) + len(e.Path) + len(e.Query) + len(e.Operation) + len(e.Tenant) + len(e.Fault) +
		len(e.Authorization) + len(e.ContentType) + len(e.RequestBody) + len(e.ResponseBody) + e.requestHeld + e.responseHeld +
		config.JournalEntryOverhead
}

// NewJournal returns nil (no journal) when cfg keeps no entries.
func NewJournal(cfg config.JournalConfig) *Journal {
	if cfg.MaxEntries == 0 {
		return nil
	}
	return &Journal{maxAge: cfg.MaxAge.Duration, bodyMax: cfg.MaxBodyBytes, maxBytes: cfg.MaxBytes,
		ring: make([]*JournalEntry, cfg.MaxEntries)}
}

// Begin starts recording a request: the returned writer must be used to
// serve it, and End called with it once the answer is written. The
// request's body is recorded as it is read.
func (j *Journal) Begin(w http.ResponseWriter, r *http.Request, op string) http.ResponseWriter {
	if j == nil {
		return w
	}
	start := time.Now()
	e := &JournalEntry{At: start.UTC(), Operation: op}
	e.keepRequest(r)
	if r.Body == nil { // a request made in a test rather than read by the server
		r.Body = http.NoBody
	}
	rec := &journalWriter{StatusWriter: httpx.StatusWriter{ResponseWriter: w}, max: max(j.bodyMax, config.CodePrefixLen),
		entry: e, start: start, req: requestCapture{ReadCloser: r.Body, max: j.bodyMax}}
	r.Body = &rec.req
	return rec
}

// End keeps the request Begin gave w for; any other writer (the journal
// off) is left alone.
func (j *Journal) End(w http.ResponseWriter) {
	rec, ok := w.(*journalWriter)
	if !ok {
		return
	}
	e, req := rec.entry, &rec.req
	e.LatencyMS = float64(time.Since(rec.start).Microseconds()) / 1000
	e.Status = rec.Status
	e.Code = bodyCode(rec.body)
	// A fault (or an early error) may answer before the body is read:
	// read what the journal keeps anyway, as the client did send it.
	if missing := j.bodyMax + 1 - req.total; missing > 0 && !req.done {
		io.CopyN(io.Discard, req, int64(missing))
	}
	e.request, e.requestHeld = req.kept, cap(req.kept)
	e.RequestTruncated = req.total > j.bodyMax
	e.response, e.responseTotal = rec.body[:min(len(rec.body), j.bodyMax)], rec.total
	e.responseHeld = max(rec.held, cap(rec.body))
	j.Add(e)
}

// JournalTenant notes the authenticated application on the request's entry.
func JournalTenant(w http.ResponseWriter, app *domain.Application) {
	if rec, ok := w.(*journalWriter); ok {
		rec.entry.Tenant = app.APIKey
	}
}

// journalFault notes the fault rule that shaped the request's answer.
func journalFault(w http.ResponseWriter, ruleID string) {
	if rec, ok := w.(*journalWriter); ok {
		rec.entry.Fault = ruleID
	}
}

// journalWriter records one request: the answer written through it, the
// request's body read through req (one allocation for both).
type journalWriter struct {
	httpx.StatusWriter
	max   int
	body  []byte // the first max bytes written
	held  int    // the size of the buffer body refers to, when kept by reference
	total int
	entry *JournalEntry
	start time.Time
	req   requestCapture
}

func (w *journalWriter) Write(b []byte) (int, error) {
	w.total += len(b)
	if room := w.max - len(w.body); room > 0 {
		keep := b[:min(room, len(b))]
		if w.body == nil && cap(b) <= 2*w.max {
			// The HTTP edge's bodies (internal/httpx) never change once written: keep a
			// reference (capacity cut, so a later append copies), unless
			// it would pin a body much larger than what is kept.
			w.body, w.held = keep[:len(keep):len(keep)], cap(b)
		} else {
			w.body = append(w.body, keep...)
		}
	}
	return w.StatusWriter.Write(b)
}

// requestCapture keeps the first max bytes of the body read through it
// and counts them all.
type requestCapture struct {
	io.ReadCloser
	max   int
	kept  []byte
	total int
	done  bool // the body ended or failed
}

func (c *requestCapture) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.total += n
	if room := c.max - len(c.kept); room > 0 {
		add := p[:min(room, n)]
		if len(c.kept)+len(add) > cap(c.kept) { // grown by hand: never past max
			kept := make([]byte, len(c.kept), min(c.max, max(2*cap(c.kept), len(c.kept)+len(add))))
			copy(kept, c.kept)
			c.kept = kept
		}
		c.kept = append(c.kept, add...)
	}
	c.done = c.done || err != nil
	return n, err
}

func bodyCode(b []byte) int {
	if bytes.HasPrefix(b, []byte(`{"status":1`)) {
		return 1
	}
	rest, ok := bytes.CutPrefix(b, []byte(`{"status":0,"code":`))
	if !ok {
		return 0
	}
	end := bytes.IndexAny(rest, ",}")
	if end < 0 {
		return 0
	}
	code, _ := strconv.Atoi(string(rest[:end]))
	return code
}

// materialize fills e's RequestBody and ResponseBody from the kept
// request and answer, once, which lets go of their buffers; the caller
// holds the journal's lock.
func (j *Journal) materialize(e *JournalEntry) {
	if e.request == nil && e.response == nil {
		return
	}
	e.RequestBody = string(e.request)
	e.request, e.requestHeld = nil, 0
	if e.response != nil {
		e.ResponseBody, e.ResponseTruncated = string(e.response), e.responseTotal > len(e.response)
		e.response, e.responseHeld = nil, 0
	}
	j.bytes -= e.retained
	e.retained = e.retainedBytes()
	j.bytes += e.retained
}

// Add keeps e, dropping the oldest entries first for a slot and to stay
// within maxBytes.
func (j *Journal) Add(e *JournalEntry) {
	e.retained = e.retainedBytes()
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seq++
	e.ID = j.seq
	for j.n > 0 && (j.n == len(j.ring) || j.bytes+e.retained > j.maxBytes) {
		j.dropOldest()
	}
	j.ring[(j.start+j.n)%len(j.ring)] = e
	j.n++
	j.bytes += e.retained
	j.dropOld(e.At)
}

func (j *Journal) dropOldest() {
	j.bytes -= j.ring[j.start].retained
	j.ring[j.start] = nil
	j.start = (j.start + 1) % len(j.ring)
	j.n--
}

// dropOld forgets entries older than maxAge at now.
func (j *Journal) dropOld(now time.Time) {
	for j.n > 0 && now.Sub(j.ring[j.start].At) > j.maxAge {
		j.dropOldest()
	}
}

// Size is how many entries the journal keeps and the bytes they retain
// (none when it is off).
func (j *Journal) Size() (entries, bytes int) {
	if j == nil {
		return 0, 0
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.n, j.bytes
}

// JournalFilter selects entries; zero fields match all.
type JournalFilter struct {
	Method, Path, Operation, Tenant, Fault string
	Status, Code                           int
	Since, Until                           time.Time
	BeforeID                               int64 // entries older than this one (the console's pages); 0: all
}

func (f JournalFilter) match(e *JournalEntry) bool {
	return (f.Method == "" || f.Method == e.Method) && (f.Path == "" || f.Path == e.Path) &&
		(f.Operation == "" || f.Operation == e.Operation) && (f.Tenant == "" || f.Tenant == e.Tenant) &&
		(f.Fault == "" || f.Fault == e.Fault) && (f.Status == 0 || f.Status == e.Status) &&
		(f.Code == 0 || f.Code == e.Code) && (f.Since.IsZero() || !e.At.Before(f.Since)) &&
		(f.Until.IsZero() || e.At.Before(f.Until)) && (f.BeforeID == 0 || e.ID < f.BeforeID)
}

// Find returns up to limit matching entries, newest first, and how many
// match in all.
func (j *Journal) Find(f JournalFilter, limit int) ([]*JournalEntry, int) {
	out := []*JournalEntry{}
	if j == nil {
		return out, 0
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.dropOld(time.Now())
	total := 0
	for i := j.n - 1; i >= 0; i-- {
		e := j.ring[(j.start+i)%len(j.ring)]
		if f.match(e) {
			total++
			if len(out) < limit {
				j.materialize(e)
				out = append(out, e)
			}
		}
	}
	return out, total
}

// Entry returns the entry id, if the journal still holds it.
func (j *Journal) Entry(id int64) (*JournalEntry, bool) {
	if j == nil {
		return nil, false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	for i := range j.n {
		if e := j.ring[(j.start+i)%len(j.ring)]; e.ID == id {
			j.materialize(e)
			copy := *e
			return &copy, true
		}
	}
	return nil, false
}

// Latest is the id of the newest entry (0: none), so a live page knows
// when to look again.
func (j *Journal) Latest() int64 {
	if j == nil {
		return 0
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.seq
}

// Clear forgets every entry.
func (j *Journal) Clear() {
	if j == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	clear(j.ring)
	j.start, j.n, j.bytes = 0, 0, 0
}
