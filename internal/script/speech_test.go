package script

import (
	"strings"
	"testing"
)

func TestWords(t *testing.T) {
	for in, want := range map[string]string{
		"Có ạ":                     "co a",
		"CÓ, TÔI XÁC NHẬN!":        "co toi xac nhan",
		"Đồng ý":                   "dong y",
		"đúng rồi... đúng":         "dung roi dung",
		"  yes-please  ":           "yes please",
		"số 12":                    "so 12",
		"Không\u0301 (decomposed)": "khong decomposed",
	} {
		if got := strings.Join(Words(in), " "); got != want {
			t.Errorf("Words(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMatch(t *testing.T) {
	keys := []string{"có", "không", "không có", "gọi lại", "đồng ý"}
	for heard, want := range map[string]string{
		"Có ạ":                "có",
		"co":                  "có",
		"dạ không":            "không",
		"không có thời gian":  "không có", // the longest key wins
		"chị gọi lại sau nhé": "gọi lại",
		"Dong y":              "đồng ý",
		"cóc":                 "", // whole words only
		"gọi tôi lại":         "", // a phrase's words side by side
		"":                    "",
	} {
		got, ok := Match(keys, heard)
		if got != want || ok != (want != "") {
			t.Errorf("Match(%q) = %q, %v; want %q", heard, got, ok, want)
		}
	}
}

// speechMenu asks yes or no by voice, twice at most.
func speechMenu(input ...string) Script {
	return Script{Steps: []Step{
		{Name: "menu", Gather: &Gather{Prompt: &Prompt{Say: "Chào {{ho_ten}}, anh có đến không?"}, Input: input,
			Timeout: "5s", Retries: 1, Branches: map[string]string{"có": "yes", "không": "no"},
			NoInput: "silent", NoMatch: "unclear"}},
		{Name: "yes", Set: &Set{Label: "confirmed"}},
		{Name: "no", Set: &Set{Label: "declined"}},
		{Name: "silent", Set: &Set{Label: "no_input"}},
		{Name: "unclear", Set: &Set{Label: "no_match"}},
	}}
}

func TestRunSpeechGather(t *testing.T) {
	fill := func(s string) string { return strings.ReplaceAll(s, "{{ho_ten}}", "Lan") }
	run := func(s Script, f *fakeCall) Outcome {
		return Runner{Now: ticking(), Fill: fill}.Run(t.Context(), s, f)
	}

	f := &fakeCall{heard: []Heard{{Text: "Dạ, có ạ"}}}
	o := run(speechMenu("speech"), f)
	if o.Result != "confirmed" || o.End != EndHangup {
		t.Fatalf("spoken yes: %+v", o)
	}
	g := o.Steps[0]
	if g.Input != "Dạ, có ạ" || g.Speech == nil || *g.Speech != "Dạ, có ạ" || g.Attempts != 1 || g.TimedOut {
		t.Errorf("the gather's step: %+v", g)
	}
	wantLog(t, f, `listen: "Chào {{ho_ten}}, anh có đến không?", 5s, hints ["có" "không"], barge-in`, "hangup")
	if len(o.Transcript) != 2 || o.Transcript[0] != (Turn{SpeakerBot, "Chào Lan, anh có đến không?", o.Steps[0].Started}) ||
		o.Transcript[1].Speaker != SpeakerCallee || o.Transcript[1].Text != "Dạ, có ạ" {
		t.Errorf("transcript: %+v", o.Transcript)
	}

	// Something unclear, then nothing: asked again, then no_input.
	f = &fakeCall{heard: []Heard{{Text: "hả?"}}}
	if o = run(speechMenu("speech"), f); o.Result != "no_input" || o.Steps[0].Attempts != 2 || !o.Steps[0].TimedOut {
		t.Errorf("unclear then silent: %+v", o)
	}
	if got := len(o.Transcript); got != 3 { // the prompt twice, "hả?" once
		t.Errorf("transcript of an unclear answer then silence: %+v", o.Transcript)
	}
	f = &fakeCall{heard: []Heard{{Text: "hả?"}, {Text: "gì vậy"}}}
	if o = run(speechMenu("speech"), f); o.Result != "no_match" || *o.Steps[0].Speech != "gì vậy" {
		t.Errorf("never clear: %+v", o)
	}

	// Keys or speech: a key answers as a key, and is a digit of the call.
	s := speechMenu("dtmf", "speech")
	s.Steps[0].Gather.MaxDigits = 1
	s.Steps[0].Gather.Branches["1"] = "yes"
	f = &fakeCall{heard: []Heard{{Keys: "1"}}}
	if o = run(s, f); o.Result != "confirmed" || o.Digits != "1" || o.Steps[0].Input != "1" || *o.Steps[0].Speech != "" {
		t.Errorf("a key to a speech gather: %+v", o)
	}
	wantLog(t, f, `listen: "Chào {{ho_ten}}, anh có đến không?", 5s, hints ["1" "có" "không"], barge-in, 1 keys`, "hangup")

	// hints given, barge_in off.
	s = speechMenu("speech")
	off := false
	s.Steps[0].Gather.Hints, s.Steps[0].Gather.BargeIn = []string{"có", "không", "dạ"}, &off
	f = &fakeCall{heard: []Heard{{Text: "không"}}}
	if o = run(s, f); o.Result != "declined" {
		t.Errorf("spoken no: %+v", o)
	}
	wantLog(t, f, `listen: "Chào {{ho_ten}}, anh có đến không?", 5s, hints ["có" "không" "dạ"]`, "hangup")
}

// A gather of keys keeps its results: no speech field, and its prompt in
// the transcript.
func TestRunKeysGatherTranscript(t *testing.T) {
	o := runOn(reminder(), &fakeCall{inputs: []input{{keys: "1"}}})
	if o.Steps[1].Speech != nil {
		t.Errorf("a gather of keys has speech %q", *o.Steps[1].Speech)
	}
	var said []string
	for _, turn := range o.Transcript {
		said = append(said, turn.Speaker+": "+turn.Text)
	}
	want := "bot: Hello {{name}}, this is a reminder of your appointment on {{date}}.|bot: Press 1 to confirm, 2 for an agent.|bot: Thank you, see you then."
	if got := strings.Join(said, "|"); got != want {
		t.Errorf("transcript %q, want %q", got, want)
	}
}

func TestValidateSpeechGather(t *testing.T) {
	ok := speechMenu("speech")
	if err := ok.Validate(); err != nil {
		t.Fatalf("a speech gather refused: %v", err)
	}
	both := speechMenu("dtmf", "speech")
	both.Steps[0].Gather.MaxDigits, both.Steps[0].Gather.Branches["1"] = 1, "yes"
	if err := both.Validate(); err != nil {
		t.Fatalf("keys and speech refused: %v", err)
	}
	for name, c := range map[string]struct {
		change func(g *Gather)
		want   string
	}{
		"empty input":       {func(g *Gather) { g.Input = []string{} }, `gather.input: empty`},
		"unknown input":     {func(g *Gather) { g.Input = []string{"speech", "voice"} }, `gather.input[1]: "voice" is neither`},
		"twice":             {func(g *Gather) { g.Input = []string{"speech", "speech"} }, `gather.input[1]: "speech" is given twice`},
		"max_digits":        {func(g *Gather) { g.MaxDigits = 1 }, `gather.max_digits: keys are not read`},
		"finish_on_key":     {func(g *Gather) { g.FinishOnKey = "#" }, `gather.finish_on_key: keys are not read`},
		"same words":        {func(g *Gather) { g.Branches["Có"] = "no" }, `gather.branches["có"]: the same words as the branch "Có"`},
		"no word":           {func(g *Gather) { g.Branches["?!"] = "no" }, `gather.branches["?!"]: "?!" has no word to hear`},
		"long phrase":       {func(g *Gather) { g.Branches[strings.Repeat("a", 101)] = "no" }, `longer than 100 characters`},
		"blank hint":        {func(g *Gather) { g.Hints = []string{"có", " "} }, `gather.hints[1]: " " has no word to hear`},
		"many hints":        {func(g *Gather) { g.Hints = strings.Fields(strings.Repeat("a ", 101)) }, `gather.hints: 101 hints: at most 100`},
		"end_silence":       {func(g *Gather) { g.EndSilence = "10ms" }, `gather.end_silence: 10ms is out of range: 100ms to 5s`},
		"end_silence typo":  {func(g *Gather) { g.EndSilence = "700" }, `gather.end_silence: "700" is not a duration`},
		"max_speech":        {func(g *Gather) { g.MaxSpeech = "2m" }, `gather.max_speech: 2m is out of range: 1s to 1m0s`},
		"keys with phrases": {func(g *Gather) { g.Input, g.MaxDigits = nil, 1 }, `gather.branches["có"]: only the keys 0-9, * and # can be pressed`},
		"hints for keys": {func(g *Gather) {
			g.Input, g.MaxDigits, g.Branches = nil, 1, map[string]string{"1": "yes", "2": "no", "3": "silent", "4": "unclear"}
			g.Hints = []string{"có"}
		}, `gather.hints: only for spoken answers`},
	} {
		s := speechMenu("speech")
		c.change(s.Steps[0].Gather)
		err := s.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", name, err, c.want)
		}
	}
}

// Unmet names the steps a deployment cannot run: speech without a
// recognizer, an agent without a model.
func TestUnmet(t *testing.T) {
	s := speechMenu("speech")
	s.Steps = append(s.Steps, Step{Name: "talk", Agent: &Agent{Prompt: "p", Results: []string{"x"}}})
	s.Steps[1].Set.Next = "talk" // reached
	keys := reminder()
	for _, c := range []struct {
		s            Script
		speech, chat bool
		want         string
	}{
		{s, true, true, ""},
		{keys, false, false, ""},
		{s, false, true, `steps[0] "menu": gather.input: a speech gather needs a recognizer on real calls: set [asr] engine; steps[5] "talk": agent: an agent step hears speech: real calls need a recognizer ([asr] engine)`},
		{s, true, false, `steps[5] "talk": agent: an agent step needs a language model: set [llm] url`},
	} {
		got := ""
		if ps := c.s.Unmet(c.speech, c.chat); ps != nil {
			got = ps.Error()
		}
		if got != c.want {
			t.Errorf("Unmet(%v, %v) = %q, want %q", c.speech, c.chat, got, c.want)
		}
	}
}
