package script

import (
	"slices"
	"time"
)

// VoicemailStep is the step a call answered by a machine runs instead of the
// start one (answering-machine detection), when the script has it; Validate
// counts it as a second entry point.
const VoicemailStep = "voicemail"

// Script is a voice bot's script: named steps, run from Start (the first
// step when Start is empty) until one hangs up, transfers, or has nowhere to
// go next.
type Script struct {
	Start string `json:"start,omitempty" toml:"start,omitempty"`
	Steps []Step `json:"steps" toml:"steps"`
}

// Step is one named step. Exactly one of its kind fields is set; Kind says
// which.
type Step struct {
	Name     string    `json:"name" toml:"name"`
	Say      *Say      `json:"say,omitempty" toml:"say,omitempty"`
	Play     *Play     `json:"play,omitempty" toml:"play,omitempty"`
	Gather   *Gather   `json:"gather,omitempty" toml:"gather,omitempty"`
	Set      *Set      `json:"set,omitempty" toml:"set,omitempty"`
	Transfer *Transfer `json:"transfer,omitempty" toml:"transfer,omitempty"`
	Hangup   *Hangup   `json:"hangup,omitempty" toml:"hangup,omitempty"`
	OptOut   *OptOut   `json:"opt_out,omitempty" toml:"opt_out,omitempty"`
	Agent    *Agent    `json:"agent,omitempty" toml:"agent,omitempty"`
}

// Say speaks Text, whose {{field}} placeholders the caller fills in, then
// goes to Next (or ends the call when Next is empty).
type Say struct {
	Text string `json:"text" toml:"text"`
	Next string `json:"next,omitempty" toml:"next,omitempty"`
}

// Play plays a WAV prompt, Path being relative to the caller's prompts
// folder, then goes to Next (or ends the call when Next is empty).
type Play struct {
	Path string `json:"path" toml:"path"`
	Next string `json:"next,omitempty" toml:"next,omitempty"`
}

// Gather plays its Prompt, which a key press interrupts (barge-in: that key
// is the first of the input), and reads up to MaxDigits keys, each within
// Timeout (a duration such as "5s"), stopping early at FinishOnKey, which is
// not part of the input. An input that is a key of Branches goes to that
// step. Otherwise the prompt and the reading are done again, up to Retries
// more times, after which an empty input goes to NoInput and any other to
// NoMatch (the call ends when that one is empty).
//
// With "speech" in Input the gather listens for a spoken answer too
// (docs/voicebot.md#spoken-answers): Branches' keys are words or phrases,
// matched as whole words of what was heard (Match), Hints the recognizer's
// vocabulary (the branch keys when empty), Timeout the wait for speech to
// start, EndSilence and MaxSpeech the end of an utterance; BargeIn (default
// true) lets the callee's speech, or key, stop the prompt.
type Gather struct {
	Prompt      *Prompt           `json:"prompt,omitempty" toml:"prompt,omitempty"`
	Input       []string          `json:"input,omitempty" toml:"input,omitempty"`
	MaxDigits   int               `json:"max_digits,omitempty" toml:"max_digits,omitempty"`
	Timeout     string            `json:"timeout" toml:"timeout"`
	FinishOnKey string            `json:"finish_on_key,omitempty" toml:"finish_on_key,omitempty"`
	Branches    map[string]string `json:"branches" toml:"branches"`
	NoInput     string            `json:"no_input,omitempty" toml:"no_input,omitempty"`
	NoMatch     string            `json:"no_match,omitempty" toml:"no_match,omitempty"`
	Retries     int               `json:"retries,omitempty" toml:"retries,omitempty"`
	Hints       []string          `json:"hints,omitempty" toml:"hints,omitempty"`
	EndSilence  string            `json:"end_silence,omitempty" toml:"end_silence,omitempty"`
	MaxSpeech   string            `json:"max_speech,omitempty" toml:"max_speech,omitempty"`
	BargeIn     *bool             `json:"barge_in,omitempty" toml:"barge_in,omitempty"`
}

// What a gather hears (Gather.Input).
const (
	InputDTMF   = "dtmf"
	InputSpeech = "speech"
)

// Defaults of a speech gather's listening.
const (
	DefaultEndSilence = 700 * time.Millisecond
	DefaultMaxSpeech  = 10 * time.Second
)

// Speech says whether the gather listens for a spoken answer.
func (g *Gather) Speech() bool { return slices.Contains(g.Input, InputSpeech) }

// DTMF says whether the gather reads keys: the default.
func (g *Gather) DTMF() bool { return len(g.Input) == 0 || slices.Contains(g.Input, InputDTMF) }

// bargeIn is BargeIn with its default, true.
func (g *Gather) bargeIn() bool { return g.BargeIn == nil || *g.BargeIn }

// Prompt is what a Gather plays first: text to speak (Say) or a WAV prompt
// (Play), at most one of them.
type Prompt struct {
	Say  string `json:"say,omitempty" toml:"say,omitempty"`
	Play string `json:"play,omitempty" toml:"play,omitempty"`
}

// Set records Label as the call's result (the last one set wins), then goes
// to Next (or ends the call when Next is empty).
type Set struct {
	Label string `json:"label" toml:"label"`
	Next  string `json:"next,omitempty" toml:"next,omitempty"`
}

// Transfer hands the call to a SIP URI; the script ends there.
type Transfer struct {
	To string `json:"to" toml:"to"`
}

// Hangup ends the call.
type Hangup struct{}

// OptOut is the callee refusing further calls: the runner has the number
// put on the tenant's do-not-call list at once (Runner.OptOut), records
// the result OptedOut, speaks Say when set (a polite goodbye), and ends the
// call.
type OptOut struct {
	Say string `json:"say,omitempty" toml:"say,omitempty"`
}

// OptedOut is the result of a call whose callee opted out.
const OptedOut = "opted_out"

// Kind names a step's kind.
type Kind string

const (
	KindSay      Kind = "say"
	KindPlay     Kind = "play"
	KindGather   Kind = "gather"
	KindSet      Kind = "set"
	KindTransfer Kind = "transfer"
	KindHangup   Kind = "hangup"
	KindOptOut   Kind = "opt_out"
	KindAgent    Kind = "agent"
)

// kinds lists the kinds a step has set, in declaration order.
func (s *Step) kinds() []Kind {
	var ks []Kind
	if s.Say != nil {
		ks = append(ks, KindSay)
	}
	if s.Play != nil {
		ks = append(ks, KindPlay)
	}
	if s.Gather != nil {
		ks = append(ks, KindGather)
	}
	if s.Set != nil {
		ks = append(ks, KindSet)
	}
	if s.Transfer != nil {
		ks = append(ks, KindTransfer)
	}
	if s.Hangup != nil {
		ks = append(ks, KindHangup)
	}
	if s.OptOut != nil {
		ks = append(ks, KindOptOut)
	}
	if s.Agent != nil {
		ks = append(ks, KindAgent)
	}
	return ks
}

// Kind is the step's kind, or "" when it has none or several (which
// Validate refuses).
func (s *Step) Kind() Kind {
	if ks := s.kinds(); len(ks) == 1 {
		return ks[0]
	}
	return ""
}

// FromContent is the script of a scenario that has plain content: say it,
// then hang up.
func FromContent(content string) Script {
	return Script{Steps: []Step{{Name: "content", Say: &Say{Text: content}}}}
}
