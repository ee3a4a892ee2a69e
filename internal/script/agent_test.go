package script

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// fakeChat answers each Reply with the next of its replies (its sentences,
// then its tool), and keeps what it was told.
type fakeChat struct {
	replies []fakeReply
	told    []Conversation
}

type fakeReply struct {
	sentences []string
	tool      string
	result    string
	err       error
}

func (f *fakeChat) Reply(ctx context.Context, conv Conversation, sentence func(string) error) (AgentReply, error) {
	f.told = append(f.told, conv)
	if len(f.replies) == 0 {
		return AgentReply{}, errors.New("no more replies")
	}
	r := f.replies[0]
	f.replies = f.replies[1:]
	for _, s := range r.sentences {
		if err := sentence(s); err != nil {
			return AgentReply{}, err
		}
	}
	return AgentReply{Tool: r.tool, Result: r.result}, r.err
}

func agentScript(a Agent) Script {
	a.Next = "bye"
	return Script{Steps: []Step{{Name: "talk", Agent: &a}, {Name: "bye", Hangup: &Hangup{}}}}
}

func transcriptOf(o Outcome) string {
	var lines []string
	for _, t := range o.Transcript {
		lines = append(lines, t.Speaker+": "+t.Text)
	}
	return strings.Join(lines, "\n")
}

func TestRunAgent(t *testing.T) {
	fill := func(s string) string { return strings.ReplaceAll(s, "{{ho_ten}}", "Lan") }
	run := func(s Script, f *fakeCall, chat Chat) Outcome {
		return Runner{Now: ticking(), Fill: fill, Chat: chat}.Run(context.Background(), s, f)
	}
	base := Agent{Prompt: "Bạn gọi {{ho_ten}} để xác nhận lịch hẹn.", Greeting: "Chào {{ho_ten}}, em gọi về lịch hẹn.",
		MaxTurns: 3, Results: []string{"confirmed", "declined"}, Fallback: "Xin lỗi, em sẽ gọi lại."}

	// A conversation the model ends with end_call.
	chat := &fakeChat{replies: []fakeReply{
		{sentences: []string{"Dạ, lịch hẹn lúc 9 giờ.", "Anh có đến không?"}},
		{sentences: []string{"Cảm ơn anh."}, tool: ToolEndCall, result: "confirmed"},
	}}
	f := &fakeCall{heard: []Heard{{Text: "lịch gì vậy?"}, {Text: "có, tôi đến"}}}
	o := run(agentScript(base), f, chat)
	want := "bot: Chào Lan, em gọi về lịch hẹn.\ncallee: lịch gì vậy?\nbot: Dạ, lịch hẹn lúc 9 giờ.\nbot: Anh có đến không?\ncallee: có, tôi đến\nbot: Cảm ơn anh."
	if o.Result != "confirmed" || o.End != EndHangup || transcriptOf(o) != want || o.Steps[0].Attempts != 2 || o.Steps[0].Error != "" {
		t.Errorf("outcome %+v\ntranscript:\n%s\nwant:\n%s", o, transcriptOf(o), want)
	}
	if len(chat.told) != 2 || chat.told[0].Prompt != "Bạn gọi Lan để xác nhận lịch hẹn." || len(chat.told[1].Turns) != 5 ||
		chat.told[1].Turns[4].Text != "có, tôi đến" || chat.told[0].Transfer || len(chat.told[0].Results) != 2 {
		t.Errorf("the model was told %+v", chat.told)
	}
	if f.log[0] != "say: Chào {{ho_ten}}, em gọi về lịch hẹn." || f.log[len(f.log)-1] != "hangup" {
		t.Errorf("the call saw %q", f.log)
	}

	// Without a greeting the model opens; it can transfer when offered.
	a := base
	a.Greeting, a.Transfer = "", "sip:agent@example.com"
	chat = &fakeChat{replies: []fakeReply{{sentences: []string{"Chào anh Lan."}}, {tool: ToolTransfer}}}
	f = &fakeCall{heard: []Heard{{Text: "cho tôi gặp nhân viên"}}}
	if o = run(agentScript(a), f, chat); o.End != EndTransferred || !strings.Contains(strings.Join(f.log, "|"), "transfer: sip:agent@example.com") || !chat.told[1].Transfer {
		t.Errorf("transfer: %+v, the call saw %q", o, f.log)
	}

	// The ways the model does not end it: each says the fallback.
	for name, c := range map[string]struct {
		replies  []fakeReply
		heard    []Heard
		result   string
		errPart  string
		attempts int
	}{
		"silent callee": {nil, nil, NoInput, "", 0},
		"model error":   {[]fakeReply{{err: errors.New("503 model not loaded")}}, []Heard{{Text: "alo"}}, AgentError, "503 model not loaded", 1},
		"max_turns": {[]fakeReply{{sentences: []string{"Dạ?"}}, {sentences: []string{"Dạ?"}}, {sentences: []string{"Dạ?"}}},
			[]Heard{{Text: "a"}, {Text: "b"}, {Text: "c"}, {Text: "d"}}, AgentError, "max_turns (3)", 3},
		"a result not offered": {[]fakeReply{{tool: ToolEndCall, result: "maybe"}}, []Heard{{Text: "alo"}}, AgentError, `result "maybe"`, 1},
		"transfer not offered": {[]fakeReply{{tool: ToolTransfer}}, []Heard{{Text: "alo"}}, AgentError, "transfer", 1},
		"a reply too long": {[]fakeReply{{sentences: []string{strings.Repeat("a", 1500) + ".", strings.Repeat("b", 600) + "."}}},
			[]Heard{{Text: "alo"}}, AgentError, "longer than 2000 characters", 1},
	} {
		f := &fakeCall{heard: c.heard}
		o := run(agentScript(base), f, &fakeChat{replies: c.replies})
		last := o.Transcript[len(o.Transcript)-1]
		if o.Result != c.result || o.End != EndHangup || last != (Turn{SpeakerBot, "Xin lỗi, em sẽ gọi lại.", last.At}) ||
			!strings.Contains(o.Steps[0].Error, c.errPart) || o.Steps[0].Attempts != c.attempts || o.Steps[1].Name != "bye" {
			t.Errorf("%s: %+v\n%s", name, o, transcriptOf(o))
		}
	}

	// Without a model the step fails, plainly.
	if o = run(agentScript(base), &fakeCall{}, nil); o.End != EndFailed || !strings.Contains(fmt.Sprint(o.Err), "[llm] url") {
		t.Errorf("no model: %+v", o)
	}
	// The fallback's default.
	a = base
	a.Fallback = ""
	if o = run(agentScript(a), &fakeCall{}, &fakeChat{}); o.Transcript[len(o.Transcript)-1].Text != DefaultAgentFallback {
		t.Errorf("default fallback: %s", transcriptOf(o))
	}
}

