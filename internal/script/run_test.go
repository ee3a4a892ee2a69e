package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// input is what the callee does at one Gather: the keys it presses, and
// whether it then stays silent until the timeout.
type input struct {
	keys     string
	timedOut bool
}

// fakeCall plays a callee: barge lists the keys pressed during interruptible
// prompts, one per prompt (0 for none), inputs what each Gather reads; when
// either runs out the callee is silent. It logs what the script did.
type fakeCall struct {
	barge  []rune
	inputs []input
	heard  []Heard // what each Listen hears; silence once it runs out
	log    []string
	// stall names a method ("say", "gather"...) that, at its nth call
	// (stallAt, from 1), cancels the run and waits for ctx like a real
	// call would.
	stall   string
	stallAt int
	cancel  context.CancelCauseFunc
	fail    map[string]error // a method's error
	calls   map[string]int
}

var errHungUp = errors.New("the callee hung up")

func (f *fakeCall) enter(ctx context.Context, method, entry string) error {
	f.log = append(f.log, entry)
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[method]++
	if method == f.stall && f.calls[method] == max(f.stallAt, 1) {
		f.cancel(errHungUp)
		<-ctx.Done()
		return ctx.Err()
	}
	return f.fail[method]
}

func (f *fakeCall) prompt(ctx context.Context, method, what string, bargeIn bool) (rune, error) {
	entry := method + ": " + what
	if bargeIn {
		entry = method + " (barge-in): " + what
	}
	if err := f.enter(ctx, method, entry); err != nil {
		return 0, err
	}
	if !bargeIn || len(f.barge) == 0 {
		return 0, nil
	}
	k := f.barge[0]
	f.barge = f.barge[1:]
	return k, nil
}

func (f *fakeCall) Say(ctx context.Context, text string, bargeIn bool) (rune, error) {
	return f.prompt(ctx, "say", text, bargeIn)
}

func (f *fakeCall) Play(ctx context.Context, path string, bargeIn bool) (rune, error) {
	return f.prompt(ctx, "play", path, bargeIn)
}

func (f *fakeCall) Gather(ctx context.Context, o GatherOptions) (string, bool, error) {
	finish := "none"
	if o.FinishOnKey != 0 {
		finish = string(o.FinishOnKey)
	}
	if err := f.enter(ctx, "gather", fmt.Sprintf("gather: %d keys, %s each, finish %s", o.MaxDigits, o.Timeout, finish)); err != nil {
		return "", false, err
	}
	if len(f.inputs) == 0 {
		return "", true, nil
	}
	in := f.inputs[0]
	f.inputs = f.inputs[1:]
	return in.keys, in.timedOut, nil
}

func (f *fakeCall) Transfer(ctx context.Context, uri string) error {
	return f.enter(ctx, "transfer", "transfer: "+uri)
}

func (f *fakeCall) Hangup(ctx context.Context) error {
	return f.enter(ctx, "hangup", "hangup")
}

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// ticking is a clock that moves one second each time it is read.
func ticking() func() time.Time {
	now := t0
	return func() time.Time {
		now = now.Add(time.Second)
		return now
	}
}

// runOn runs s on f with a ticking clock and a context f can cancel.
func runOn(s Script, f *fakeCall) Outcome {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	f.cancel = cancel
	return Runner{Now: ticking()}.Run(ctx, s, f)
}

