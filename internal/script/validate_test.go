package script

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// reminder is the worked example: an appointment reminder.
func reminder() Script {
	return Script{Start: "greet", Steps: []Step{
		{Name: "greet", Say: &Say{Text: "Hello {{name}}, this is a reminder of your appointment on {{date}}.", Next: "menu"}},
		{Name: "menu", Gather: &Gather{
			Prompt:    &Prompt{Say: "Press 1 to confirm, 2 for an agent."},
			MaxDigits: 1, Timeout: "5s", Retries: 2,
			Branches: map[string]string{"1": "confirm", "2": "agent"},
			NoInput:  "no_answer",
		}},
		{Name: "confirm", Set: &Set{Label: "confirmed", Next: "thanks"}},
		{Name: "thanks", Say: &Say{Text: "Thank you, see you then.", Next: "bye"}},
		{Name: "bye", Hangup: &Hangup{}},
		{Name: "agent", Set: &Set{Label: "wants_agent", Next: "to_agent"}},
		{Name: "to_agent", Transfer: &Transfer{To: "sip:agents@pbx.example.com"}},
		{Name: "no_answer", Set: &Set{Label: "no_answer", Next: "bye"}},
	}}
}

// edit is the reminder changed by f.
func edit(f func(s *Script)) Script {
	s := reminder()
	f(&s)
	return s
}

// chain is a script of say steps named a, b, c..., the one at index i
// going to the step named nexts[i].
func chain(nexts ...string) Script {
	var s Script
	for i, n := range nexts {
		s.Steps = append(s.Steps, Step{Name: string(rune('a' + i)), Say: &Say{Text: "x", Next: n}})
	}
	return s
}

// gather is a menu changed by f, that goes to a step named yes.
func gather(f func(g *Gather)) Script {
	g := &Gather{MaxDigits: 2, Timeout: "5s", FinishOnKey: "#", Branches: map[string]string{"1": "yes"}}
	f(g)
	return Script{Steps: []Step{
		{Name: "menu", Gather: g},
		{Name: "yes", Hangup: &Hangup{}},
	}}
}

