package dialer

import (
	"cmp"
	"context"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"dialbox/internal/config"
	"dialbox/internal/domain"
	"dialbox/internal/script"
	"dialbox/internal/tts"
)

var builtinRules = []config.SimulatorRule{
	{Number: "+84900000001", Outcome: domain.OutcomeAnswered, RingTime: config.Duration{Duration: 5 * time.Second}, TalkTime: config.Duration{Duration: 30 * time.Second}},
	{Number: "+84900000002", Outcome: domain.OutcomeBusy, RingTime: config.Duration{Duration: time.Second}},
	{Number: "+84900000003", Outcome: domain.OutcomeNoAnswer, RingTime: config.Duration{Duration: 30 * time.Second}},
	{Number: "+84900000004", Outcome: domain.OutcomeFailed, RingTime: config.Duration{Duration: time.Second}},
	{Number: "+84900000005", Outcome: domain.OutcomeRejected, RingTime: config.Duration{Duration: 3 * time.Second}},
	{Number: "+84900000006", Outcome: domain.OutcomeVoiceMail, RingTime: config.Duration{Duration: 20 * time.Second}, TalkTime: config.Duration{Duration: 15 * time.Second}},
	{Number: "+84900000007", Outcome: domain.OutcomeInvalidNumber, RingTime: config.Duration{Duration: 500 * time.Millisecond}},
	// Talks for an hour: shows max_duration cutting a call.
	{Number: "+84900000008", Outcome: domain.OutcomeAnswered, RingTime: config.Duration{Duration: 5 * time.Second}, TalkTime: config.Duration{Duration: time.Hour}},
	// The first run's printed commands call it: answered at once and
	// short, so their results reach the sink within seconds.
	{Number: "+84900000009", Outcome: domain.OutcomeAnswered, RingTime: config.Duration{Duration: time.Second}, TalkTime: config.Duration{Duration: 2 * time.Second}},
	// For scripts (docs/voicebot.md): a person who presses 1 a second
	// after being asked, and a voicemail box.
	{Number: "+84900000010", Outcome: domain.OutcomeAnswered, RingTime: config.Duration{Duration: 2 * time.Second}, TalkTime: config.Duration{Duration: 30 * time.Second}, Digits: "1"},
	{Number: "+84900000011", Outcome: domain.OutcomeVoiceMail, RingTime: config.Duration{Duration: 2 * time.Second}, TalkTime: config.Duration{Duration: 15 * time.Second}, Machine: true},
}

// defaultWeights are the chances of each outcome for numbers no rule
// matches, when simulator.weights is not set.
var defaultWeights = map[string]float64{
	domain.OutcomeAnswered: 60, domain.OutcomeNoAnswer: 15, domain.OutcomeBusy: 10,
	domain.OutcomeVoiceMail: 5, domain.OutcomeRejected: 5, domain.OutcomeFailed: 5,
}

// Sim is the simulated dialer. Its outcome for a number comes from
// the first matching rule, else from chance seeded by (seed, number,
// attempt), so a run does not depend on the order calls happen to start in.
type Sim struct {
	// trunkGate holds the calls to the capacity of sip.trunks when any
	// is configured (HoldTrunks); otherwise calls are unlimited.
	trunkGate
	seed    uint64
	rules   []config.SimulatorRule
	weights []weightedOutcome
	total   float64
	scale   atomic.Uint64 // math.Float64bits of time_scale
	// Chat is the language model of agent steps, set before the first
	// Dial; nil: an agent step fails its script.
	Chat script.Chat
}

type weightedOutcome struct {
	outcome string
	weight  float64
}

