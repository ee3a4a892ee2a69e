package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"dialbox/internal/amd"
	"dialbox/internal/script"
	"dialbox/internal/sipcall"
	"dialbox/internal/tts"
)

// causeTTSFailed is the cause of a call not placed because its prompt could
// not be rendered: 500 (Server Internal Error), dialbox's own failure, told
// apart from a trunk's 503.
const causeTTSFailed = 500

// SIPDialer places real calls through the trunks of [sip]: each call's
// prompt is rendered (through a disk cache) before the INVITE goes out, then
// played to whoever answers (docs/calling.md#real-calls-over-sip).
type SIPDialer struct {
	ua          *sipcall.UserAgent
	speech      tts.Engine
	voice       string
	promptsDir  string // the WAV files of scripts' play steps
	ringTimeout time.Duration
	first       string   // name of the trunk "" stands for
	registering []string // trunks with register = true
	log         *slog.Logger

	mu     sync.Mutex
	trunks map[string]*trunkLoad
}

// trunkLoad is a trunk's capacity: calls up against its channels, and the
// last max_cps starts, so that no second ever holds more than max_cps
// starts. A window rather than even spacing lets one scheduler tick start
// a second's worth of calls at once: spaced 1/max_cps apart, a tick (some
// milliseconds of queries and a commit) started one call, and the trunk's
// setup rate was the tick rate, not max_cps.
type trunkLoad struct {
	channels, up int
	starts       []time.Time // ring of the last max_cps starts, oldest at head
	head         int
}

// mayStart reports whether a call may start at now without a second
// holding more than max_cps starts, and if not, how long until it may.
func (t *trunkLoad) mayStart(now time.Time) (bool, time.Duration) {
	if len(t.starts) < cap(t.starts) {
		return true, 0
	}
	if wait := t.starts[t.head].Add(time.Second).Sub(now); wait > 0 {
		return false, wait
	}
	return true, 0
}

func (t *trunkLoad) started(now time.Time) {
	if len(t.starts) < cap(t.starts) {
		t.starts = append(t.starts, now)
		return
	}
	t.starts[t.head] = now
	t.head = (t.head + 1) % len(t.starts)
}

// NewSIPDialer starts dialbox's SIP user agent on sip.listen with the
// trunks and the TTS engine of cfg.
func NewSIPDialer(cfg Config, log *slog.Logger) (*SIPDialer, error) {
	cacheDir := cfg.TTS.CacheDir
	if cacheDir == "" {
		cacheDir = filepath.Join(dataDir(cfg), "tts-cache")
	}
	speech, err := cfg.ttsEngine(cacheDir)
	if err != nil {
		return nil, err
	}
	lo, hi, err := parsePortRange(cfg.SIP.RTPPorts)
	if err != nil {
		return nil, &ConfigError{Key: "sip.rtp_ports", Msg: err.Error()}
	}
	promptsDir := cfg.Voicebot.PromptsDir
	if promptsDir == "" {
		promptsDir = filepath.Join(dataDir(cfg), "prompts")
	}
	d := &SIPDialer{speech: speech, voice: cfg.TTS.Voice, promptsDir: promptsDir, ringTimeout: cfg.SIP.RingTimeout.Duration,
		log: log, trunks: map[string]*trunkLoad{}}
	opts := sipcall.Options{ListenAddr: cfg.SIP.Listen, ExternalIP: cfg.SIP.ExternalIP, RTPPortMin: lo, RTPPortMax: hi,
		Logger: log.With("part", "sip"), OnRegistration: reportRegistration}
	for i, t := range cfg.SIP.Trunks {
		if i == 0 {
			d.first = t.Name
		}
		opts.Trunks = append(opts.Trunks, t.sipcall(cfg.SIP.NumberFormat))
		d.trunks[t.Name] = &trunkLoad{channels: t.MaxChannels, starts: make([]time.Time, 0, t.MaxCPS)}
		if t.Register {
			d.registering = append(d.registering, t.Name)
			sipTrunkRegistered.WithLabelValues(t.Name).Set(0) // until its first REGISTER is accepted
		}
	}
	if d.ua, err = sipcall.New(opts); err != nil {
		d.forgetRegistrations()
		return nil, err
	}
	log.Info("SIP dialer ready", "listen", cfg.SIP.Listen, "trunks", cfg.SIP.Trunks, "tts", speech.Name(), "tts_cache", cacheDir)
	return d, nil
}

