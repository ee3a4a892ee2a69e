package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"dialbox/internal/script"
)

// The agent tells the model the prompt and the turns in roles, offers
// transfer only when the step has a target, and reads the tool it called.
func TestAgentReply(t *testing.T) {
	var told struct {
		Messages []Message `json:"messages"`
		Tools    []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	call := `{"name":"transfer","arguments":"{}"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewDecoder(r.Body).Decode(&told)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":\"Dạ.\",\"tool_calls\":[{\"index\":0,\"function\":%s}]}}]}\n\ndata: [DONE]\n\n", call)
	}))
	defer srv.Close()
	a := Agent{New(srv.URL, "m", "", time.Minute)}
	conv := script.Conversation{Prompt: "Be kind.", Results: []string{"confirmed"}, Transfer: true, Turns: []script.Turn{
		{Speaker: script.SpeakerBot, Text: "Chào anh."}, {Speaker: script.SpeakerCallee, Text: "Cho gặp nhân viên."}}}
	var said []string
	rep, err := a.Reply(context.Background(), conv, func(s string) error { said = append(said, s); return nil })
	if err != nil || rep != (script.AgentReply{Tool: script.ToolTransfer}) || strings.Join(said, "|") != "Dạ." {
		t.Fatalf("reply %+v, said %q, %v", rep, said, err)
	}
	var roles []string
	for _, m := range told.Messages {
		roles = append(roles, m.Role+": "+m.Content)
	}
	if got := strings.Join(roles, "|"); got != "system: Be kind.|assistant: Chào anh.|user: Cho gặp nhân viên." {
		t.Errorf("told %q", got)
	}
	if len(told.Tools) != 2 || told.Tools[0].Function.Name != "end_call" || told.Tools[1].Function.Name != "transfer" {
		t.Errorf("tools %+v", told.Tools)
	}

	call = `{"name":"end_call","arguments":"{\"result\":\"confirmed\"}"}`
	conv.Transfer = false
	if rep, err = a.Reply(context.Background(), conv, nil); err != nil || rep != (script.AgentReply{Tool: script.ToolEndCall, Result: "confirmed"}) {
		t.Errorf("end_call: %+v, %v", rep, err)
	}
	if len(told.Tools) != 1 {
		t.Errorf("transfer offered without a target: %+v", told.Tools)
	}
}
