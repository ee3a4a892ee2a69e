package script

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// The examples of the package doc, which must say the same thing.
const (
	docJSON = `{"start": "greet", "steps": [
	  {"name": "greet", "say": {"text": "Hello {{name}}", "next": "menu"}},
	  {"name": "menu", "gather": {"prompt": {"say": "Press 1 to confirm"},
	    "max_digits": 1, "timeout": "5s", "retries": 2,
	    "branches": {"1": "yes"}, "no_input": "bye"}},
	  {"name": "yes", "set": {"label": "confirmed", "next": "bye"}},
	  {"name": "bye", "hangup": {}}]}`
	docTOML = `start = "greet"
[[steps]]
name = "greet"
say = { text = "Hello {{name}}", next = "menu" }
[[steps]]
name = "menu"
gather = { prompt = { say = "Press 1 to confirm" }, max_digits = 1, timeout = "5s", retries = 2, branches = { "1" = "yes" }, no_input = "bye" }
[[steps]]
name = "yes"
set = { label = "confirmed", next = "bye" }
[[steps]]
name = "bye"
hangup = {}
`
)

func TestDocExamples(t *testing.T) {
	want := Script{Start: "greet", Steps: []Step{
		{Name: "greet", Say: &Say{Text: "Hello {{name}}", Next: "menu"}},
		{Name: "menu", Gather: &Gather{Prompt: &Prompt{Say: "Press 1 to confirm"}, MaxDigits: 1, Timeout: "5s", Retries: 2,
			Branches: map[string]string{"1": "yes"}, NoInput: "bye"}},
		{Name: "yes", Set: &Set{Label: "confirmed", Next: "bye"}},
		{Name: "bye", Hangup: &Hangup{}},
	}}
	var fromJSON, fromTOML Script
	if err := json.Unmarshal([]byte(docJSON), &fromJSON); err != nil {
		t.Fatal(err)
	}
	if _, err := toml.Decode(docTOML, &fromTOML); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromJSON, want) {
		t.Errorf("JSON: %+v", fromJSON)
	}
	if !reflect.DeepEqual(fromTOML, want) {
		t.Errorf("TOML: %+v", fromTOML)
	}
	if err := want.Validate(); err != nil {
		t.Error(err)
	}
}

// every is a script with every kind and every field set (valid or not:
// round trips must not care).
func every() Script {
	s := reminder()
	s.Steps = append(s.Steps,
		Step{Name: "jingle", Play: &Play{Path: "brand/jingle.wav", Next: "bye"}},
		Step{Name: "pin", Gather: &Gather{Prompt: &Prompt{Play: "pin.wav"}, MaxDigits: 4, Timeout: "10s",
			FinishOnKey: "#", Branches: map[string]string{"1234": "bye", "*": "bye"}, NoInput: "bye", NoMatch: "jingle", Retries: 1}},
	)
	return s
}

func TestJSONRoundTrip(t *testing.T) {
	b, err := json.Marshal(every())
	if err != nil {
		t.Fatal(err)
	}
	var got Script
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, every()) {
		t.Errorf("round trip through %s gave %+v", b, got)
	}
	// The field names are the documented ones, and unset kinds are absent.
	for _, want := range []string{`"start":"greet"`, `{"name":"bye","hangup":{}}`, `"max_digits":4`, `"finish_on_key":"#"`,
		`"no_input":"bye"`, `"no_match":"jingle"`, `"retries":1`, `"prompt":{"play":"pin.wav"}`, `"to":"sip:agents@pbx.example.com"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
}

func TestTOMLRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(every()); err != nil {
		t.Fatal(err)
	}
	var got Script
	if _, err := toml.Decode(buf.String(), &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, every()) {
		t.Errorf("round trip through\n%s\ngave %+v", buf.String(), got)
	}
}
