package domain

// Rules the store, the engine and the admin API share: why a contact is held
// from dialling, what a webhook URL may be, how a script's problems read.

import (
	"dialbox/internal/script"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Why an attempt was kept from being dialled: call_blocks.reason and the
// reason label of dialbox_calls_blocked_total. The destination policy's
// reasons are destinations.Denied, Foreign, Premium and Special.
const (
	ReasonDNCNational = "dnc_national" // on the national Do-Not-Call register, in an advertising scenario
	ReasonDNCTenant   = "dnc_tenant"   // on the tenant's own list (an opt-out, or added by the tenant)
)

// callHold is a due contact a calling rule keeps from being dialled, and
// why. A hold ends the contact DO_NOT_CALL (Store.HoldContacts).
type CallHold struct {
	AppID      int64
	ScenarioID string
	Contact    DueContact
	Reason     string
	// Outcome is what the contact ends with: DO_NOT_CALL when empty (the
	// calling rules), CANCELED for a stopped campaign's.
	Outcome string
}

// checkWebhookURL is the one rule for a webhook endpoint's URL, in the
// admin API and in fixtures: an http(s) URL, or /sink/{name}.
func CheckWebhookURL(s string) error {
	u, err := url.Parse(s)
	if err == nil && u.Scheme == "" && u.Host == "" && u.RawQuery == "" && u.Fragment == "" && !u.ForceQuery {
		name, ok := strings.CutPrefix(u.Path, LocalSinkPrefix)
		if ok && name != "" && !strings.Contains(name, "/") {
			return nil
		}
	}
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an http:// or https:// URL, or /sink/{name} for the built-in sink of the node that delivers")
	}
	return nil
}

// scriptProblems turns script.Validate's error into field errors under
// prefix: script.steps[2].gather.branches["1"], the reason naming the step.
func ScriptProblems(prefix string, err error) []FieldError {
	var ps script.Problems
	if !errors.As(err, &ps) {
		return []FieldError{{Field: prefix, Reason: err.Error()}}
	}
	out := make([]FieldError, len(ps))
	for i, p := range ps {
		field, reason := prefix, p.Reason
		if p.Index >= 0 {
			field += fmt.Sprintf(".steps[%d]", p.Index)
			if p.Step != "" {
				reason = fmt.Sprintf("step %q: %s", p.Step, reason)
			}
		}
		if p.Field != "" {
			field += "." + p.Field
		}
		out[i] = FieldError{Field: field, Reason: reason}
	}
	return out
}

// localSinkPrefix starts a webhook URL naming the built-in sink of
// whichever node delivers the message, resolved to that node's own
// address at each attempt: such a webhook works from every node of a
// cluster and on any --listen (docs/sandbox.md#7-read-the-webhooks-the-sink).
const LocalSinkPrefix = "/sink/"

// localSinkURL is the webhook URL of this server's sink of name.
func LocalSinkURL(name string) string { return LocalSinkPrefix + url.PathEscape(name) }
