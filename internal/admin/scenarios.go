package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"dialbox/internal/script"

	"github.com/julienschmidt/httprouter"
)

// Scenario is a scenario as the admin API shows it: the public fields
// plus its content.
type Scenario struct {
	ID                 string            `json:"id"`
	Name               string            `json:"name"`
	Description        string            `json:"description"`
	Status             string            `json:"status"`
	Content            string            `json:"content"`
	Script             *script.Script    `json:"script,omitempty"` // left out for plain content
	PersonalizedFields []string          `json:"personalized_fields"`
	CallConfig         domain.CallConfig `json:"call_config"`
	CreatedAt          time.Time         `json:"created_at"`
	UpdatedAt          time.Time         `json:"updated_at"`
}

func showScenario(sc *domain.Scenario) Scenario {
	return Scenario{sc.ID, sc.Name, sc.Description, sc.Status, sc.Content, sc.Script, sc.PersonalizedFields,
		sc.CallConfig, sc.CreatedAt, sc.UpdatedAt}
}

func (a *Admin) listScenarios(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	q := r.URL.Query()
	status := q.Get("status")
	if status != "" && !domain.ValidScenarioStatus(status) {
		return nil, domain.Invalid("status", "must be DRAFT, ACTIVE, REVIEWING or REJECT")
	}
	limit, offset, err := httpx.PageParams(q)
	if err != nil {
		return nil, err
	}
	list, total, err := a.ListScenarios(r.Context(), app.ID, status, limit, offset)
	if err != nil {
		return nil, err
	}
	out := make([]Scenario, len(list))
	for i, sc := range list {
		out[i] = showScenario(sc)
	}
	return map[string]any{"scenarios": out, "total_count": total}, nil
}

// applyChange sets the change's fields on sc and checks the result.
func applyChange(b *domain.ScenarioChange, sc *domain.Scenario) error {
	for _, f := range []struct {
		from *string
		to   *string
	}{{b.Name, &sc.Name}, {b.Description, &sc.Description}, {b.Content, &sc.Content}} {
		if f.from != nil {
			*f.to = *f.from
		}
	}
	if b.PersonalizedFields != nil {
		sc.PersonalizedFields = b.PersonalizedFields
	}
	if len(b.CallConfig) > 0 {
		dec := json.NewDecoder(bytes.NewReader(b.CallConfig))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&sc.CallConfig); err != nil {
			return domain.Invalid("call_config", "must be a call_config object: "+err.Error())
		}
	}
	if len(b.Script) > 0 {
		if err := applyScript(b, sc); err != nil {
			return err
		}
	}
	sc.CallConfig.Normalize()
	if fe := domain.CheckScenarioFields(sc.ID, sc.Status, sc.PersonalizedFields, sc.CallConfig); fe != nil {
		return domain.ValidationError(*fe)
	}
	return nil
}

// applyScript sets or (null) removes sc's script; a script is refused with
// one detail per problem, each naming the step and field.
func applyScript(b *domain.ScenarioChange, sc *domain.Scenario) error {
	if string(b.Script) == "null" {
		sc.Script = nil
		return nil
	}
	var s script.Script
	dec := json.NewDecoder(bytes.NewReader(b.Script))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return scriptShapeError(err)
	}
	if err := s.Validate(); err != nil {
		return domain.ValidationError(domain.ScriptProblems("script", err)...)
	}
	sc.Script = &s
	return nil
}

// runnable refuses a script given in b with a step this dialbox cannot
// run (script.Unmet): speech without a recognizer on real calls, an agent
// without [llm] url; a script already stored is left as it is.
func (a *Admin) runnable(b *domain.ScenarioChange, sc *domain.Scenario) error {
	if b.Script == nil || sc.Script == nil {
		return nil
	}
	if ps := sc.Script.Unmet(a.speech, a.chat); ps != nil {
		return domain.ValidationError(domain.ScriptProblems("script", ps)...)
	}
	return nil
}

// scriptShapeError is the decoder's refusal of a script in the admin API's
// words: the field and what it must be, never Go's types
// (docs/voicebot.md#saving-a-script).
func scriptShapeError(err error) error {
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return domain.Invalid("script."+typeErr.Field, "must be "+httpx.JSONKind(typeErr.Type))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return domain.Invalid("script", strings.TrimPrefix(err.Error(), "json: unknown field ")+" is not a known field")
	}
	return domain.Invalid("script", `must be an object with steps ({"steps":[{"name":...,"say":{...}}, ...]}), or null to remove it`)
}

func (a *Admin) createScenario(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	var b domain.ScenarioChange
	if err := httpx.DecodeJSON(r, &b, httpx.AdminBody); err != nil {
		return nil, err
	}
	sc, err := a.CreateScenario(r.Context(), app.ID, &b)
	if err != nil {
		return nil, err
	}
	return a.showScenario(r, app.ID, sc.ID)
}

func (a *Admin) showScenario(r *http.Request, appID int64, id string) (any, error) {
	sc, err := a.Scenario(r.Context(), appID, id)
	if err != nil {
		return nil, err
	}
	return showScenario(sc), nil
}

func (a *Admin) getScenario(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	return a.showScenario(r, app.ID, ps.ByName("scenario"))
}

func (a *Admin) updateScenario(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	var b domain.ScenarioChange
	if err := httpx.DecodeJSON(r, &b, httpx.AdminBody); err != nil {
		return nil, err
	}
	if err := a.UpdateScenario(r.Context(), app.ID, ps.ByName("scenario"), &b); err != nil {
		return nil, err
	}
	return a.showScenario(r, app.ID, ps.ByName("scenario"))
}

// Transition is one arrow of docs/design.md#scenario-status-transitions.
type Transition struct {
	Name string
	From []string
	To   string
}

// Transitions are the status changes of a scenario, as the admin API and
// the CLI make them.
var Transitions = []Transition{
	{"submit", []string{domain.StatusDraft}, domain.StatusReviewing},
	{"approve", []string{domain.StatusReviewing}, domain.StatusActive},
	{"reject", []string{domain.StatusReviewing}, domain.StatusReject},
	{"edit", []string{domain.StatusActive, domain.StatusReject}, domain.StatusDraft},
}

// refused says why t cannot leave status; the admin API answers it with
// 409.
func (t Transition) Refused(status string) string {
	return fmt.Sprintf("Cannot %s a scenario in status %s (only from %s)", t.Name, status, strings.Join(t.From, " or "))
}

func (a *Admin) transition(t Transition) appHandler {
	return func(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
		if err := a.TransitionScenario(r.Context(), app.ID, ps.ByName("scenario"), t.Name); err != nil {
			return nil, err
		}
		return a.showScenario(r, app.ID, ps.ByName("scenario"))
	}
}
