package script

import (
	"fmt"
	"maps"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Ranges of a gather's settings.
const (
	maxDigitsLimit = 32
	minTimeout     = time.Second
	maxTimeout     = 60 * time.Second
	maxRetries     = 5
	// A speech gather's: the words of a branch or hint, and the hints.
	maxPhraseRunes = 100
	maxHints       = 100
	minEndSilence  = 100 * time.Millisecond
	maxEndSilence  = 5 * time.Second
	minMaxSpeech   = time.Second
	maxMaxSpeech   = 60 * time.Second
)

// Problem is one reason a script is refused: which step (Index into Steps,
// -1 for the script as a whole, and its Name), which field of it (a path
// such as gather.branches["1"], empty for the step as a whole), and why.
type Problem struct {
	Index  int    `json:"index"`
	Step   string `json:"step,omitempty"`
	Field  string `json:"field,omitempty"`
	Reason string `json:"reason"`
}

func (p Problem) Error() string {
	var b strings.Builder
	if p.Index >= 0 {
		fmt.Fprintf(&b, "steps[%d]", p.Index)
		if p.Step != "" {
			fmt.Fprintf(&b, " %q", p.Step)
		}
		b.WriteString(": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field + ": ")
	}
	b.WriteString(p.Reason)
	return b.String()
}

// Problems is every reason a script is refused, in step order, the script's
// own first.
type Problems []Problem

func (ps Problems) Error() string {
	msgs := make([]string, len(ps))
	for i, p := range ps {
		msgs[i] = p.Error()
	}
	return strings.Join(msgs, "; ")
}

// edge is a way out of a step: the field that names the next step, and that
// name.
type edge struct {
	field, to string
}

// edges lists a step's ways out in a fixed order (branches by key), so that
// problems come out the same every time.
func (s *Step) edges() []edge {
	var es []edge
	add := func(field, to string) {
		if to != "" {
			es = append(es, edge{field, to})
		}
	}
	if s.Say != nil {
		add("say.next", s.Say.Next)
	}
	if s.Play != nil {
		add("play.next", s.Play.Next)
	}
	if g := s.Gather; g != nil {
		for _, k := range slices.Sorted(maps.Keys(g.Branches)) {
			add(branchField(k), g.Branches[k])
		}
		add("gather.no_input", g.NoInput)
		add("gather.no_match", g.NoMatch)
	}
	if s.Set != nil {
		add("set.next", s.Set.Next)
	}
	if s.Agent != nil {
		add("agent.next", s.Agent.Next)
	}
	return es
}

func branchField(key string) string { return "gather.branches[" + strconv.Quote(key) + "]" }

// Validate says whether the script can be saved and run: nil, or Problems
// listing everything wrong with it.
func (s Script) Validate() error {
	v := validator{s: s, index: map[string]int{}}
	v.check()
	if len(v.ps) == 0 {
		return nil
	}
	slices.SortStableFunc(v.ps, func(a, b Problem) int { return a.Index - b.Index })
	return v.ps
}

type validator struct {
	s     Script
	index map[string]int // step name -> index of the first step so named
	ps    Problems
}

func (v *validator) add(i int, field, format string, args ...any) {
	p := Problem{Index: i, Field: field, Reason: fmt.Sprintf(format, args...)}
	if i >= 0 {
		p.Step = v.s.Steps[i].Name
	}
	v.ps = append(v.ps, p)
}

// ref checks that a field names an existing step; an empty name is checked
// by whoever requires one.
func (v *validator) ref(i int, field, to string) {
	if _, ok := v.index[to]; to != "" && !ok {
		v.add(i, field, "no step named %q", to)
	}
}

func (v *validator) check() {
	steps := v.s.Steps
	if len(steps) == 0 {
		v.add(-1, "steps", "a script needs at least one step")
		return
	}
	for i, st := range steps {
		if strings.TrimSpace(st.Name) == "" {
			v.add(i, "name", "required")
		} else if j, dup := v.index[st.Name]; dup {
			v.add(i, "name", "already the name of steps[%d]", j)
		} else {
			v.index[st.Name] = i
		}
	}
	for i := range steps {
		v.step(i)
	}
	start := v.s.Start
	if start == "" {
		start = steps[0].Name
	} else if _, ok := v.index[start]; !ok {
		v.add(-1, "start", "no step named %q", start)
	}
	if first, ok := v.index[start]; ok {
		v.graph(first)
	}
}

func (v *validator) step(i int) {
	st := &v.s.Steps[i]
	switch ks := st.kinds(); len(ks) {
	case 0:
		v.add(i, "", "no kind: a step needs exactly one of say, play, gather, set, transfer, hangup, opt_out or agent")
	case 1:
	default:
		names := make([]string, len(ks))
		for j, k := range ks {
			names[j] = string(k)
		}
		v.add(i, "", "%s together: a step has exactly one kind", strings.Join(names, " and "))
	}
	if s := st.Say; s != nil {
		if strings.TrimSpace(s.Text) == "" {
			v.add(i, "say.text", "required")
		}
		v.ref(i, "say.next", s.Next)
	}
	if p := st.Play; p != nil {
		if r := checkPath(p.Path); r != "" {
			v.add(i, "play.path", "%s", r)
		}
		v.ref(i, "play.next", p.Next)
	}
	if g := st.Gather; g != nil {
		v.gather(i, g)
	}
	if s := st.Set; s != nil {
		if r := checkLabel(s.Label); r != "" {
			v.add(i, "set.label", "%s", r)
		}
		v.ref(i, "set.next", s.Next)
	}
	if t := st.Transfer; t != nil {
		if r := checkSIPURI(t.To); r != "" {
			v.add(i, "transfer.to", "%s", r)
		}
	}
	if a := st.Agent; a != nil {
		v.agent(i, a)
	}
}

// An agent's bounds, beside maxPromptRunes and maxAgentTurns.
const (
	maxAgentResults = 20
	maxSayRunes     = 2000 // greeting, fallback
)

func (v *validator) agent(i int, a *Agent) {
	switch n := utf8.RuneCountInString(a.Prompt); {
	case strings.TrimSpace(a.Prompt) == "":
		v.add(i, "agent.prompt", "required: what the model is told of its task")
	case n > maxPromptRunes:
		v.add(i, "agent.prompt", "%d characters: at most %d", n, maxPromptRunes)
	}
	for _, f := range []struct{ name, text string }{{"greeting", a.Greeting}, {"fallback", a.Fallback}} {
		if n := utf8.RuneCountInString(f.text); n > maxSayRunes {
			v.add(i, "agent."+f.name, "%d characters: at most %d", n, maxSayRunes)
		}
	}
	if a.MaxTurns < 0 || a.MaxTurns > maxAgentTurns {
		v.add(i, "agent.max_turns", "%d is out of range: 1 to %d (0 or left out: %d)", a.MaxTurns, maxAgentTurns, DefaultMaxTurns)
	}
	switch {
	case len(a.Results) == 0:
		v.add(i, "agent.results", "required: the results the model may end the call with, such as [\"confirmed\", \"declined\"]")
	case len(a.Results) > maxAgentResults:
		v.add(i, "agent.results", "%d results: at most %d", len(a.Results), maxAgentResults)
	}
	for j, r := range a.Results {
		f := fmt.Sprintf("agent.results[%d]", j)
		if p := checkLabel(r); p != "" {
			v.add(i, f, "%s", p)
		} else if slices.Index(a.Results, r) < j {
			v.add(i, f, "%q is given twice", r)
		}
	}
	if a.Transfer != "" {
		if r := checkSIPURI(a.Transfer); r != "" {
			v.add(i, "agent.transfer", "%s", r)
		}
	}
	v.duration(i, "agent.timeout", a.Timeout, minTimeout, maxTimeout)
	v.ref(i, "agent.next", a.Next)
}

func (v *validator) gather(i int, g *Gather) {
	if p := g.Prompt; p != nil {
		switch {
		case p.Say != "" && p.Play != "":
			v.add(i, "gather.prompt", "say and play together: a prompt is one or the other")
		case p.Play != "":
			if r := checkPath(p.Play); r != "" {
				v.add(i, "gather.prompt.play", "%s", r)
			}
		case strings.TrimSpace(p.Say) == "":
			v.add(i, "gather.prompt", "empty: give say or play, or leave the prompt out")
		}
	}
	v.input(i, g)
	keys, speech := g.DTMF(), g.Speech()
	maxOK := g.MaxDigits >= 1 && g.MaxDigits <= maxDigitsLimit
	switch {
	case !keys && g.MaxDigits != 0:
		v.add(i, "gather.max_digits", "keys are not read (input has no \"dtmf\"): leave it out")
	case keys && !maxOK:
		v.add(i, "gather.max_digits", "%d is out of range: 1 to %d", g.MaxDigits, maxDigitsLimit)
	}
	if d, err := time.ParseDuration(g.Timeout); err != nil {
		v.add(i, "gather.timeout", "%q is not a duration such as \"5s\"", g.Timeout)
	} else if d < minTimeout || d > maxTimeout {
		v.add(i, "gather.timeout", "%s is out of range: %s to %s", g.Timeout, minTimeout, maxTimeout)
	}
	finishOK := g.FinishOnKey == "" || len(g.FinishOnKey) == 1 && isDTMF(g.FinishOnKey[0])
	switch {
	case !finishOK:
		v.add(i, "gather.finish_on_key", "%q is not one key among 0-9, * and #", g.FinishOnKey)
	case !keys && g.FinishOnKey != "":
		v.add(i, "gather.finish_on_key", "keys are not read (input has no \"dtmf\"): leave it out")
	}
	if len(g.Branches) == 0 {
		v.add(i, "gather.branches", "required: at least one input and the step it leads to")
	}
	phrases := map[string]string{} // a spoken key's words -> the key
	for _, k := range slices.Sorted(maps.Keys(g.Branches)) {
		f := branchField(k)
		pressed := keys && strings.IndexFunc(k, func(r rune) bool { return r > 0x7f || !isDTMF(byte(r)) }) < 0
		switch {
		case k == "":
			v.add(i, f, "an empty input is no input: use gather.no_input")
		case pressed && maxOK && len(k) > g.MaxDigits:
			v.add(i, f, "longer than max_digits (%d): it can never be entered", g.MaxDigits)
		case pressed && finishOK && g.FinishOnKey != "" && strings.Contains(k, g.FinishOnKey):
			v.add(i, f, "contains finish_on_key %q, which ends the input: it can never be entered", g.FinishOnKey)
		case pressed:
		case !speech:
			v.add(i, f, "only the keys 0-9, * and # can be pressed")
		default:
			if r := checkPhrase(k); r != "" {
				v.add(i, f, "%s", r)
			} else if w := strings.Join(Words(k), " "); phrases[w] != "" {
				v.add(i, f, "the same words as the branch %q once case and diacritics are set aside: one of them can never be taken", phrases[w])
			} else {
				phrases[w] = k
			}
		}
		if g.Branches[k] == "" {
			v.add(i, f, "required: the step this input leads to")
		}
		v.ref(i, f, g.Branches[k])
	}
	v.listening(i, g, speech)
	v.ref(i, "gather.no_input", g.NoInput)
	v.ref(i, "gather.no_match", g.NoMatch)
	if g.Retries < 0 || g.Retries > maxRetries {
		v.add(i, "gather.retries", "%d is out of range: 0 to %d", g.Retries, maxRetries)
	}
}

// input checks gather.input: left out, keys; else "dtmf", "speech" or both.
func (v *validator) input(i int, g *Gather) {
	if g.Input != nil && len(g.Input) == 0 {
		v.add(i, "gather.input", `empty: give ["dtmf"], ["speech"] or ["dtmf", "speech"], or leave it out for keys`)
	}
	for j, in := range g.Input {
		f := fmt.Sprintf("gather.input[%d]", j)
		switch {
		case in != InputDTMF && in != InputSpeech:
			v.add(i, f, "%q is neither \"dtmf\" nor \"speech\"", in)
		case slices.Index(g.Input, in) < j:
			v.add(i, f, "%q is given twice", in)
		}
	}
}

// listening checks a speech gather's own settings, which a gather of keys
// alone may not have.
func (v *validator) listening(i int, g *Gather, speech bool) {
	if !speech {
		for _, f := range []struct {
			name string
			set  bool
		}{{"hints", g.Hints != nil}, {"end_silence", g.EndSilence != ""}, {"max_speech", g.MaxSpeech != ""}} {
			if f.set {
				v.add(i, "gather."+f.name, "only for spoken answers: add \"speech\" to input")
			}
		}
		return
	}
	if len(g.Hints) > maxHints {
		v.add(i, "gather.hints", "%d hints: at most %d", len(g.Hints), maxHints)
	}
	for j, h := range g.Hints {
		if r := checkPhrase(h); r != "" {
			v.add(i, fmt.Sprintf("gather.hints[%d]", j), "%s", r)
		}
	}
	v.duration(i, "gather.end_silence", g.EndSilence, minEndSilence, maxEndSilence)
	v.duration(i, "gather.max_speech", g.MaxSpeech, minMaxSpeech, maxMaxSpeech)
}

// duration checks an optional duration field against its range.
func (v *validator) duration(i int, field, value string, lo, hi time.Duration) {
	if value == "" {
		return
	}
	if d, err := time.ParseDuration(value); err != nil {
		v.add(i, field, "%q is not a duration such as \"700ms\"", value)
	} else if d < lo || d > hi {
		v.add(i, field, "%s is out of range: %s to %s", value, lo, hi)
	}
}

// checkPhrase says what is wrong with words a callee may say: a branch key
// or a hint of a speech gather.
func checkPhrase(p string) string {
	switch {
	case utf8.RuneCountInString(p) > maxPhraseRunes:
		return fmt.Sprintf("longer than %d characters", maxPhraseRunes)
	case len(Words(p)) == 0:
		return fmt.Sprintf("%q has no word to hear: give letters or digits", p)
	}
	return ""
}

// graph walks the steps from the start one, depth first, refusing every way
// back to a step on the current path (the loop rule of the package doc)
// and then every step the walk never reached.
func (v *validator) graph(start int) {
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]int, len(v.s.Steps))
	var path []int
	var walk func(i int)
	walk = func(i int) {
		state[i] = onPath
		path = append(path, i)
		for _, e := range v.s.Steps[i].edges() {
			j, ok := v.index[e.to]
			if !ok {
				continue // reported by ref
			}
			switch state[j] {
			case unseen:
				walk(j)
			case onPath:
				var names []string
				for _, k := range path[slices.Index(path, j):] {
					names = append(names, strconv.Quote(v.s.Steps[k].Name))
				}
				names = append(names, strconv.Quote(e.to))
				v.add(i, e.field, "goes back to %q (%s), a loop: steps may not form a cycle; to ask again, use gather.retries",
					e.to, strings.Join(names, " -> "))
			}
		}
		path = path[:len(path)-1]
		state[i] = done
	}
	walk(start)
	// A step named voicemail is where a call answered by a machine starts
	// (answering-machine detection), so it and what follows it are reached.
	if j, ok := v.index[VoicemailStep]; ok && state[j] == unseen {
		walk(j)
	}
	for i, st := range v.s.Steps {
		// Steps without a name of their own are refused already, and no
		// reference can reach them.
		if j, ok := v.index[st.Name]; ok && j == i && state[i] == unseen {
			v.add(i, "", "unreachable from the start step %q", v.s.Steps[start].Name)
		}
	}
}

