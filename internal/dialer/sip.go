package dialer

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"dialbox/internal/amd"
	"dialbox/internal/asr"
	"dialbox/internal/config"
	"dialbox/internal/domain"
	"dialbox/internal/script"
	"dialbox/internal/sipcall"
	"dialbox/internal/tts"
)

// CauseTTSFailed is the cause of a call not placed because its prompt could
// not be rendered: 500 (Server Internal Error), dialbox's own failure, told
// apart from a trunk's 503.
const CauseTTSFailed = 500

// SIP places real calls through the trunks of [sip]: each call's
// prompt is rendered (through a disk cache) before the INVITE goes out, then
// played to whoever answers (docs/calling.md#real-calls-over-sip).
type SIP struct {
	ua          *sipcall.UserAgent
	speech      *tts.Cache     // the engine, behind its cache
	ears        asr.Recognizer // [asr]; nil: no script may listen
	voice       string
	promptsDir  string // the WAV files of scripts' play steps
	ringTimeout time.Duration
	registering []string // trunks with register = true
	// registered is dialbox_sip_trunk_registered, by trunk.
	registered *prometheus.GaugeVec
	log        *slog.Logger
	// Chat is the language model of agent steps, set before the first
	// Dial; nil: an agent step fails its script.
	Chat script.Chat

	// The trunks' capacity for the scheduler (trunks.go): Trunk,
	// Reserve, Release, Unreserve and TrunkUses.
	*TrunkLoads
}

// NewSIP starts dialbox's SIP user agent on sip.listen with the
// trunks and the TTS engine of cfg; dataDir is where the TTS cache and the
// prompts default to (beside the database); registered is where it shows
// whether each trunk's registration holds.
func NewSIP(cfg config.Config, dataDir string, log *slog.Logger, registered *prometheus.GaugeVec) (*SIP, error) {
	cacheDir := cfg.TTS.CacheDir
	if cacheDir == "" {
		cacheDir = filepath.Join(dataDir, "tts-cache")
	}
	speech, err := cfg.TTSEngine(cacheDir)
	if err != nil {
		return nil, err
	}
	ears, err := cfg.Recognizer()
	if err != nil {
		return nil, &config.ConfigError{Key: "asr.engine", Msg: err.Error()}
	}
	lo, hi, err := config.ParsePortRange(cfg.SIP.RTPPorts)
	if err != nil {
		return nil, &config.ConfigError{Key: "sip.rtp_ports", Msg: err.Error()}
	}
	promptsDir := cfg.Voicebot.PromptsDir
	if promptsDir == "" {
		promptsDir = filepath.Join(dataDir, "prompts")
	}
	d := &SIP{speech: speech, ears: ears, voice: cfg.TTS.Voice, promptsDir: promptsDir, ringTimeout: cfg.SIP.RingTimeout.Duration,
		registered: registered, log: log, TrunkLoads: NewTrunkLoads(cfg.SIP.Trunks)}
	opts := sipcall.Options{ListenAddr: cfg.SIP.Listen, ExternalIP: cfg.SIP.ExternalIP, RTPPortMin: lo, RTPPortMax: hi,
		Logger: log.With("part", "sip"), OnRegistration: d.reportRegistration}
	for _, t := range cfg.SIP.Trunks {
		opts.Trunks = append(opts.Trunks, t.SIPCall(cfg.SIP.NumberFormat))
		if t.Register {
			d.registering = append(d.registering, t.Name)
			d.registered.WithLabelValues(t.Name).Set(0) // until its first REGISTER is accepted
		}
	}
	if d.ua, err = sipcall.New(opts); err != nil {
		d.forgetRegistrations()
		return nil, err
	}
	log.Info("SIP dialer ready", "listen", d.ua.ListenAddr(), "trunks", cfg.SIP.Trunks, "tts", speech.Name(), "tts_cache", cacheDir, "asr", recognizerName(ears))
	return d, nil
}

// Dial renders the prompt, then calls req.To through the trunk from the
// hotline, and reports the call on the engine's clock.
func (d *SIP) Dial(ctx context.Context, req domain.DialRequest) domain.DialResult {
	begin := time.Now()
	at := func(t time.Time) time.Time { return req.Start.Add(t.Sub(begin)) }
	if req.Outcome != "" {
		// A fault rule of the sandbox: no call is placed.
		res := domain.DialResult{Outcome: req.Outcome, Cause: domain.OutcomeCause[req.Outcome], EndedAt: req.Start}
		if req.Outcome == domain.OutcomeAnswered || req.Outcome == domain.OutcomeVoiceMail {
			res.AnsweredAt = &res.EndedAt
		}
		return res
	}
	trunk := d.name(req.Trunk)

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
					return domain.DialResult{Outcome: domain.OutcomeCanceled, Cause: domain.OutcomeCause[domain.OutcomeCanceled], EndedAt: at(time.Now())}
				}
				d.log.Warn("sip: the prompt could not be rendered; call not placed", "to", req.To, "trunk", trunk, "err", err)
				return domain.DialResult{Outcome: domain.OutcomeFailed, Cause: CauseTTSFailed, EndedAt: at(time.Now())}
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
		run := script.Runner{Now: func() time.Time { return at(time.Now()) }, OptOut: req.OptOut,
			Fill: func(text string) string { return tts.Render(text, req.Fields) }, Chat: d.Chat}
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
		outcome = domain.OutcomeVoiceMail
	}
	res := domain.DialResult{Outcome: outcome, Cause: r.Status,
		// NOTSURE, or the call ended (or the audio stopped) before AMD decided.
		AMDNotSure: req.AMD && r.Answered && heard != amd.Human && heard != amd.Machine,
		Recording:  r.RecordingSize, RecordingErr: r.RecordingErr}
	if res.Cause == 0 { // no final response: the outcome's usual cause
		res.Cause = domain.OutcomeCause[outcome]
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
func (d *SIP) detectMachine(ctx context.Context, l *sipcall.Line) (amd.Decision, error) {
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

// TTSCache is the TTS engine behind its disk cache, for /metrics to show
// the cache's size.
func (d *SIP) TTSCache() *tts.Cache { return d.speech }

// reportRegistration keeps dialbox_sip_trunk_registered; sipcall logs the
// state and its error.
func (d *SIP) reportRegistration(r sipcall.Registration) {
	v := 0.0
	if r.Registered {
		v = 1
	}
	d.registered.WithLabelValues(r.Trunk).Set(v)
}

// forgetRegistrations takes this dialer's trunks out of /metrics.
func (d *SIP) forgetRegistrations() {
	for _, name := range d.registering {
		d.registered.DeleteLabelValues(name)
	}
}

// Close hangs up every call still up (BYE, or CANCEL while ringing),
// removes the trunks' registrations and stops listening.
func (d *SIP) Close() error {
	err := d.ua.Close()
	d.forgetRegistrations()
	if err != nil {
		return fmt.Errorf("sip: %w", err)
	}
	return nil
}

// recognizerName is what the start's log line says of [asr].
func recognizerName(r asr.Recognizer) string {
	if r == nil {
		return "none"
	}
	return r.Name()
}
