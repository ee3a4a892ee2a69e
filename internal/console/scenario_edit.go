package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"dialbox/internal/domain"
	"dialbox/internal/httpx"

	"github.com/BurntSushi/toml"
	"github.com/julienschmidt/httprouter"
)

// A scenario's form (docs/console.md#editing-a-scenario): its fields, its
// call config, and its script written as JSON or TOML, saved through the
// admin API's services; a problem with the script is shown beside the line
// it concerns, the form kept as sent.

type scenarioForm struct {
	App      *domain.Application
	New      bool
	Scenario *domain.Scenario // as stored; on a new one, the defaults
	Pools    []*domain.Pool
	Form     url.Values // the fields as sent, or as stored
	Problems []domain.FieldError
	// Listing is the script's text, line by line, with the problems of
	// each line beside it; nil when the script has none.
	Listing []scriptLine
	Action  string
	// TryAction is where "Try it" posts the form; Trying: the form was
	// tried, not saved, and Tried what the try did.
	TryAction string
	Trying    bool
	Tried     *tried
}

type scriptLine struct {
	N        int
	Text     string
	Problems []string
}

// scenarioFormPage shows a scenario's form: a new one's (edit false), or
// an existing one's with what it holds.
func (c *Console) scenarioFormPage(edit bool) consolePage {
	return func(r *http.Request, ps httprouter.Params) (*view, error) {
		d, err := c.scenarioFormData(r.Context(), ps, edit)
		if err != nil {
			return nil, err
		}
		sc := d.Scenario
		d.Form = url.Values{"id": {sc.ID}, "name": {sc.Name}, "description": {sc.Description}, "content": {sc.Content},
			"personalized_fields": {strings.Join(sc.PersonalizedFields, ", ")}, "script_format": {"json"}}
		cc := sc.CallConfig
		d.Form.Set("window_start", cc.CallWindow.Start)
		d.Form.Set("window_end", cc.CallWindow.End)
		d.Form.Set("max_concurrent", strconv.Itoa(cc.MaxConcurrent))
		d.Form.Set("re_call_times", strconv.Itoa(cc.ReCall.Times))
		d.Form.Set("re_call_delay", strconv.Itoa(cc.ReCall.Delay))
		d.Form.Set("pool", cc.PoolHotlineKey)
		d.Form.Set("purpose", cc.Purpose)
		for name, on := range map[string]bool{"record": cc.Record, "amd": cc.AMD, "re_call_busy": cc.ReCall.IsBusy,
			"re_call_no_answer": cc.ReCall.IsNoAnswer, "re_call_failed": cc.ReCall.IsFailed, "re_call_voice_mail": cc.ReCall.IsVoiceMail} {
			if on {
				d.Form.Set(name, "1")
			}
		}
		if sc.Script != nil {
			b, err := json.MarshalIndent(sc.Script, "", "  ")
			if err != nil {
				return nil, err
			}
			d.Form.Set("script", string(b))
		}
		return d.view(), nil
	}
}

func (c *Console) scenarioFormData(ctx context.Context, ps httprouter.Params, edit bool) (*scenarioForm, error) {
	app, err := c.app(ctx, ps)
	if err != nil {
		return nil, err
	}
	d := &scenarioForm{App: app, New: !edit, Action: "/console/apps/" + url.PathEscape(app.APIKey) + "/new-scenario"}
	d.TryAction = d.Action + "/try"
	if edit {
		if d.Scenario, err = c.reads.Scenario(ctx, app.ID, ps.ByName("scenario")); err != nil {
			return nil, err
		}
		d.Action = "/console/apps/" + url.PathEscape(app.APIKey) + "/scenarios/" + url.PathEscape(d.Scenario.ID) + "/edit"
		d.TryAction = "/console/apps/" + url.PathEscape(app.APIKey) + "/scenarios/" + url.PathEscape(d.Scenario.ID) + "/try"
	} else {
		d.Scenario = &domain.Scenario{Status: domain.StatusDraft, PersonalizedFields: []string{}, CallConfig: domain.DefaultCallConfig()}
	}
	d.Pools, err = c.reads.Pools(ctx, app.ID)
	return d, err
}

func (d *scenarioForm) view() *view {
	title := "New scenario"
	if !d.New {
		title = "Edit scenario " + d.Scenario.ID
	}
	return &view{Page: "scenario_edit", Title: title, Data: d}
}

