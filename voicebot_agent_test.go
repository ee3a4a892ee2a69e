package main

// Agent steps end to end (docs/voicebot.md#conversations-the-agent-step):
// dialbox started as serve starts it, [llm] pointing at a fake chat
// completions endpoint, the simulator's callees speaking their says.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const agentScenario = `
  [[applications.scenarios]]
  id = "talk"
  status = "ACTIVE"
  personalized_fields = ["ho_ten"]
    [applications.scenarios.call_config]
    pool_hotline_key = "P"
    max_concurrent = 20
    [applications.scenarios.call_config.call_window]
    start = "00:00"
    end = "24:00"
    [applications.scenarios.script]
      [[applications.scenarios.script.steps]]
      name = "talk"
      agent = { prompt = "Bạn gọi {{ho_ten}} để xác nhận lịch hẹn.", greeting = "Chào {{ho_ten}}, em gọi từ phòng khám.", max_turns = 4, results = ["confirmed", "declined"], fallback = "Xin lỗi, em sẽ gọi lại sau.", next = "bye" }
      [[applications.scenarios.script.steps]]
      name = "bye"
      hangup = {}
`

// fakeLLM is a chat completions endpoint that streams its replies: an end
// of the call when the callee said "có", a question otherwise, a 500 when
// the callee said "lỗi".
type fakeLLM struct {
	mu       sync.Mutex
	requests []chatRequest
	auth     []string
}

type chatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name       string `json:"name"`
			Parameters struct {
				Properties struct {
					Result struct {
						Enum []string `json:"enum"`
					} `json:"result"`
				} `json:"properties"`
			} `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

