package main

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// tryScript is a script tried from the editor's form, in four callees.
const tryScriptJSON = `{"start":"menu","steps":[
  {"name":"menu","gather":{"prompt":{"say":"Nhấn 1 để xác nhận"},"max_digits":1,"timeout":"5s","branches":{"1":"yes","2":"ask"},"no_input":"ask"}},
  {"name":"ask","gather":{"input":["speech"],"prompt":{"say":"Anh có đến không?"},"timeout":"5s","branches":{"có":"yes"},"no_input":"bye"}},
  {"name":"yes","set":{"label":"confirmed","next":"bye"}},
  {"name":"voicemail","say":{"text":"Xin gọi lại cho chúng tôi.","next":"left"}},
  {"name":"left","set":{"label":"left_message","next":"bye"}},
  {"name":"bye","hangup":{}}]}`

// tryScriptTOML is the start of the same script, in TOML.
const tryScriptTOML = `start = "menu"
[[steps]]
name = "menu"
[steps.gather]
max_digits = 1
timeout = "5s"
branches = { "1" = "yes" }
[[steps]]
name = "yes"
[steps.set]
label = "confirmed"
next = "bye"
[[steps]]
name = "bye"
hangup = {}
`

// "Try it" runs the script being edited, unsaved, on the simulated callee
// the form describes, without JavaScript: a key taking a gather's branch,
// an answer spoken taking a speech branch, a machine going to the
// voicemail step; a script with a problem is shown with it beside its
// line. Nothing is saved, dialled, billed or sent; each try is in the
// audit log.
func TestConsoleTriesAScript(t *testing.T) { eachBackend(t, testConsoleTriesAScript) }

func testConsoleTriesAScript(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	c := signedIn(t, s)
	calls := queryInt(t, s.m.store, `SELECT count(*) FROM calls`)
	form := func(script string, callee url.Values) url.Values {
		f := url.Values{"csrf": {c.csrf("/console/")}, "id": {"sc-tried"}, "name": {"Thử"}, "content": {"Xin chào"},
			"window_start": {"00:00"}, "window_end": {"23:59"}, "max_concurrent": {"1"}, "re_call_times": {"0"}, "re_call_delay": {"0"},
			"pool": {"POOL_SYSTEM"}, "purpose": {"care"}, "script_format": {"json"}, "script": {script}}
		for k, v := range callee {
			f[k] = v
		}
		return f
	}
	try := func(path string, f url.Values, status int) string {
		t.Helper()
		resp, body := c.post(path, f)
		if resp.StatusCode != status {
			t.Fatalf("POST %s answered %d, want %d:\n%s", path, resp.StatusCode, status, body)
		}
		return body
	}
	const path = "/console/apps/qa-key/new-scenario/try"
	for _, tc := range []struct {
		name   string
		callee url.Values
		want   []string
	}{
		{"a key", url.Values{"try_digits": {"1"}},
			[]string{`id="tried-result">confirmed<`, `id="tried-digits">1<`, `id="tried-end">hangup<`, "<td>menu</td><td>gather</td>", "keys 1", "Nhấn 1 để xác nhận"}},
		{"an answer spoken", url.Values{"try_digits": {"2"}, "try_says": {"có\r\n"}},
			[]string{`id="tried-result">confirmed<`, `<td>ask</td><td>gather</td>`, "“có”", "<strong>callee</strong>: có", "Anh có đến không?"}},
		{"silence", url.Values{},
			[]string{`id="tried-result">none<`, "(timed out)", "<td>bye</td><td>hangup</td>"}},
		{"a machine", url.Values{"try_machine": {"1"}, "try_digits": {"1"}, "amd": {"1"}},
			[]string{`id="tried-result">left_message<`, "<td>voicemail</td><td>say</td>", "Xin gọi lại cho chúng tôi.", "was an answering machine"}},
		{"a machine not detected", url.Values{"try_machine": {"1"}, "try_digits": {"1"}},
			[]string{"which this scenario does not detect", `id="tried-digits">none<`, "<td>menu</td><td>gather</td>", "(timed out)"}},
		{"a key, in TOML", url.Values{"try_digits": {"1"}, "script_format": {"toml"}, "script": {tryScriptTOML}},
			[]string{`id="tried-result">confirmed<`, `id="tried-digits">1<`, "<td>menu</td><td>gather</td>"}},
	} {
		body := try(path, form(tryScriptJSON, tc.callee), http.StatusOK)
		if strings.Contains(body, "<td>voicemail</td>") != (tc.name == "a machine") {
			t.Errorf("%s: the voicemail step ran, or did not", tc.name)
		}
		for _, want := range tc.want {
			if !strings.Contains(body, want) {
				t.Errorf("%s: the page lacks %s:\n%s", tc.name, want, body)
			}
		}
	}
	// A machine on a script without a voicemail step: nothing is said.
	noVM := `{"steps":[{"name":"hi","say":{"text":"Chào","next":"bye"}},{"name":"bye","hangup":{}}]}`
	if body := try(path, form(noVM, url.Values{"try_machine": {"1"}, "amd": {"1"}}), http.StatusOK); !strings.Contains(body, "has no <code>voicemail</code> step") {
		t.Errorf("a machine without a voicemail step:\n%s", body)
	}
	// An agent step on a dialbox without [llm] says so.
	agent := `{"steps":[{"name":"talk","agent":{"prompt":"p","results":["x"]}}]}`
	if body := try(path, form(agent, nil), http.StatusOK); !strings.Contains(body, "[llm] url is not set") {
		t.Errorf("an agent without a model:\n%s", body)
	}
	// A problem is beside its line, and the callee's keys are checked.
	bad := "{\"steps\": [\n  {\"name\": \"hi\",\n   \"say\": {\"text\": \"x\", \"next\": \"nowhere\"}}\n]}"
	body := try(path, form(bad, url.Values{"try_digits": {"1x"}}), http.StatusBadRequest)
	for _, want := range []string{"Not tried: 2 problems", "try_digits", `<tr class="bad-line"><td>3</td>`, "nowhere"} {
		if !strings.Contains(body, want) {
			t.Errorf("a bad script: the page lacks %s:\n%s", want, body)
		}
	}
	// Without the CSRF token, nothing runs.
	f := form(tryScriptJSON, nil)
	f.Del("csrf")
	try(path, f, http.StatusForbidden)
	// An existing scenario's editor tries the text sent, not the one stored.
	s.admin(t, "POST", "/apps/qa-key/scenarios", `{"id":"sc-kept","name":"Kept","content":"Xin chào"}`, nil)
	if body := try("/console/apps/qa-key/scenarios/sc-kept/try", form(tryScriptJSON, url.Values{"try_digits": {"1"}}), http.StatusOK); !strings.Contains(body, `id="tried-result">confirmed<`) {
		t.Errorf("trying an existing scenario's edited script:\n%s", body)
	}

	if n := queryInt(t, s.m.store, `SELECT count(*) FROM scenarios WHERE id = 'sc-tried'`); n != 0 {
		t.Errorf("a try saved the scenario")
	}
	if n := queryInt(t, s.m.store, `SELECT count(*) FROM calls`); n != calls {
		t.Errorf("a try placed %d calls", n-calls)
	}
	_, body = c.get("/console/audit")
	for _, want := range []string{"POST /console/apps/qa-key/new-scenario/try", "tried the script: 3 steps, ended hangup, result confirmed", "try refused: try_digits"} {
		if !strings.Contains(body, want) {
			t.Errorf("the audit log lacks %q", want)
		}
	}
}