func TestValidateAccepts(t *testing.T) {
	for name, s := range map[string]Script{
		"reminder":    reminder(),
		"one step":    FromContent("Hello {{name}}"),
		"start later": Script{Start: "b", Steps: []Step{{Name: "a", Hangup: &Hangup{}}, {Name: "b", Say: &Say{Text: "x", Next: "a"}}}},
		"shared steps": {Steps: []Step{
			{Name: "a", Gather: &Gather{MaxDigits: 1, Timeout: "5s", Branches: map[string]string{"1": "b", "2": "c"}}},
			{Name: "b", Say: &Say{Text: "x", Next: "c"}},
			{Name: "c", Hangup: &Hangup{}},
		}},
		"play prompt, the widest ranges": gather(func(g *Gather) {
			g.Prompt = &Prompt{Play: "reminder/menu.WAV"}
			g.FinishOnKey, g.MaxDigits, g.Timeout, g.Retries = "*", 32, "1m", 5
			g.Branches = map[string]string{"1": "yes", "0#9": "yes"}
		}),
		"sips, port, params": edit(func(s *Script) { s.Steps[6].Transfer.To = "SIPS:agent@10.0.0.1:5061;transport=tls?x=y" }),
		"ipv6":               edit(func(s *Script) { s.Steps[6].Transfer.To = "sip:[2001:db8::1]:5060" }),
		"diamond": {Steps: []Step{
			{Name: "m", Gather: &Gather{MaxDigits: 1, Timeout: "1s", Branches: map[string]string{"1": "a", "2": "b"}, NoInput: "a", NoMatch: "b"}},
			{Name: "a", Set: &Set{Label: "a", Next: "end"}},
			{Name: "b", Play: &Play{Path: "b.wav", Next: "end"}},
			{Name: "end", Hangup: &Hangup{}},
		}},
	} {
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestValidateRefuses(t *testing.T) {
	for _, c := range []struct {
		name   string
		script Script
		want   []string
	}{
		{"no steps", Script{}, []string{"steps: a script needs at least one step"}},
		{"empty name", edit(func(s *Script) { s.Steps[4].Name = " " }), []string{
			`steps[3] "thanks": say.next: no step named "bye"`,
			`steps[4] " ": name: required`,
			`steps[7] "no_answer": set.next: no step named "bye"`,
		}},
		{"duplicate name", edit(func(s *Script) { s.Steps[7].Name = "bye" }), []string{
			`steps[1] "menu": gather.no_input: no step named "no_answer"`,
			`steps[7] "bye": name: already the name of steps[4]`,
		}},
		{"no kind", edit(func(s *Script) { s.Steps[4].Hangup = nil }), []string{
			`steps[4] "bye": no kind: a step needs exactly one of say, play, gather, set, transfer, hangup, opt_out or agent`,
		}},
		{"two kinds", edit(func(s *Script) { s.Steps[4].Say = &Say{Text: "Bye"} }), []string{
			`steps[4] "bye": say and hangup together: a step has exactly one kind`,
		}},
		{"say without text", edit(func(s *Script) { s.Steps[0].Say.Text = " \n" }), []string{
			`steps[0] "greet": say.text: required`,
		}},
		{"say.next", edit(func(s *Script) { s.Steps[0].Say.Next = "menu2" }), []string{
			`steps[0] "greet": say.next: no step named "menu2"`,
			`steps[1] "menu": unreachable from the start step "greet"`,
			`steps[2] "confirm": unreachable from the start step "greet"`,
			`steps[3] "thanks": unreachable from the start step "greet"`,
			`steps[4] "bye": unreachable from the start step "greet"`,
			`steps[5] "agent": unreachable from the start step "greet"`,
			`steps[6] "to_agent": unreachable from the start step "greet"`,
			`steps[7] "no_answer": unreachable from the start step "greet"`,
		}},
		{"play.next", edit(func(s *Script) { s.Steps[3] = Step{Name: "thanks", Play: &Play{Path: "thanks.wav", Next: "by"}} }), []string{
			`steps[3] "thanks": play.next: no step named "by"`,
		}},
		{"set.next", edit(func(s *Script) { s.Steps[2].Set.Next = "Thanks" }), []string{
			`steps[2] "confirm": set.next: no step named "Thanks"`,
			`steps[3] "thanks": unreachable from the start step "greet"`,
		}},
		{"start", edit(func(s *Script) { s.Start = "hello" }), []string{`start: no step named "hello"`}},
		{"unreachable", edit(func(s *Script) { s.Steps[1].Gather.NoInput = "" }), []string{
			`steps[7] "no_answer": unreachable from the start step "greet"`,
		}},
		{"unreachable first step", edit(func(s *Script) { s.Start = "menu" }), []string{
			`steps[0] "greet": unreachable from the start step "menu"`,
		}},
		{"set.label empty", edit(func(s *Script) { s.Steps[2].Set.Label = "" }), []string{`steps[2] "confirm": set.label: required`}},
		{"set.label upper case", edit(func(s *Script) { s.Steps[2].Set.Label = "Confirmed" }), []string{
			`steps[2] "confirm": set.label: "Confirmed" is not a label: lower-case letters, digits and _ only`,
		}},
		{"set.label hyphen", edit(func(s *Script) { s.Steps[5].Set.Label = "wants-agent" }), []string{
			`steps[5] "agent": set.label: "wants-agent" is not a label: lower-case letters, digits and _ only`,
		}},
		{"gather.prompt both", gather(func(g *Gather) { g.Prompt = &Prompt{Say: "x", Play: "x.wav"} }), []string{
			`steps[0] "menu": gather.prompt: say and play together: a prompt is one or the other`,
		}},
		{"gather.prompt empty", gather(func(g *Gather) { g.Prompt = &Prompt{Say: " "} }), []string{
			`steps[0] "menu": gather.prompt: empty: give say or play, or leave the prompt out`,
		}},
		{"gather.prompt.play", gather(func(g *Gather) { g.Prompt = &Prompt{Play: "../x.wav"} }), []string{
			`steps[0] "menu": gather.prompt.play: "../x.wav" leaves the prompts folder (..)`,
		}},
		{"max_digits 0", gather(func(g *Gather) { g.MaxDigits = 0 }), []string{
			`steps[0] "menu": gather.max_digits: 0 is out of range: 1 to 32`,
		}},
		{"max_digits 33", gather(func(g *Gather) { g.MaxDigits = 33 }), []string{
			`steps[0] "menu": gather.max_digits: 33 is out of range: 1 to 32`,
		}},
		{"timeout missing", gather(func(g *Gather) { g.Timeout = "" }), []string{
			`steps[0] "menu": gather.timeout: "" is not a duration such as "5s"`,
		}},
		{"timeout no unit", gather(func(g *Gather) { g.Timeout = "5" }), []string{
			`steps[0] "menu": gather.timeout: "5" is not a duration such as "5s"`,
		}},
		{"timeout short", gather(func(g *Gather) { g.Timeout = "999ms" }), []string{
			`steps[0] "menu": gather.timeout: 999ms is out of range: 1s to 1m0s`,
		}},
		{"timeout long", gather(func(g *Gather) { g.Timeout = "61s" }), []string{
			`steps[0] "menu": gather.timeout: 61s is out of range: 1s to 1m0s`,
		}},
		{"finish_on_key letter", gather(func(g *Gather) { g.FinishOnKey = "A" }), []string{
			`steps[0] "menu": gather.finish_on_key: "A" is not one key among 0-9, * and #`,
		}},
		{"finish_on_key two keys", gather(func(g *Gather) { g.FinishOnKey = "##" }), []string{
			`steps[0] "menu": gather.finish_on_key: "##" is not one key among 0-9, * and #`,
		}},
		{"no branches", gather(func(g *Gather) { g.Branches = nil; g.NoInput = "yes" }), []string{
			`steps[0] "menu": gather.branches: required: at least one input and the step it leads to`,
		}},
		{"branch empty key", gather(func(g *Gather) { g.Branches[""] = "yes" }), []string{
			`steps[0] "menu": gather.branches[""]: an empty input is no input: use gather.no_input`,
		}},
		{"branch key not DTMF", gather(func(g *Gather) { g.Branches["1a"] = "yes"; g.Branches["é"] = "yes" }), []string{
			`steps[0] "menu": gather.branches["1a"]: only the keys 0-9, * and # can be pressed`,
			`steps[0] "menu": gather.branches["é"]: only the keys 0-9, * and # can be pressed`,
		}},
		{"branch key too long", gather(func(g *Gather) { g.Branches["123"] = "yes" }), []string{
			`steps[0] "menu": gather.branches["123"]: longer than max_digits (2): it can never be entered`,
		}},
		{"branch key with finish key", gather(func(g *Gather) { g.Branches["1#"] = "yes" }), []string{
			`steps[0] "menu": gather.branches["1#"]: contains finish_on_key "#", which ends the input: it can never be entered`,
		}},
		{"branch to nothing", gather(func(g *Gather) { g.Branches["2"] = "" }), []string{
			`steps[0] "menu": gather.branches["2"]: required: the step this input leads to`,
		}},
		{"branch to unknown", edit(func(s *Script) { s.Steps[1].Gather.Branches["1"] = "confirmed" }), []string{
			`steps[1] "menu": gather.branches["1"]: no step named "confirmed"`,
			`steps[2] "confirm": unreachable from the start step "greet"`,
			`steps[3] "thanks": unreachable from the start step "greet"`,
		}},
		{"no_input unknown", gather(func(g *Gather) { g.NoInput = "retry" }), []string{
			`steps[0] "menu": gather.no_input: no step named "retry"`,
		}},
		{"no_match unknown", gather(func(g *Gather) { g.NoMatch = "retry" }), []string{
			`steps[0] "menu": gather.no_match: no step named "retry"`,
		}},
		{"retries negative", gather(func(g *Gather) { g.Retries = -1 }), []string{
			`steps[0] "menu": gather.retries: -1 is out of range: 0 to 5`,
		}},
		{"retries 6", gather(func(g *Gather) { g.Retries = 6 }), []string{
			`steps[0] "menu": gather.retries: 6 is out of range: 0 to 5`,
		}},
		{"transfer.to", edit(func(s *Script) { s.Steps[6].Transfer.To = "" }), []string{`steps[6] "to_agent": transfer.to: required`}},
	} {
		t.Run(c.name, func(t *testing.T) { wantProblems(t, c.script, c.want) })
	}
}

func wantProblems(t *testing.T, s Script, want []string) {
	t.Helper()
	err := s.Validate()
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("Validate() = %v, want Problems", err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.Error())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if err.Error() != strings.Join(want, "; ") {
		t.Errorf("Error() = %q", err.Error())
	}
}

func TestValidatePaths(t *testing.T) {
	for p, want := range map[string]string{
		"":                   "required",
		"/srv/prompts/a.wav": `"/srv/prompts/a.wav" is absolute: give a path under the prompts folder`,
		"C:/prompts/a.wav":   `"C:/prompts/a.wav" is absolute: give a path under the prompts folder`,
		`a\b.wav`:            `"a\\b.wav": folders are separated by /`,
		"../a.wav":           `"../a.wav" leaves the prompts folder (..)`,
		"a/../../b.wav":      `"a/../../b.wav" leaves the prompts folder (..)`,
		"a/..":               `"a/.." leaves the prompts folder (..)`,
		"./a.wav":            `"./a.wav" is not a clean path such as "reminder/greeting.wav"`,
		"a//b.wav":           `"a//b.wav" is not a clean path such as "reminder/greeting.wav"`,
		"a/":                 `"a/" is not a clean path such as "reminder/greeting.wav"`,
		"a.mp3":              `"a.mp3" is not a .wav file`,
		"wav":                `"wav" is not a .wav file`,
	} {
		s := Script{Steps: []Step{{Name: "p", Play: &Play{Path: p}}}}
		wantProblems(t, s, []string{`steps[0] "p": play.path: ` + want})
	}
}

func TestValidateSIPURIs(t *testing.T) {
	for u, want := range map[string]string{
		"tel:+84901234567":    `"tel:+84901234567" is not a SIP URI: it starts with sip: or sips:`,
		"agents@pbx.example":  `"agents@pbx.example" is not a SIP URI: it starts with sip: or sips:`,
		"sip:":                `"sip:" has no host`,
		"sip:agents@":         `"sip:agents@" has no host`,
		"sips:agents@;x=1":    `"sips:agents@;x=1" has no host`,
		"sip::5060":           `"sip::5060" has no host`,
		"sip:pbx example.com": `"sip:pbx example.com": "pbx example.com" is not a host name or IP address`,
		"sip:pbx_1.example":   `"sip:pbx_1.example": "pbx_1.example" is not a host name or IP address`,
		"sip:pbx..example":    `"sip:pbx..example": "pbx..example" is not a host name or IP address`,
		"sip:-pbx.example":    `"sip:-pbx.example": "-pbx.example" is not a host name or IP address`,
		"sip:pbx:":            `"sip:pbx:": port "" is not 1 to 65535`,
		"sip:pbx:0":           `"sip:pbx:0": port "0" is not 1 to 65535`,
		"sip:pbx:65536":       `"sip:pbx:65536": port "65536" is not 1 to 65535`,
		"sip:pbx:+50":         `"sip:pbx:+50": port "+50" is not 1 to 65535`,
		"sip:[2001:db8::1":    `"sip:[2001:db8::1": the IPv6 address has no closing ]`,
		"sip:[10.0.0.1]":      `"sip:[10.0.0.1]": "10.0.0.1" is not an IPv6 address`,
		"sip:[::1]5060":       `"sip:[::1]5060": unexpected "5060" after the host`,
		"sip:[::1]:x":         `"sip:[::1]:x": port "x" is not 1 to 65535`,
	} {
		s := Script{Steps: []Step{{Name: "t", Transfer: &Transfer{To: u}}}}
		wantProblems(t, s, []string{`steps[0] "t": transfer.to: ` + want})
	}
}

func TestValidateLoops(t *testing.T) {
	for _, c := range []struct {
		name   string
		script Script
		want   []string
	}{
		{"to itself", chain("a"), []string{
			`steps[0] "a": say.next: goes back to "a" ("a" -> "a"), a loop: steps may not form a cycle; to ask again, use gather.retries`,
		}},
		{"through others", chain("b", "c", "a"), []string{
			`steps[2] "c": say.next: goes back to "a" ("a" -> "b" -> "c" -> "a"), a loop: steps may not form a cycle; to ask again, use gather.retries`,
		}},
		{"through a branch", edit(func(s *Script) { s.Steps[1].Gather.Branches["9"] = "greet" }), []string{
			`steps[1] "menu": gather.branches["9"]: goes back to "greet" ("greet" -> "menu" -> "greet"), a loop: steps may not form a cycle; to ask again, use gather.retries`,
		}},
		{"gather to itself", edit(func(s *Script) { s.Steps[1].Gather.Branches["9"] = "menu" }), []string{
			`steps[1] "menu": gather.branches["9"]: goes back to "menu" ("menu" -> "menu"), a loop: steps may not form a cycle; to ask again, use gather.retries`,
		}},
		{"through no_input", edit(func(s *Script) { s.Steps[7].Set.Next = "menu" }), []string{
			`steps[7] "no_answer": set.next: goes back to "menu" ("menu" -> "no_answer" -> "menu"), a loop: steps may not form a cycle; to ask again, use gather.retries`,
		}},
		{"through no_match and play", Script{Steps: []Step{
			{Name: "menu", Gather: &Gather{MaxDigits: 1, Timeout: "5s", Branches: map[string]string{"1": "end"}, NoMatch: "sorry"}},
			{Name: "sorry", Play: &Play{Path: "sorry.wav", Next: "menu"}},
			{Name: "end", Hangup: &Hangup{}},
		}}, []string{
			`steps[1] "sorry": play.next: goes back to "menu" ("menu" -> "sorry" -> "menu"), a loop: steps may not form a cycle; to ask again, use gather.retries`,
		}},
		{"two loops, each reported", Script{Steps: []Step{
			{Name: "m", Gather: &Gather{MaxDigits: 1, Timeout: "5s", Branches: map[string]string{"1": "m", "2": "x"}}},
			{Name: "x", Say: &Say{Text: "x", Next: "x"}},
		}}, []string{
			`steps[0] "m": gather.branches["1"]: goes back to "m" ("m" -> "m"), a loop: steps may not form a cycle; to ask again, use gather.retries`,
			`steps[1] "x": say.next: goes back to "x" ("x" -> "x"), a loop: steps may not form a cycle; to ask again, use gather.retries`,
		}},
	} {
		t.Run(c.name, func(t *testing.T) { wantProblems(t, c.script, c.want) })
	}

	// Asking again is the one repetition allowed, and several ways to one
	// step are not a loop.
	s := edit(func(s *Script) {
		g := s.Steps[1].Gather
		g.Retries, g.NoMatch, g.Branches["3"], g.Branches["4"] = 5, "no_answer", "no_answer", "bye"
	})
	if err := s.Validate(); err != nil {
		t.Error(err)
	}
}

func TestProblemJSON(t *testing.T) {
	err := edit(func(s *Script) { s.Start = "x"; s.Steps[1].Gather.Branches["1"] = "confirmed" }).Validate()
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatal(err)
	}
	b, _ := json.Marshal(ps[:2])
	want := `[{"index":-1,"field":"start","reason":"no step named \"x\""},` +
		`{"index":1,"step":"menu","field":"gather.branches[\"1\"]","reason":"no step named \"confirmed\""}]`
	if string(b) != want {
		t.Errorf("got %s\nwant %s", b, want)
	}
}

// TestVoicemailIsAnEntryPoint: a step named voicemail, where a machine's
// call starts, need not be reachable from the start step; what follows it
// is reached through it, and a step neither reaches is still refused.
func TestVoicemailIsAnEntryPoint(t *testing.T) {
	s := Script{Steps: []Step{
		{Name: "greet", Say: &Say{Text: "Xin chào"}},
		{Name: VoicemailStep, Say: &Say{Text: "Vui lòng gọi lại", Next: "bye"}},
		{Name: "bye", Hangup: &Hangup{}},
	}}
	if err := s.Validate(); err != nil {
		t.Fatalf("voicemail as an entry point: %v", err)
	}
	s.Steps = append(s.Steps, Step{Name: "lost", Hangup: &Hangup{}})
	err := s.Validate()
	if err == nil || !strings.Contains(err.Error(), `"lost": unreachable`) {
		t.Fatalf("a step nothing reaches: %v", err)
	}
}