// scenarioPost serves a post of the scenario editor (saving, trying it):
// handle gets the form's session and the editor's data, the form as sent.
func (c *Console) scenarioPost(edit bool, handle func(w http.ResponseWriter, r *http.Request, s *session, d *scenarioForm)) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		s := c.formSession(w, r)
		if s == nil {
			return
		}
		defer c.recoverPanic(w, r, s)
		ctx := r.Context()
		d, err := c.scenarioFormData(ctx, ps, edit)
		if err != nil {
			c.fail(w, r, s, err)
			return
		}
		d.Form = r.PostForm
		handle(w, r, s, d)
	}
}

// saveScenario saves the form: the scenario created or changed, then its
// page; on a problem, the form again as sent, every problem named and each
// of the script's beside its line.
func (c *Console) saveScenario(edit bool) httprouter.Handle {
	return c.scenarioPost(edit, func(w http.ResponseWriter, r *http.Request, s *session, d *scenarioForm) {
		ctx := r.Context()
		var err error
		change, text, problems := scenarioChange(r.PostForm, d.Scenario.CallConfig)
		var id string
		if problems == nil {
			if edit {
				id = d.Scenario.ID
				err = c.actions.UpdateScenario(ctx, d.App.ID, id, change)
			} else {
				var sc *domain.Scenario
				if sc, err = c.actions.CreateScenario(ctx, d.App.ID, change); err == nil {
					id = sc.ID
				}
			}
			var bad *domain.Error
			switch {
			case errors.As(err, &bad) && bad.Code == domain.EINVALID:
				problems = bad.Details
			case err != nil:
				status, msg, _ := httpx.ConsoleError(err)
				c.audit(r, s, d.App.APIKey, "refused: "+msg)
				if status >= 500 || status == http.StatusNotFound {
					c.fail(w, r, s, err)
					return
				}
				problems = []domain.FieldError{{Field: "id", Reason: msg}}
			}
		}
		if problems != nil {
			c.audit(r, s, d.App.APIKey, "refused: "+problemsText(problems))
			d.Problems = problems
			d.Listing = listScript(text, r.PostFormValue("script_format"), problems)
			c.render(w, http.StatusBadRequest, layoutData{view: *d.view(), CSRF: s.csrf, SignedIn: true, Status: http.StatusBadRequest})
			return
		}
		done := "Scenario " + id + " saved."
		c.audit(r, s, d.App.APIKey, done)
		s.setFlash(&flash{Text: done})
		http.Redirect(w, r, "/console/apps/"+url.PathEscape(d.App.APIKey)+"/scenarios/"+url.PathEscape(id), http.StatusSeeOther)
	})
}

// problemsText is every problem on one line, for the audit log.
func problemsText(ps []domain.FieldError) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Field+" "+p.Reason)
	}
	return strings.Join(out, "; ")
}

// scenarioChange reads the form into the change the admin API's services
// take, its call config over cc; the script's text (JSON, or TOML made
// JSON) is returned as sent, to list it beside its problems. Problems
// of the form itself (a number that is none, a script that does not
// parse) are returned instead of a change.
func scenarioChange(f url.Values, cc domain.CallConfig) (*domain.ScenarioChange, string, []domain.FieldError) {
	var problems []domain.FieldError
	str := func(name string) *string { v := strings.TrimSpace(f.Get(name)); return &v }
	ch := &domain.ScenarioChange{Name: str("name"), Description: str("description"), Content: &[]string{f.Get("content")}[0],
		PersonalizedFields: []string{}}
	if id := strings.TrimSpace(f.Get("id")); id != "" {
		ch.ID = &id
	}
	for _, p := range strings.FieldsFunc(f.Get("personalized_fields"), func(r rune) bool { return r == ',' || r == ' ' }) {
		ch.PersonalizedFields = append(ch.PersonalizedFields, p)
	}
	num := func(name string, to *int) {
		n, err := strconv.Atoi(strings.TrimSpace(f.Get(name)))
		if err != nil {
			problems = append(problems, domain.FieldError{Field: name, Reason: "must be a whole number"})
			return
		}
		*to = n
	}
	num("max_concurrent", &cc.MaxConcurrent)
	num("re_call_times", &cc.ReCall.Times)
	num("re_call_delay", &cc.ReCall.Delay)
	cc.CallWindow.Start, cc.CallWindow.End = f.Get("window_start"), f.Get("window_end")
	cc.PoolHotlineKey, cc.Purpose = f.Get("pool"), f.Get("purpose")
	on := func(name string) bool { return f.Get(name) != "" }
	cc.Record, cc.AMD = on("record"), on("amd")
	cc.ReCall.IsBusy, cc.ReCall.IsNoAnswer, cc.ReCall.IsFailed, cc.ReCall.IsVoiceMail =
		on("re_call_busy"), on("re_call_no_answer"), on("re_call_failed"), on("re_call_voice_mail")
	ch.CallConfig, _ = json.Marshal(cc) // a call config always encodes

	text := f.Get("script")
	switch {
	case strings.TrimSpace(text) == "":
		ch.Script = json.RawMessage("null")
	case f.Get("script_format") == "toml":
		var m map[string]any
		if _, err := toml.Decode(text, &m); err != nil {
			var pe toml.ParseError
			reason := err.Error()
			if errors.As(err, &pe) {
				reason = "line " + strconv.Itoa(pe.Position.Line) + ": " + pe.Message
			}
			problems = append(problems, domain.FieldError{Field: "script", Reason: "is not TOML: " + reason})
		} else {
			ch.Script, _ = json.Marshal(m) // what TOML decodes always encodes
		}
	default:
		if err := json.Unmarshal([]byte(text), new(any)); err != nil {
			reason := err.Error()
			var se *json.SyntaxError
			if errors.As(err, &se) {
				reason = "line " + strconv.Itoa(lineAt(text, int(se.Offset))) + ": " + se.Error()
			}
			problems = append(problems, domain.FieldError{Field: "script", Reason: "is not JSON: " + reason})
		} else {
			ch.Script = json.RawMessage(text)
		}
	}
	return ch, text, problems
}