func TestValidateAgent(t *testing.T) {
	ok := agentScript(Agent{Prompt: "p", Results: []string{"confirmed"}})
	if err := ok.Validate(); err != nil {
		t.Fatalf("an agent refused: %v", err)
	}
	for name, c := range map[string]struct {
		a    Agent
		want string
	}{
		"no prompt":     {Agent{Results: []string{"x"}}, `agent.prompt: required`},
		"long prompt":   {Agent{Prompt: strings.Repeat("a", 8001), Results: []string{"x"}}, `agent.prompt: 8001 characters: at most 8000`},
		"no results":    {Agent{Prompt: "p"}, `agent.results: required`},
		"bad result":    {Agent{Prompt: "p", Results: []string{"Confirmed"}}, `agent.results[0]: "Confirmed" is not a label`},
		"twice":         {Agent{Prompt: "p", Results: []string{"a", "a"}}, `agent.results[1]: "a" is given twice`},
		"turns":         {Agent{Prompt: "p", Results: []string{"a"}, MaxTurns: 31}, `agent.max_turns: 31 is out of range: 1 to 30`},
		"transfer":      {Agent{Prompt: "p", Results: []string{"a"}, Transfer: "tel:123"}, `agent.transfer: "tel:123" is not a SIP URI`},
		"timeout":       {Agent{Prompt: "p", Results: []string{"a"}, Timeout: "90s"}, `agent.timeout: 90s is out of range`},
		"long fallback": {Agent{Prompt: "p", Results: []string{"a"}, Fallback: strings.Repeat("a", 2001)}, `agent.fallback: 2001 characters`},
	} {
		err := agentScript(c.a).Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	// The agent's next counts in the loop rule.
	loop := Script{Steps: []Step{{Name: "a", Agent: &Agent{Prompt: "p", Results: []string{"x"}, Next: "b"}}, {Name: "b", Say: &Say{Text: "hi", Next: "a"}}}}
	if err := loop.Validate(); err == nil || !strings.Contains(err.Error(), "a loop") {
		t.Errorf("loop through an agent: %v", err)
	}
}
