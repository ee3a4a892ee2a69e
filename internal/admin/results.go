package admin

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"dialbox/internal/csvsafe"
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"dialbox/internal/recordings"

	"github.com/julienschmidt/httprouter"
)

// The results export (docs/admin.md#results-as-csv): a scenario's or a
// campaign's contacts as CSV, one row each with its last call, written a
// page at a time as the store reads it. The console serves the same
// export (docs/console.md#results).

// resultsPage is how many contacts one read of an export takes: what the
// export holds in memory at most, however many it writes.
const resultsPage = 500

// resultTime is how the export writes a time: UTC, in the form spreadsheets
// read as a date and time.
const resultTime = "2006-01-02 15:04:05"

// utf8BOM starts the file, so a spreadsheet reads it as UTF-8 (names
// written in Vietnamese, say) rather than in the computer's local code page.
const utf8BOM = "\uFEFF"

func (a *Admin) scenarioResults(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	return a.resultsOf(r, app, ps.ByName("scenario"), "")
}

func (a *Admin) campaignResults(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	return a.resultsOf(r, app, "", ps.ByName("campaign"))
}

func (a *Admin) resultsOf(r *http.Request, app *domain.Application, scenarioID, campaignID string) (any, error) {
	f, err := a.ResultFilter(r.URL.Query())
	if err != nil {
		return nil, err
	}
	return a.Results(r.Context(), app, scenarioID, campaignID, f)
}

// ResultFilter reads an export's filters from q: state, outcome, and from
// and to (an RFC 3339 time, or a date: from its first moment, to its last,
// in UTC). Every bad filter is named, not only the first.
func (a *Admin) ResultFilter(q url.Values) (domain.ResultFilter, error) {
	f := domain.ResultFilter{State: q.Get("state"), Outcome: q.Get("outcome")}
	var bad []domain.FieldError
	if !domain.ContactStates[f.State] {
		bad = append(bad, domain.FieldError{Field: "state", Reason: "must be queued, dialing or done"})
	}
	if _, known := domain.OutcomeCause[f.Outcome]; f.Outcome != "" && !known {
		bad = append(bad, domain.FieldError{Field: "outcome", Reason: "must be one of " + strings.Join(outcomeNames(), ", ")})
	}
	var err error
	for _, b := range []struct {
		name string
		t    *time.Time
		end  bool
	}{{"from", &f.From, false}, {"to", &f.To, true}} {
		if *b.t, err = dateOrTime(q.Get(b.name), b.end); err != nil {
			bad = append(bad, domain.FieldError{Field: b.name, Reason: "must be a date like \"2026-01-31\" or an RFC 3339 time like \"2026-01-31T08:00:00Z\""})
		}
	}
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		bad = append(bad, domain.FieldError{Field: "to", Reason: "must be after from"})
	}
	if bad != nil {
		return f, domain.ValidationError(bad...)
	}
	return f, nil
}

// dateOrTime reads s as an RFC 3339 time or a date; a date that ends a
// range (end) stands for the start of the next day, so the range holds it.
func dateOrTime(s string, end bool) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.DateOnly, s)
	if err == nil && end {
		t = t.AddDate(0, 0, 1)
	}
	return t, err
}

// outcomeNames are the outcomes a contact may end with, sorted.
func outcomeNames() []string {
	var out []string
	for o := range domain.OutcomeCause {
		out = append(out, o)
	}
	slices.Sort(out)
	return out
}

// Results is the export of a scenario's results, or a campaign's (when
// campaignID is set), filtered by f: a download written as it is read.
// A scenario or campaign that is not the application's is the error.
func (a *Admin) Results(ctx context.Context, app *domain.Application, scenarioID, campaignID string, f domain.ResultFilter) (*httpx.Download, error) {
	name := "scenario-" + scenarioID
	if campaignID != "" {
		k, err := a.Campaign(ctx, app.ID, campaignID)
		if err != nil {
			return nil, err
		}
		scenarioID, name = k.ScenarioID, "campaign-"+campaignID
	}
	sc, err := a.Scenario(ctx, app.ID, scenarioID)
	if err != nil {
		return nil, err
	}
	f.ScenarioID, f.CampaignID = scenarioID, campaignID
	return &httpx.Download{Name: name + "-results.csv", ContentType: "text/csv; charset=utf-8",
		Write: func(w io.Writer) error {
			// The request's context ends the reads when the client goes.
			return a.writeResults(ctx, w, app, sc.PersonalizedFields, f)
		}}, nil
}

// writeResults writes the header, then the contacts a page at a time, each
// page written out before the next is read.
func (a *Admin) writeResults(ctx context.Context, w io.Writer, app *domain.Application, fields []string, f domain.ResultFilter) error {
	if _, err := io.WriteString(w, utf8BOM); err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	cw.UseCRLF = true // as spreadsheets write CSV
	header := append([]string{"contact_id", "campaign_id", "phone"}, fields...)
	header = append(header, "other_fields", "state", "outcome", "attempts", "started_at_utc", "answered_at_utc",
		"ended_at_utc", "duration_seconds", "cost", "answered_by", "digits", "result", "recording_url")
	if err := cw.Write(csvsafe.Row(header)); err != nil {
		return err
	}
	var after int64
	for {
		// What is written goes out before the next page is read.
		if cw.Flush(); cw.Error() != nil {
			return cw.Error()
		}
		page, err := a.contacts.ContactResults(ctx, app.ID, f, after, resultsPage)
		if err != nil {
			return err
		}
		for i := range page {
			if err := cw.Write(csvsafe.Row(a.resultRow(app, fields, &page[i]))); err != nil {
				return err
			}
		}
		if len(page) < resultsPage {
			cw.Flush()
			return cw.Error()
		}
		after = page[len(page)-1].Seq
	}
}

// resultRow is one contact's row, in the header's order.
func (a *Admin) resultRow(app *domain.Application, fields []string, r *domain.ContactResult) []string {
	row := []string{r.ID, r.CampaignID, r.Phone}
	for _, name := range fields {
		row = append(row, r.Fields[name])
	}
	// Fields the scenario does not name are kept too, as one JSON object.
	other, rest := "", map[string]string{}
	for k, v := range r.Fields {
		if !slices.Contains(fields, k) {
			rest[k] = v
		}
	}
	if len(rest) > 0 {
		b, _ := json.Marshal(rest) // a map of strings always encodes
		other = string(b)
	}
	row = append(row, other, r.State, r.Outcome, strconv.Itoa(r.Attempts))
	k := r.Last
	if k == nil {
		return append(row, "", "", "", "", "", "", "", "", "")
	}
	recording := ""
	if k.Recorded {
		recording = recordings.URL(a.recordingBase, app.APIKey, r.ID, k.ID)
	}
	return append(row, k.StartedAt.UTC().Format(resultTime), timeCell(k.AnsweredAt), timeCell(k.EndedAt),
		strconv.FormatInt(k.Duration, 10), strconv.FormatInt(k.Cost, 10), k.AnsweredBy, k.Digits, k.Result, recording)
}

func timeCell(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(resultTime)
}
