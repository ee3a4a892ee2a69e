package console

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"dialbox/internal/dialer"
	"dialbox/internal/domain"
	"dialbox/internal/script"

	"github.com/julienschmidt/httprouter"
)

// "Try it" on the scenario editor (docs/console.md#trying-a-script): the
// script being edited, saved or not, runs on the simulated callee the form
// describes, at once; no call is placed, no contact touched, nothing billed,
// no webhook sent.

// Bounds of a try: its run in real time (an agent step waits for the
// language model), and the keys the callee presses; what it says is
// bounded as the sandbox's simulated callees are (domain.CheckSays).
const (
	tryTimeLimit = 15 * time.Second
	tryMaxDigits = 32
)

// tried is what a try did, for the page.
type tried struct {
	Callee dialer.Callee
	// Ran is false when a machine answered a script with no voicemail
	// step: the call would end at once.
	Ran bool
	Out script.Outcome
	Err string // why the script stopped before its end; "" when it did not
	// NoAMD: a machine answered a scenario without answering-machine
	// detection, so it heard the script from its start, as on a call.
	NoAMD bool
}

// tryScript runs the form's script (or its content, when the script is
// empty) on the callee of the form's try_ fields, and shows the editor
// again as sent with what the run did; problems are shown as saving shows
// them.
func (c *Console) tryScript(edit bool) httprouter.Handle {
	return c.scenarioPost(edit, func(w http.ResponseWriter, r *http.Request, s *session, d *scenarioForm) {
		ctx := r.Context()
		d.Trying = true
		callee, problems := tryCallee(r.PostForm)
		change, text, more := scenarioChange(r.PostForm, d.Scenario.CallConfig)
		problems = append(problems, more...)
		var sc script.Script
		if change.Script != nil { // nil: it did not parse, a problem already
			var more []domain.FieldError
			sc, more = tryable(change)
			problems = append(problems, more...)
		}
		if problems != nil {
			c.audit(r, s, d.App.APIKey, "try refused: "+problemsText(problems))
			d.Problems = problems
			d.Listing = listScript(text, r.PostFormValue("script_format"), problems)
			c.render(w, http.StatusBadRequest, layoutData{view: *d.view(), CSRF: s.csrf, SignedIn: true, Status: http.StatusBadRequest})
			return
		}
		// Without detection a machine is taken for a person who presses and
		// says nothing: the script runs from its start.
		noAMD := callee.Machine && r.PostFormValue("amd") == ""
		if noAMD {
			callee = dialer.Callee{Fields: callee.Fields}
		}
		run, cancel := context.WithTimeout(ctx, tryTimeLimit)
		out, ran := c.trial.Try(run, sc, callee, c.now())
		late := run.Err() == context.DeadlineExceeded
		cancel()
		t := &tried{Callee: callee, Ran: ran, Out: out, NoAMD: noAMD}
		switch {
		case late:
			t.Err = "the try took longer than " + tryTimeLimit.String() + ": stopped"
		case out.Err != nil:
			t.Err = out.Err.Error()
		}
		d.Tried = t
		c.audit(r, s, d.App.APIKey, "tried the script: "+t.summary())
		c.render(w, http.StatusOK, layoutData{view: *d.view(), CSRF: s.csrf, SignedIn: true, Status: http.StatusOK})
	})
}

// summary is the try in one line, for the audit log.
func (t *tried) summary() string {
	if !t.Ran {
		return "a machine answered; no voicemail step"
	}
	out := strconv.Itoa(len(t.Out.Steps)) + " steps, ended " + string(t.Out.End)
	if t.Out.Result != "" {
		out += ", result " + t.Out.Result
	}
	if t.Err != "" {
		out += ": " + t.Err
	}
	return out
}

// tryCallee reads the form's callee: the keys pressed (try_digits), the
// answers spoken, one a line (try_says), a machine answering
// (try_machine).
func tryCallee(f map[string][]string) (dialer.Callee, []domain.FieldError) {
	get := func(name string) string {
		if v := f[name]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	var problems []domain.FieldError
	c := dialer.Callee{Digits: strings.TrimSpace(get("try_digits")), Machine: get("try_machine") != ""}
	switch {
	case len(c.Digits) > tryMaxDigits:
		problems = append(problems, domain.FieldError{Field: "try_digits", Reason: "is longer than " + strconv.Itoa(tryMaxDigits) + " keys"})
	case !domain.ValidDigits(c.Digits):
		problems = append(problems, domain.FieldError{Field: "try_digits", Reason: "must be keys of a phone's keypad: 0-9, * and #"})
	}
	if says := strings.TrimRight(strings.ReplaceAll(get("try_says"), "\r\n", "\n"), "\n"); says != "" {
		c.Says = strings.Split(says, "\n")
		for i := range c.Says {
			c.Says[i] = strings.TrimSpace(c.Says[i])
		}
	}
	if p := domain.CheckSays(c.Says); p != "" {
		problems = append(problems, domain.FieldError{Field: "try_says", Reason: p})
	}
	return c, problems
}

// tryable is the script a try runs: the form's, checked as saving checks
// it, or, when it is empty, the content said, as a call without a script
// says it.
func tryable(ch *domain.ScenarioChange) (script.Script, []domain.FieldError) {
	if string(ch.Script) == "null" {
		return script.FromContent(cmp.Or(strings.TrimSpace(*ch.Content), "-")), nil
	}
	var s script.Script
	dec := json.NewDecoder(bytes.NewReader(ch.Script))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, []domain.FieldError{{Field: "script", Reason: "is not a script: " + err.Error()}}
	}
	if err := s.Validate(); err != nil {
		return s, domain.ScriptProblems("script", err)
	}
	return s, nil
}
