package console

import (
	"net/http"
	"net/url"
	"strconv"

	"dialbox/internal/domain"

	"github.com/julienschmidt/httprouter"
)

// The audit log's page (docs/console.md#audit-log): every action taken in
// the console, newest first, with who took it and how it went.

// auditPageSize is how many entries one page of the audit log shows.
const auditPageSize = 100

type auditView struct {
	Entries []domain.AuditEntry
	Older   string // the next page's query, "" on the last
}

func (c *Console) auditPage(r *http.Request, _ httprouter.Params) (*view, error) {
	q := r.URL.Query()
	var before int64
	if b := q.Get("before"); b != "" {
		var err error
		if before, err = strconv.ParseInt(b, 10, 64); err != nil || before <= 0 {
			return nil, domain.Invalid("before", "must be the number of an entry of this log")
		}
	}
	list, err := c.reads.AuditLog(r.Context(), before, auditPageSize)
	if err != nil {
		return nil, err
	}
	d := &auditView{Entries: list}
	if len(list) == auditPageSize {
		d.Older = "?" + url.Values{"before": {strconv.FormatInt(list[len(list)-1].Seq, 10)}}.Encode()
	}
	return &view{Page: "audit", Title: "Audit log", Data: d}, nil
}