func (d *SIPDialer) trunk(name string) string {
	if name == "" {
		return d.first
	}
	return name
}

// Reserve grants calls while the trunk has a free channel and the last
// second holds fewer than max_cps starts.
func (d *SIPDialer) Reserve(trunk string, n int) (int, time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, ok := d.trunks[d.trunk(trunk)]
	if !ok {
		return n, 0 // no such trunk: Dial fails the call and says why
	}
	now := time.Now()
	granted := 0
	for granted < n && t.up < t.channels {
		ok, wait := t.mayStart(now)
		if !ok {
			return granted, wait
		}
		t.started(now)
		t.up++
		granted++
	}
	return granted, 0
}

// TrunkUse is a trunk's calls up against its channels, for the console.
type TrunkUse struct {
	Name         string
	Up, Channels int
}

// TrunkUses lists every trunk's use, in the order of sip.trunks.
func (d *SIPDialer) TrunkUses(names []string) []TrunkUse {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []TrunkUse
	for _, n := range names {
		if t, ok := d.trunks[n]; ok {
			out = append(out, TrunkUse{Name: n, Up: t.up, Channels: t.channels})
		}
	}
	return out
}

// Release frees the channel of a call that ended (or never started).
func (d *SIPDialer) Release(trunk string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t, ok := d.trunks[d.trunk(trunk)]; ok && t.up > 0 {
		t.up--
	}
}

// Dial renders the prompt, then calls req.To through the trunk from the
// hotline, and reports the call on the engine's clock.
func (d *SIPDialer) Dial(ctx context.Context, req DialRequest) DialResult {
	begin := time.Now()
	at := func(t time.Time) time.Time { return req.Start.Add(t.Sub(begin)) }
	if req.Outcome != "" {
		// A fault rule of the sandbox: no call is placed.
		res := DialResult{Outcome: req.Outcome, Cause: outcomeCause[req.Outcome], EndedAt: req.Start}
		if req.Outcome == OutcomeAnswered || req.Outcome == OutcomeVoiceMail {
			res.AnsweredAt = &res.EndedAt
		}
		return res
	}
	trunk := d.trunk(req.Trunk)

	var s script.Script
	if req.Script != nil {
		s = *req.Script
	} else {
		// Rendered before the INVITE goes out, so that a TTS failure
		// places no call.
		text := tts.Render(req.Content, req.Fields)
		if strings.TrimSpace(text) != "" {
			if _, err := d.speech.Synthesize(ctx, text, d.voice); err != nil {
				if ctx.Err() != nil { // dialbox is stopping: nothing was dialled
					return DialResult{Outcome: OutcomeCanceled, Cause: outcomeCause[OutcomeCanceled], EndedAt: at(time.Now())}
				}
				d.log.Warn("sip: the prompt could not be rendered; call not placed", "to", req.To, "trunk", trunk, "err", err)
				return DialResult{Outcome: OutcomeFailed, Cause: causeTTSFailed, EndedAt: at(time.Now())}
			}
			s = script.FromContent(req.Content)
		}
	}

	var out *script.Outcome
	var heard amd.Decision
	talk := func(ctx context.Context, l *sipcall.Line) error {
		if req.AMD {
			var err error
			if heard, err = d.detectMachine(ctx, l); err != nil {
				return nil // the call ended while listening
			}
			if heard == amd.Machine {
				vm, ok := voicemailScript(s)
				if !ok {
					return nil
				}
				s = vm
			}
		}
		if len(s.Steps) == 0 {
			return nil // blank content: nothing to say
		}
		run := script.Runner{Now: func() time.Time { return at(time.Now()) }, OptOut: req.OptOut}
		o := run.Run(ctx, s, &sipScriptCall{d: d, line: l, fields: req.Fields})
		out = &o
		if o.End == script.EndFailed {
			return o.Err
		}
		return nil
	}
	r := d.ua.Call(ctx, sipcall.CallRequest{Trunk: trunk, To: req.To, Caller: req.From, Talk: talk,
		RingTimeout: d.ringTimeout, MaxDuration: req.MaxDuration, Record: req.Record})
	outcome := sipcall.Outcome(r)
	if heard == amd.Machine {
		outcome = OutcomeVoiceMail
	}
	res := DialResult{Outcome: outcome, Cause: r.Status,
		// NOTSURE, or the call ended (or the audio stopped) before AMD decided.
		AMDNotSure: req.AMD && r.Answered && heard != amd.Human && heard != amd.Machine,
		Recording:  r.RecordingSize, RecordingErr: r.RecordingErr}
	if res.Cause == 0 { // no final response: the outcome's usual cause
		res.Cause = outcomeCause[outcome]
	}
	ended := r.EndedAt
	if ended.IsZero() {
		ended = time.Now()
	}
	res.EndedAt = at(ended)
	if r.Answered {
		answered := at(r.AnsweredAt)
		res.AnsweredAt = &answered
		res.Talk = r.TalkTime
		res.Script = out
		if req.MaxDuration > 0 {
			// The BYE at max_duration goes out a moment after it: the
			// moment is not billed.
			res.Talk = min(res.Talk, req.MaxDuration)
		}
	}
	level := slog.LevelDebug
	if r.Err != nil && !r.Answered {
		level = slog.LevelWarn
	}
	d.log.Log(ctx, level, "sip: call ended", "to", req.To, "from", req.From, "trunk", trunk, "call_id", r.CallID,
		"outcome", outcome, "status", r.Status, "ended_by", r.EndedBy, "talk", r.TalkTime, "err", errString(r.Err))
	return res
}