func (f *fakeLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests, f.auth = append(f.requests, req), append(f.auth, r.Header.Get("Authorization"))
	f.mu.Unlock()
	last := req.Messages[len(req.Messages)-1]
	if strings.Contains(last.Content, "lỗi") {
		http.Error(w, "model not loaded", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(delta string) { fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":%s}]}\n\n", delta) }
	if strings.Contains(strings.ToLower(last.Content), "có") {
		send(`{"content":"Dạ, cảm ơn anh. "}`)
		send(`{"content":"Hẹn gặp anh sáng mai."}`)
		send(`{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"end_call","arguments":"{\"result\""}}]}`)
		send(`{"tool_calls":[{"index":0,"function":{"arguments":":\"confirmed\"}"}}]}`)
	} else {
		send(`{"content":"Em gọi về lịch hẹn sáng mai ạ. Anh có"}`)
		send(`{"content":" đến được không?"}`)
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

// agentCall is a call.completed payload's data with an agent step.
type agentCall struct {
	botCall
	Steps []struct {
		Name     string `json:"name"`
		Kind     string `json:"kind"`
		Attempts *int   `json:"attempts"`
		Error    string `json:"error"`
	} `json:"steps"`
}

func (c agentCall) path() string {
	var names []string
	for _, s := range c.Steps {
		names = append(names, s.Name)
	}
	return strings.Join(names, ">")
}

// TestVoicebotAgent: a callee who asks, then confirms; one who says
// nothing; one whose words make the model fail. Each call.completed is
// checked against openapi.yaml.
func TestVoicebotAgent(t *testing.T) {
	llm := &fakeLLM{}
	srv := httptest.NewServer(llm)
	defer srv.Close()
	dir := t.TempDir()
	fixtures := filepath.Join(dir, "fixtures.toml")
	writeFileAt(t, fixtures, voicebotFixtures(agentScenario))
	cfg := filepath.Join(dir, "dialbox.toml")
	writeFileAt(t, cfg, fmt.Sprintf(`
[simulator]
time_scale = 1000
[[simulator.rules]]
number = "+84912000001"
outcome = "ANSWERED"
says = ["A lô, ai đấy?", "Có, tôi sẽ đến"]
[[simulator.rules]]
number = "+84912000002"
outcome = "ANSWERED"
[[simulator.rules]]
number = "+84912000003"
outcome = "ANSWERED"
says = ["lỗi gì thế"]
[llm]
url = "%s/v1"
model = "fake-model"
`, srv.URL))
	m := startMain(t, io.Discard, []string{"--config", cfg, "--database", filepath.Join(dir, "dialbox.db"), "--fixtures", fixtures},
		[]string{"DIALBOX_LLM_API_KEY=sk-fake", "DIALBOX_ENGINE_POLL_INTERVAL=20ms"}, nil)
	t.Cleanup(func() { m.Close() })
	app := int64(queryInt(t, m.store, `SELECT id FROM applications WHERE api_key = 'bot-key'`))
	engImport(t, m.store, app, "talk", "", "+84912000001", "+84912000002", "+84912000003")
	engWaitAllDone(t, m.store, app, 3)

	doc := loadContract(t)
	calls := completedCalls[agentCall](t, m.store, doc)

	for _, want := range []struct {
		phone, result, path, errPart string
		attempts                     int
		said                         string
	}{
		{"+84912000001", "confirmed", "talk>bye", "", 2,
			"bot: Chào Contact 0, em gọi từ phòng khám.\ncallee: A lô, ai đấy?\nbot: Em gọi về lịch hẹn sáng mai ạ.\nbot: Anh có đến được không?\n" +
				"callee: Có, tôi sẽ đến\nbot: Dạ, cảm ơn anh.\nbot: Hẹn gặp anh sáng mai."},
		{"+84912000002", "no_input", "talk>bye", "", 0, "bot: Chào Contact 1, em gọi từ phòng khám.\nbot: Xin lỗi, em sẽ gọi lại sau."},
		{"+84912000003", "agent_error", "talk>bye", "500 Internal Server Error: model not loaded", 1,
			"bot: Chào Contact 2, em gọi từ phòng khám.\ncallee: lỗi gì thế\nbot: Xin lỗi, em sẽ gọi lại sau."},
	} {
		c, ok := calls[want.phone]
		if !ok {
			t.Errorf("%s: no call.completed", want.phone)
			continue
		}
		st := c.Steps[0]
		if c.Result != want.result || c.path() != want.path || st.Kind != "agent" || st.Attempts == nil || *st.Attempts != want.attempts ||
			!strings.Contains(st.Error, want.errPart) || (want.errPart == "") != (st.Error == "") {
			t.Errorf("%s: result %q, path %s, agent step %+v; want %q, %s, %d replies, error %q", want.phone,
				c.Result, c.path(), st, want.result, want.path, want.attempts, want.errPart)
		}
		if c.said() != want.said {
			t.Errorf("%s: transcript\n%s\nwant\n%s", want.phone, c.said(), want.said)
		}
	}

	// What the model was told: the prompt with the contact's fields, the
	// conversation so far, end_call's results; the key from the environment.
	llm.mu.Lock()
	defer llm.mu.Unlock()
	var confirmed *chatRequest
	for i, r := range llm.requests {
		if llm.auth[i] != "Bearer sk-fake" || r.Model != "fake-model" || !r.Stream || len(r.Tools) != 1 ||
			r.Tools[0].Function.Name != "end_call" || strings.Join(r.Tools[0].Function.Parameters.Properties.Result.Enum, ",") != "confirmed,declined" {
			t.Errorf("request %d (%q): %+v", i, llm.auth[i], r)
		}
		if last := r.Messages[len(r.Messages)-1]; last.Content == "Có, tôi sẽ đến" {
			confirmed = &llm.requests[i]
		}
	}
	if confirmed == nil {
		t.Fatalf("the model never heard the confirmation: %+v", llm.requests)
	}
	var roles []string
	for _, msg := range confirmed.Messages {
		roles = append(roles, msg.Role+": "+msg.Content)
	}
	want := "system: Bạn gọi Contact 0 để xác nhận lịch hẹn.|assistant: Chào Contact 0, em gọi từ phòng khám.|user: A lô, ai đấy?|" +
		"assistant: Em gọi về lịch hẹn sáng mai ạ.|assistant: Anh có đến được không?|user: Có, tôi sẽ đến"
	if got := strings.Join(roles, "|"); got != want {
		t.Errorf("the model was told\n%s\nwant\n%s", got, want)
	}
}

// TestVoicebotAgentNeedsLLM: a stored script with an agent step, on a
// dialbox without [llm] url, stops the start naming the scenario and step.
func TestVoicebotAgentNeedsLLM(t *testing.T) {
	dir := t.TempDir()
	fixtures := filepath.Join(dir, "fixtures.toml")
	writeFileAt(t, fixtures, voicebotFixtures(agentScenario))
	m := NewMain(io.Discard)
	m.Log = testLogger(t)
	if err := m.ParseFlags([]string{"--listen", "127.0.0.1:0", "--database", filepath.Join(dir, "dialbox.db"),
		"--fixtures", fixtures}, []string{"DIALBOX_ENGINE_ENABLED=false"}); err != nil {
		t.Fatal(err)
	}
	err := m.Run(context.Background())
	if err == nil {
		m.Close()
		t.Fatal("started")
	}
	if want := `scenario "talk" of application "bot-key" cannot run here: steps[0] "talk": agent: an agent step needs a language model: set [llm] url`; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}