func wantLog(t *testing.T, f *fakeCall, want ...string) {
	t.Helper()
	if got := strings.Join(f.log, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("the call saw:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

// taken is the steps an outcome went through, with a gather's input and
// attempts.
func taken(o Outcome) string {
	var names []string
	for _, s := range o.Steps {
		n := s.Name
		if s.Kind == KindGather {
			n += fmt.Sprintf("[%q x%d]", s.Input, s.Attempts)
		}
		names = append(names, n)
	}
	return strings.Join(names, " ")
}

func wantOutcome(t *testing.T, o Outcome, end End, path_, digits, result string) {
	t.Helper()
	if o.End != end || taken(o) != path_ || o.Digits != digits || o.Result != result {
		t.Errorf("outcome: end %s, path %s, digits %q, result %q (err %v)\nwant: end %s, path %s, digits %q, result %q",
			o.End, taken(o), o.Digits, o.Result, o.Err, end, path_, digits, result)
	}
}

const (
	greeting = "say: Hello {{name}}, this is a reminder of your appointment on {{date}}."
	menuSay  = "say (barge-in): Press 1 to confirm, 2 for an agent."
	menuRead = "gather: 1 keys, 5s each, finish none"
)

func TestRunReminderConfirmed(t *testing.T) {
	f := &fakeCall{inputs: []input{{keys: "1"}}}
	o := runOn(reminder(), f)
	wantOutcome(t, o, EndHangup, `greet menu["1" x1] confirm thanks bye`, "1", "confirmed")
	wantLog(t, f, greeting, menuSay, menuRead, "say: Thank you, see you then.", "hangup")
	if o.Err != nil {
		t.Error(o.Err)
	}
	// Each step's times come from the clock, read once as it starts and
	// once as it ends.
	for i, s := range o.Steps {
		if want := t0.Add(time.Duration(2*i+1) * time.Second); !s.Started.Equal(want) || !s.Ended.Equal(want.Add(time.Second)) {
			t.Errorf("step %d %s: %s to %s", i, s.Name, s.Started, s.Ended)
		}
		if want := []Kind{KindSay, KindGather, KindSet, KindSay, KindHangup}[i]; s.Kind != want {
			t.Errorf("step %d is a %s, want %s", i, s.Kind, want)
		}
	}
}

func TestRunReminderAgent(t *testing.T) {
	f := &fakeCall{inputs: []input{{keys: "2"}}}
	o := runOn(reminder(), f)
	wantOutcome(t, o, EndTransferred, `greet menu["2" x1] agent to_agent`, "2", "wants_agent")
	wantLog(t, f, greeting, menuSay, menuRead, "transfer: sip:agents@pbx.example.com")
}

func TestRunReminderNoInput(t *testing.T) {
	f := &fakeCall{} // silent: every gather times out
	o := runOn(reminder(), f)
	wantOutcome(t, o, EndHangup, `greet menu["" x3] no_answer bye`, "", "no_answer")
	wantLog(t, f, greeting, menuSay, menuRead, menuSay, menuRead, menuSay, menuRead, "hangup")
	if !o.Steps[1].TimedOut {
		t.Error("the gather did not record its timeout")
	}
}

func TestRunRetries(t *testing.T) {
	// Silence, then a wrong key, then the right one: the third and last
	// attempt.
	f := &fakeCall{inputs: []input{{"", true}, {"7", false}, {"1", false}}}
	o := runOn(reminder(), f)
	wantOutcome(t, o, EndHangup, `greet menu["1" x3] confirm thanks bye`, "71", "confirmed")
	if o.Steps[1].TimedOut {
		t.Error("the last attempt did not time out")
	}

	// Wrong keys to the end: no_match, which the reminder does not have, so
	// the call ends there.
	f = &fakeCall{inputs: []input{{"7", false}, {"", true}, {"9", false}}}
	o = runOn(reminder(), f)
	wantOutcome(t, o, EndHangup, `greet menu["9" x3]`, "79", "")
	wantLog(t, f, greeting, menuSay, menuRead, menuSay, menuRead, menuSay, menuRead, "hangup")

	// With a no_match step, and no retries.
	s := edit(func(s *Script) {
		s.Steps[1].Gather.NoMatch = "no_answer"
		s.Steps[1].Gather.Retries = 0
	})
	f = &fakeCall{inputs: []input{{"5", false}}}
	o = runOn(s, f)
	wantOutcome(t, o, EndHangup, `greet menu["5" x1] no_answer bye`, "5", "no_answer")
}

func TestRunBargeIn(t *testing.T) {
	// 2 pressed during the menu prompt: that is the input, read no further.
	f := &fakeCall{barge: []rune{'2'}}
	o := runOn(reminder(), f)
	wantOutcome(t, o, EndTransferred, `greet menu["2" x1] agent to_agent`, "2", "wants_agent")
	wantLog(t, f, greeting, menuSay, "transfer: sip:agents@pbx.example.com")

	// A longer input: the key that stopped the prompt is its first, and
	// the finish key is not part of it.
	pin := Script{Steps: []Step{
		{Name: "pin", Gather: &Gather{Prompt: &Prompt{Play: "pin.wav"}, MaxDigits: 4, Timeout: "3s", FinishOnKey: "#",
			Branches: map[string]string{"123": "ok"}, Retries: 1}},
		{Name: "ok", Set: &Set{Label: "ok"}},
	}}
	f = &fakeCall{barge: []rune{'9', '1'}, inputs: []input{{"#", false}, {"23#", false}}}
	o = runOn(pin, f)
	wantOutcome(t, o, EndHangup, `pin["123" x2] ok`, "9#123#", "ok")
	wantLog(t, f, "play (barge-in): pin.wav", "gather: 3 keys, 3s each, finish #",
		"play (barge-in): pin.wav", "gather: 3 keys, 3s each, finish #", "hangup")

	// The finish key alone during the prompt: an empty input, at once.
	f = &fakeCall{barge: []rune{'#'}}
	o = runOn(pin, f)
	wantOutcome(t, o, EndHangup, `pin["" x2]`, "#", "")
	wantLog(t, f, "play (barge-in): pin.wav", "play (barge-in): pin.wav", "gather: 4 keys, 3s each, finish #", "hangup")
}

func TestRunGatherWithoutPrompt(t *testing.T) {
	s := Script{Steps: []Step{
		{Name: "read", Gather: &Gather{MaxDigits: 2, Timeout: "2s", Branches: map[string]string{"42": "end"}}},
		{Name: "end", Hangup: &Hangup{}},
	}}
	f := &fakeCall{inputs: []input{{"42", false}}}
	o := runOn(s, f)
	wantOutcome(t, o, EndHangup, `read["42" x1] end`, "42", "")
	wantLog(t, f, "gather: 2 keys, 2s each, finish none", "hangup")
}

func TestRunEveryKind(t *testing.T) {
	s := Script{Start: "intro", Steps: []Step{
		{Name: "bye", Hangup: &Hangup{}},
		{Name: "intro", Play: &Play{Path: "brand/jingle.wav", Next: "hello"}},
		{Name: "hello", Say: &Say{Text: "Hi {{name}}", Next: "first"}},
		{Name: "first", Set: &Set{Label: "reached", Next: "second"}},
		{Name: "second", Set: &Set{Label: "heard_out", Next: "bye"}},
	}}
	// Keys pressed during a plain say or play do not stop it: the call is
	// told so, and plays it whole.
	f := &fakeCall{barge: []rune{'5'}}
	o := runOn(s, f)
	wantOutcome(t, o, EndHangup, "intro hello first second bye", "", "heard_out")
	wantLog(t, f, "play: brand/jingle.wav", "say: Hi {{name}}", "hangup")
	if f.calls["hangup"] != 1 {
		t.Errorf("hung up %d times", f.calls["hangup"])
	}
}

func TestRunFromContent(t *testing.T) {
	f := &fakeCall{}
	o := runOn(FromContent("Your bill of {{amount}} is due."), f)
	wantOutcome(t, o, EndHangup, "content", "", "")
	wantLog(t, f, "say: Your bill of {{amount}} is due.", "hangup")
}

func TestRunCanceled(t *testing.T) {
	for _, c := range []struct {
		stall   string
		stallAt int
		path    string
		result  string
		log     []string
	}{
		{"say", 1, "greet", "", []string{greeting}},
		{"say", 2, `greet menu["" x1]`, "", []string{greeting, menuSay}},
		{"gather", 2, `greet menu["" x2]`, "", []string{greeting, menuSay, menuRead, menuSay, menuRead}},
		{"hangup", 1, `greet menu["" x3] no_answer bye`, "no_answer", []string{greeting, menuSay, menuRead, menuSay, menuRead, menuSay, menuRead, "hangup"}},
	} {
		t.Run(fmt.Sprintf("%s %d", c.stall, c.stallAt), func(t *testing.T) {
			f := &fakeCall{stall: c.stall, stallAt: c.stallAt}
			o := runOn(reminder(), f)
			wantOutcome(t, o, EndCanceled, c.path, "", c.result)
			if o.Err != errHungUp {
				t.Errorf("err %v, want the cancellation's cause", o.Err)
			}
			wantLog(t, f, c.log...)
			last := o.Steps[len(o.Steps)-1]
			if last.Ended.IsZero() {
				t.Error("the step stopped in has no end")
			}
		})
	}

	// Done before it starts: the call is left alone.
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errHungUp)
	f := &fakeCall{}
	o := Runner{}.Run(ctx, reminder(), f)
	if o.End != EndCanceled || o.Err != errHungUp || len(o.Steps) != 0 || len(f.log) != 0 {
		t.Errorf("outcome %+v, the call saw %q", o, f.log)
	}
}

func TestRunCallFails(t *testing.T) {
	boom := errors.New("488 Not Acceptable Here")
	f := &fakeCall{inputs: []input{{keys: "2"}}, fail: map[string]error{"transfer": boom}}
	o := runOn(reminder(), f)
	wantOutcome(t, o, EndFailed, `greet menu["2" x1] agent to_agent`, "2", "wants_agent")
	if o.Err != boom {
		t.Errorf("err %v", o.Err)
	}
	// The runner leaves the call to its caller after a failure.
	wantLog(t, f, greeting, menuSay, menuRead, "transfer: sip:agents@pbx.example.com")

	f = &fakeCall{fail: map[string]error{"hangup": boom}}
	o = runOn(FromContent("Hi"), f)
	wantOutcome(t, o, EndFailed, "content", "", "")
}

func TestRunInvalid(t *testing.T) {
	f := &fakeCall{}
	o := runOn(chain("b", "a"), f)
	var ps Problems
	if o.End != EndFailed || !errors.As(o.Err, &ps) || len(o.Steps) != 0 || len(f.log) != 0 {
		t.Errorf("outcome %+v, the call saw %q", o, f.log)
	}
}

func TestOutcomeJSON(t *testing.T) {
	o := runOn(reminder(), &fakeCall{inputs: []input{{keys: "1"}}})
	o.Steps, o.Transcript = o.Steps[:2], o.Transcript[:1]
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"steps":[` +
		`{"name":"greet","kind":"say","started":"2026-03-01T09:00:01Z","ended":"2026-03-01T09:00:02Z"},` +
		`{"name":"menu","kind":"gather","started":"2026-03-01T09:00:03Z","ended":"2026-03-01T09:00:04Z","input":"1","attempts":1}],` +
		`"digits":"1","result":"confirmed",` +
		`"transcript":[{"speaker":"bot","text":"Hello {{name}}, this is a reminder of your appointment on {{date}}.","at":"2026-03-01T09:00:01Z"}],"end":"hangup"}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

// opt_out records the refusal first (before the goodbye, which the callee
// may not wait for), sets the result, says the goodbye and hangs up; with
// no way to record it, the script fails rather than pretend.
func TestRunOptOut(t *testing.T) {
	s := Script{Steps: []Step{
		{Name: "menu", Gather: &Gather{Prompt: &Prompt{Say: "Press 9 to stop these calls."}, MaxDigits: 1, Timeout: "5s",
			Branches: map[string]string{"9": "stop"}}},
		{Name: "stop", OptOut: &OptOut{Say: "You will not be called again. Goodbye."}}}}
	f := &fakeCall{inputs: []input{{keys: "9"}}}
	var recorded []string
	r := Runner{Now: ticking(), OptOut: func(context.Context) error {
		recorded = append(recorded, strings.Join(f.log, "|"))
		return nil
	}}
	o := r.Run(context.Background(), s, f)
	wantOutcome(t, o, EndHangup, `menu["9" x1] stop`, "9", OptedOut)
	wantLog(t, f, "say (barge-in): Press 9 to stop these calls.", "gather: 1 keys, 5s each, finish none",
		"say: You will not be called again. Goodbye.", "hangup")
	if len(recorded) != 1 || strings.Contains(recorded[0], "Goodbye") {
		t.Errorf("opt-out recorded %d times, after %q", len(recorded), recorded)
	}
	o = Runner{Now: ticking()}.Run(context.Background(), s, &fakeCall{inputs: []input{{keys: "9"}}})
	if o.End != EndFailed || o.Result == OptedOut {
		t.Errorf("without OptOut: end %s, result %q", o.End, o.Result)
	}
}

func (f *fakeCall) Listen(ctx context.Context, o ListenOptions) (Heard, error) {
	entry := fmt.Sprintf("listen: %q, %s, hints %q", o.Prompt.Say+o.Prompt.Play, o.Timeout, o.Hints)
	if o.BargeIn {
		entry += ", barge-in"
	}
	if o.Keys {
		entry += fmt.Sprintf(", %d keys", o.MaxDigits)
	}
	if err := f.enter(ctx, "listen", entry); err != nil {
		return Heard{}, err
	}
	if len(f.heard) == 0 {
		return Heard{}, nil
	}
	h := f.heard[0]
	f.heard = f.heard[1:]
	return h, nil
}