// voicemailScript is s started at its voicemail step, with only the steps
// reachable from there (the runner, like Validate, wants no other); false
// when s has no such step.
func voicemailScript(s script.Script) (script.Script, bool) {
	byName := map[string]script.Step{}
	for _, st := range s.Steps {
		byName[st.Name] = st
	}
	if _, ok := byName[script.VoicemailStep]; !ok {
		return s, false
	}
	vm := script.Script{Start: script.VoicemailStep}
	seen := map[string]bool{}
	todo := []string{script.VoicemailStep}
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		st, ok := byName[name]
		if !ok || seen[name] {
			continue
		}
		seen[name] = true
		vm.Steps = append(vm.Steps, st)
		switch {
		case st.Say != nil:
			todo = append(todo, st.Say.Next)
		case st.Play != nil:
			todo = append(todo, st.Play.Next)
		case st.Set != nil:
			todo = append(todo, st.Set.Next)
		case st.Gather != nil:
			todo = append(todo, st.Gather.NoInput, st.Gather.NoMatch)
			for _, next := range st.Gather.Branches {
				todo = append(todo, next)
			}
		}
	}
	// The steps in the script's order, so that step runs read the same.
	slices.SortStableFunc(vm.Steps, func(a, b script.Step) int {
		return slices.IndexFunc(s.Steps, func(x script.Step) bool { return x.Name == a.Name }) -
			slices.IndexFunc(s.Steps, func(x script.Step) bool { return x.Name == b.Name })
	})
	return vm, true
}

// detectMachine listens to the callee's first seconds with Asterisk's AMD
// rules: Machine, Human, NotSure, or Undecided when too little audio came.
func (d *SIPDialer) detectMachine(ctx context.Context, l *sipcall.Line) (amd.Decision, error) {
	det, err := amd.New(amd.DefaultConfig())
	if err != nil {
		return amd.Undecided, err
	}
	// The detector decides within TotalAnalysisTime of audio; the margin
	// covers a far end that sends less than real time, or nothing.
	limit := det.Config().TotalAnalysisTime + time.Second
	var res amd.Result
	_, err = l.Listen(ctx, limit, func(samples []int16) bool {
		r, ok := det.Feed(samples)
		res = r
		return ok
	})
	if err != nil {
		return amd.Undecided, err
	}
	d.log.Debug("sip: AMD", "decision", res.Decision.String(), "cause", res.Cause, "at", res.At)
	return res.Decision, nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// reportRegistration keeps dialbox_sip_trunk_registered; sipcall logs the
// state and its error.
func reportRegistration(r sipcall.Registration) {
	v := 0.0
	if r.Registered {
		v = 1
	}
	sipTrunkRegistered.WithLabelValues(r.Trunk).Set(v)
}

// forgetRegistrations takes this dialer's trunks out of /metrics.
func (d *SIPDialer) forgetRegistrations() {
	for _, name := range d.registering {
		sipTrunkRegistered.DeleteLabelValues(name)
	}
}

// Close hangs up every call still up (BYE, or CANCEL while ringing),
// removes the trunks' registrations and stops listening.
func (d *SIPDialer) Close() error {
	err := d.ua.Close()
	d.forgetRegistrations()
	if err != nil {
		return fmt.Errorf("sip: %w", err)
	}
	return nil
}