// NewSim is the simulator of cfg (simulator.*): its rules before the
// built-in test numbers (docs/calling.md#outcomes-and-test-numbers), its
// weights or the defaults.
func NewSim(cfg config.SimulatorConfig) *Sim {
	d := &Sim{seed: uint64(cfg.Seed), rules: append(append([]config.SimulatorRule(nil), cfg.Rules...), builtinRules...)}
	weights := cfg.Weights
	if len(weights) == 0 {
		weights = defaultWeights
	}
	for o, w := range weights {
		if w > 0 {
			d.weights = append(d.weights, weightedOutcome{o, w})
			d.total += w
		}
	}
	// Map order is random; the seed must give the same outcomes every run.
	sort.Slice(d.weights, func(i, j int) bool { return d.weights[i].outcome < d.weights[j].outcome })
	d.SetTimeScale(cfg.TimeScale)
	d.trunkGate = UnlimitedTrunks{}
	return d
}

// HoldTrunks makes the simulated calls hold the trunks' max_channels and
// max_cps as real calls do (docs/calling.md#trunks-in-simulation), so a
// deployment's trunk limits, on one node or across a cluster's, can be
// tried without a carrier. Called before the first Dial.
func (d *Sim) HoldTrunks(trunks []config.SIPTrunk) {
	if len(trunks) > 0 {
		d.trunkGate = NewTrunkLoads(trunks)
	}
}

// SetTimeScale changes how much faster than real time simulated calls run;
// calls already up keep the scale of their current phase.
func (d *Sim) SetTimeScale(scale float64) {
	if scale <= 0 || math.IsNaN(scale) || math.IsInf(scale, 0) {
		scale = 1
	}
	d.scale.Store(math.Float64bits(scale))
}

// TimeScale is the current time_scale.
func (d *Sim) TimeScale() float64 { return math.Float64frombits(d.scale.Load()) }

// plan is what a simulated call will do, in simulated time.
type plan struct {
	outcome    string
	ring, talk time.Duration
	// The callee of a script, from the matching rule.
	digits              string
	digitsDelay, hangup time.Duration
	says                []string
	saysDelay           time.Duration
}

func (d *Sim) plan(req domain.DialRequest) (p plan) {
	h := fnv.New64a()
	h.Write([]byte(req.To))
	rng := rand.New(rand.NewPCG(d.seed, h.Sum64()^uint64(req.Attempt)*0x9e3779b97f4a7c15))
	outcome := req.Outcome
	var ring, talk time.Duration
	if outcome == "" {
		for _, r := range d.rules {
			if (r.Number != "" && r.Number == req.To) || (r.Suffix != "" && strings.HasSuffix(req.To, r.Suffix)) {
				outcome, ring, talk = r.Outcome, r.RingTime.Duration, r.TalkTime.Duration
				p.digits, p.digitsDelay, p.hangup = r.Digits, r.DigitsDelay.Duration, r.HangupAfter.Duration
				p.says, p.saysDelay = r.Says, r.SaysDelay.Duration
				break
			}
		}
	}
	if outcome == "" {
		outcome = domain.OutcomeAnswered
		x := rng.Float64() * d.total
		for _, w := range d.weights {
			if x < w.weight {
				outcome = w.outcome
				break
			}
			x -= w.weight
		}
	}
	if ring == 0 {
		ring = defaultRing(outcome, rng)
	}
	if talk == 0 && (outcome == domain.OutcomeAnswered || outcome == domain.OutcomeVoiceMail) {
		talk = time.Duration(10+rng.IntN(171)) * time.Second // 10 s to 3 min
	}
	if req.Digits != nil {
		p.digits = *req.Digits
	}
	if req.Says != nil {
		p.says = req.Says
	}
	if outcome != domain.OutcomeAnswered {
		p.digits, p.says = "", nil // only a person presses keys or speaks
	}
	if p.digitsDelay == 0 {
		p.digitsDelay = simDigitsDelay
	}
	if p.saysDelay == 0 {
		p.saysDelay = simSaysDelay
	}
	p.outcome, p.ring, p.talk = outcome, ring, talk
	return p
}

// defaultRing is how long a call rings before it ends or is picked up,
// when no rule says: whole seconds, so recorded times stay round.
func defaultRing(outcome string, rng *rand.Rand) time.Duration {
	switch outcome {
	case domain.OutcomeNoAnswer:
		return 30 * time.Second // the ring timeout
	case domain.OutcomeVoiceMail:
		return 20 * time.Second
	case domain.OutcomeBusy, domain.OutcomeFailed, domain.OutcomeInvalidNumber:
		return time.Second
	}
	return time.Duration(2+rng.IntN(9)) * time.Second
}