func isDTMF(c byte) bool { return c >= '0' && c <= '9' || c == '*' || c == '#' }

func checkLabel(l string) string {
	if l == "" {
		return "required"
	}
	for _, r := range l {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return fmt.Sprintf("%q is not a label: lower-case letters, digits and _ only", l)
		}
	}
	return ""
}

// checkPath says what is wrong with a prompt's path, which the caller
// resolves under its prompts folder: it must stay inside.
func checkPath(p string) string {
	switch {
	case p == "":
		return "required"
	case strings.Contains(p, `\`):
		return fmt.Sprintf("%q: folders are separated by /", p)
	case strings.HasPrefix(p, "/") || len(p) >= 2 && p[1] == ':':
		return fmt.Sprintf("%q is absolute: give a path under the prompts folder", p)
	case slices.Contains(strings.Split(p, "/"), ".."):
		return fmt.Sprintf("%q leaves the prompts folder (..)", p)
	case path.Clean(p) != p:
		return fmt.Sprintf("%q is not a clean path such as \"reminder/greeting.wav\"", p)
	case !strings.EqualFold(path.Ext(p), ".wav"):
		return fmt.Sprintf("%q is not a .wav file", p)
	}
	return ""
}

// checkSIPURI says what is wrong with a transfer target: a sip: or sips: URI
// (RFC 3261 section 19.1) with a host, checked no further than needed to
// catch a typo.
func checkSIPURI(u string) string {
	if u == "" {
		return "required"
	}
	rest, ok := cutPrefixFold(u, "sip:")
	if !ok {
		rest, ok = cutPrefixFold(u, "sips:")
	}
	if !ok {
		return fmt.Sprintf("%q is not a SIP URI: it starts with sip: or sips:", u)
	}
	if i := strings.IndexAny(rest, ";?"); i >= 0 {
		rest = rest[:i] // parameters and headers
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest = rest[i+1:] // the user part
	}
	host, port, hasPort := rest, "", false
	if strings.HasPrefix(rest, "[") {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return fmt.Sprintf("%q: the IPv6 address has no closing ]", u)
		}
		host, port = rest[1:end], rest[end+1:]
		if ip := net.ParseIP(host); ip == nil || !strings.Contains(host, ":") {
			return fmt.Sprintf("%q: %q is not an IPv6 address", u, host)
		}
		if port != "" {
			if port[0] != ':' {
				return fmt.Sprintf("%q: unexpected %q after the host", u, port)
			}
			port, hasPort = port[1:], true
		}
	} else {
		if i := strings.LastIndexByte(rest, ':'); i >= 0 {
			host, port, hasPort = rest[:i], rest[i+1:], true
		}
		if host == "" {
			return fmt.Sprintf("%q has no host", u)
		}
		if !isHostname(host) {
			return fmt.Sprintf("%q: %q is not a host name or IP address", u, host)
		}
	}
	if hasPort {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strings.Trim(port, "0123456789") != "" {
			return fmt.Sprintf("%q: port %q is not 1 to 65535", u, port)
		}
	}
	return ""
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// isHostname accepts DNS names and IPv4 addresses: letters, digits, dots and
// hyphens, with no empty label and no label starting or ending in a hyphen.
func isHostname(h string) bool {
	for label := range strings.SplitSeq(strings.TrimSuffix(h, "."), ".") {
		if label == "" || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// Unmet lists the steps of a valid script that a deployment cannot run
// (docs/voicebot.md#spoken-answers): those that listen for speech (a
// speech gather, an agent) when speech is false, a deployment whose calls
// are real and have no recognizer; and agent steps when chat is false,
// no language model configured. Nil when it can run them all.
func (s Script) Unmet(speech, chat bool) Problems {
	var ps Problems
	for i, st := range s.Steps {
		p := Problem{Index: i, Step: st.Name}
		switch {
		case st.Agent != nil && !chat:
			p.Field, p.Reason = "agent", "an agent step needs a language model: set [llm] url"
		case st.Agent != nil && !speech:
			p.Field, p.Reason = "agent", "an agent step hears speech: real calls need a recognizer ([asr] engine)"
		case st.Gather != nil && st.Gather.Speech() && !speech:
			p.Field, p.Reason = "gather.input", "a speech gather needs a recognizer on real calls: set [asr] engine"
		default:
			continue
		}
		ps = append(ps, p)
	}
	return ps
}