// lineAt is the line (from 1) of byte offset off of text.
func lineAt(text string, off int) int {
	return strings.Count(text[:min(max(off, 0), len(text))], "\n") + 1
}

var (
	stepIndex  = regexp.MustCompile(`^script\.steps\[(\d+)\]`)
	lineInText = regexp.MustCompile(`^is not (JSON|TOML): line (\d+)`)
	tomlStep   = regexp.MustCompile(`(?m)^[ \t]*\[\[[ \t]*steps[ \t]*\]\]`)
)

// listScript is text, line by line, with each problem beside the line it
// concerns: a syntax error's line; else the line of the field's key within
// its step (or the step's first line); else the first line.
func listScript(text, format string, problems []domain.FieldError) []scriptLine {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	out := make([]scriptLine, len(lines))
	for i, l := range lines {
		out[i] = scriptLine{N: i + 1, Text: l}
	}
	starts := stepStarts(text, format)
	for _, p := range problems {
		if !strings.HasPrefix(p.Field, "script") {
			continue
		}
		line := 1
		if m := lineInText.FindStringSubmatch(p.Reason); m != nil {
			line, _ = strconv.Atoi(m[2])
		} else if m := stepIndex.FindStringSubmatch(p.Field); m != nil {
			i, _ := strconv.Atoi(m[1])
			if i < len(starts) {
				end := len(lines) + 1
				if i+1 < len(starts) {
					end = starts[i+1]
				}
				line = keyLine(lines, starts[i], end, p.Field[len(m[0]):], format)
			}
		} else {
			line = keyLine(lines, 1, len(lines)+1, strings.TrimPrefix(p.Field, "script"), format)
		}
		line = min(max(line, 1), len(out))
		out[line-1].Problems = append(out[line-1].Problems, strings.TrimPrefix(p.Field, "script.")+": "+p.Reason)
	}
	return out
}

// keyLine is the line in [from, to) where the last key of path (".say.text"
// → text) is written, else from.
func keyLine(lines []string, from, to int, path, format string) int {
	key := path[strings.LastIndexAny(path, ".")+1:]
	if key == "" {
		return from
	}
	key = regexp.QuoteMeta(key)
	re := regexp.MustCompile(`"` + key + `"\s*:`)
	if format == "toml" {
		re = regexp.MustCompile(`^\s*(` + key + `\s*=|\[\[?[^\]]*\b` + key + `\]\]?)`)
	}
	for n := from; n < to && n <= len(lines); n++ {
		if re.MatchString(lines[n-1]) {
			return n
		}
	}
	return from
}

// stepStarts are the first lines of the script's steps, in order: each
// [[steps]] table of TOML, each element of JSON's "steps".
func stepStarts(text, format string) []int {
	var out []int
	if format == "toml" {
		for _, m := range tomlStep.FindAllStringIndex(text, -1) {
			out = append(out, lineAt(text, m[0]))
		}
		return out
	}
	dec := json.NewDecoder(strings.NewReader(text))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return out
		}
		if key != "steps" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return out
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('[') {
			return out
		}
		for dec.More() {
			// The element starts at the first byte after the offset that
			// is neither space nor a comma.
			off := int(dec.InputOffset())
			for off < len(text) && bytes.IndexByte([]byte(" \t\r\n,"), text[off]) >= 0 {
				off++
			}
			out = append(out, lineAt(text, off))
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return out
			}
		}
		return out
	}
	return out
}