// Dial waits out the call's ring and talk, scaled by time_scale. Times
// are req.Start plus the real time waited, so a timeline read from them
// is what really happened.
func (d *Sim) Dial(ctx context.Context, req domain.DialRequest) domain.DialResult {
	p := d.plan(req)
	ring, ok := d.sleep(ctx, p.ring)
	at := req.Start.Add(ring)
	if !ok {
		return domain.DialResult{Outcome: domain.OutcomeCanceled, Cause: domain.OutcomeCause[domain.OutcomeCanceled], EndedAt: at}
	}
	res := domain.DialResult{Outcome: p.outcome, Cause: domain.OutcomeCause[p.outcome], EndedAt: at}
	if p.outcome != domain.OutcomeAnswered && p.outcome != domain.OutcomeVoiceMail {
		return res
	}
	answered := time.Now()
	talk, out, keys := d.talk(ctx, req, p, at, answered)
	waited := time.Since(answered)
	if ctx.Err() != nil {
		return domain.DialResult{Outcome: domain.OutcomeCanceled, Cause: domain.OutcomeCause[domain.OutcomeCanceled], EndedAt: at.Add(waited)}
	}
	res.AnsweredAt, res.EndedAt, res.Talk, res.Script = &at, at.Add(waited), talk, &out
	if req.Record != "" {
		res.Recording, res.RecordingErr = writeSimRecording(req.Record, talk, keys)
	}
	return res
}

// talk runs the call's script on the simulated callee and returns the talk
// time it took, what the script did and the keys pressed. A scenario's
// plain content is said for the whole talk time, as before scripts: its
// one say step lasts talk_time. A script takes as long as its steps (sayLength, simPlayTime,
// the keys and timeouts). Either is cut by hangup_after and max_duration.
func (d *Sim) talk(ctx context.Context, req domain.DialRequest, p plan, at, answered time.Time) (time.Duration, script.Outcome, []simKey) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// A say is as long as what is spoken: its text with the contact's fields.
	sayTime := func(text string) time.Duration { return sayLength(tts.Render(text, req.Fields)) }
	c := &simCall{d: d, cancel: cancel, sayTime: sayTime, keys: p.digits, delay: p.digitsDelay, asked: -1,
		says: p.says, saysDelay: p.saysDelay}
	var s script.Script
	if req.Script != nil {
		s = *req.Script
	} else {
		// The text is not timed here, and a blank one (a scenario emptied
		// after its contacts were queued) must not fail the say.
		s = script.FromContent(cmp.Or(strings.TrimSpace(req.Content), "-"))
		c.sayTime = func(string) time.Duration { return p.talk }
	}
	if p.hangup > 0 {
		c.end, c.endWhy = p.hangup, ErrCalleeHungUp
	}
	if m := req.MaxDuration; m > 0 && (c.end == 0 || m < c.end) {
		c.end, c.endWhy = m, ErrMaxDuration
	}
	run := script.Runner{Now: func() time.Time { return at.Add(time.Since(answered)) }, OptOut: req.OptOut,
		Fill: func(text string) string { return tts.Render(text, req.Fields) }, Chat: d.Chat}
	out := run.Run(ctx, s, c)
	return c.elapsed, out, c.pressed
}

// sleep waits simulated time sim and returns the real time it waited;
// false when ctx ended first.
func (d *Sim) sleep(ctx context.Context, sim time.Duration) (time.Duration, bool) {
	real := time.Duration(float64(sim) / d.TimeScale())
	if real <= 0 {
		return 0, ctx.Err() == nil
	}
	start := time.Now()
	t := time.NewTimer(real)
	defer t.Stop()
	select {
	case <-t.C:
		return real, true
	case <-ctx.Done():
		return time.Since(start), false
	}
}
