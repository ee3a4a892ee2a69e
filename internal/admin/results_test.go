package admin

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"dialbox/internal/domain"
)

// pagedContacts is a store of n contacts that counts, at each page read,
// the rows the export has written by then.
type pagedContacts struct {
	ContactStore
	CallingStore
	n       int
	written func() int
	reads   []int // rows written when each page was read
	limits  []int
}

func (p *pagedContacts) Scenario(_ context.Context, _ int64, id string) (*domain.Scenario, error) {
	return &domain.Scenario{ID: id, PersonalizedFields: []string{"name"}}, nil
}

func (p *pagedContacts) Campaign(context.Context, int64, string) (*domain.Campaign, error) {
	return nil, domain.ErrNotFound
}

func (p *pagedContacts) ContactResults(_ context.Context, _ int64, f domain.ResultFilter, after int64, limit int) ([]domain.ContactResult, error) {
	p.reads = append(p.reads, p.written())
	p.limits = append(p.limits, limit)
	var page []domain.ContactResult
	for seq := after + 1; seq <= int64(p.n) && len(page) < limit; seq++ {
		page = append(page, domain.ContactResult{ContactRecord: domain.ContactRecord{Seq: seq, ID: "c" + strconv.FormatInt(seq, 10),
			Phone: "+84900000000", State: domain.ContactQueued, Fields: map[string]string{"name": "=HYPERLINK(\"http://x\",\"y\")"}}})
	}
	return page, nil
}

// lineCounter counts the CSV lines written to it.
type lineCounter struct {
	bytes.Buffer
}

func (l *lineCounter) lines() int { return bytes.Count(l.Bytes(), []byte("\r\n")) }

// An export is written a page at a time: each page is read only once the
// rows of the one before are written, and no read asks for more than a
// page, so memory stays flat however many contacts there are.
func TestResultsAreStreamedAPageAtATime(t *testing.T) {
	var out lineCounter
	const n = 2*resultsPage + 250
	s := &pagedContacts{n: n, written: func() int { return out.lines() - 1 }} // less the header
	a := New(Parts{Contacts: s, Calling: s})
	d, err := a.Results(context.Background(), &domain.Application{ID: 1, APIKey: "k"}, "sc", "", domain.ResultFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Write(&out); err != nil {
		t.Fatal(err)
	}
	if want := []int{0, resultsPage, 2 * resultsPage}; !slices.Equal(s.reads, want) {
		t.Errorf("rows written when each page was read: %v, want %v", s.reads, want)
	}
	for _, l := range s.limits {
		if l > resultsPage {
			t.Errorf("a page of %d rows was asked for; the bound is %d", l, resultsPage)
		}
	}
	if !strings.HasPrefix(out.String(), "\uFEFFcontact_id,") {
		t.Errorf("the export does not start with the BOM and its header: %.40q", out.String())
	}
	rows, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(out.String(), "\uFEFF"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != n+1 {
		t.Fatalf("%d rows, want %d and the header", len(rows)-1, n)
	}
	if got := rows[1][3]; got != "'=HYPERLINK(\"http://x\",\"y\")" {
		t.Errorf("a formula in a field was written as %q, not as text", got)
	}
}

// Every bad filter is named at once, not only the first.
func TestResultFilterNamesEveryProblem(t *testing.T) {
	a := New(Parts{})
	_, err := a.ResultFilter(url.Values{"state": {"gone"}, "outcome": {"MAYBE"}, "from": {"yesterday"}, "to": {"2026-13-01"}})
	var e *domain.Error
	if !errors.As(err, &e) || e.Code != domain.EINVALID {
		t.Fatalf("bad filters answered %v, want a validation error", err)
	}
	var named []string
	for _, d := range e.Details {
		named = append(named, d.Field)
	}
	if strings.Join(named, ",") != "state,outcome,from,to" {
		t.Errorf("the error names %v, want state, outcome, from and to", named)
	}
	f, err := a.ResultFilter(url.Values{"from": {"2026-01-31"}, "to": {"2026-01-31"}, "outcome": {"ANSWERED"}})
	if err != nil {
		t.Fatal(err)
	}
	if f.To.Sub(f.From).Hours() != 24 || f.Outcome != "ANSWERED" {
		t.Errorf("from and to of one day read as %v to %v", f.From, f.To)
	}
	if _, err := a.ResultFilter(url.Values{"from": {"2026-02-01"}, "to": {"2026-01-01"}}); err == nil {
		t.Error("a range ending before it starts was accepted")
	}
}
