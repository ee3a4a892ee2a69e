package dialer

import (
	"context"
	"dialbox/internal/config"
	"dialbox/internal/domain"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// fastSim is a simulated dialer whose calls take microseconds.
func fastSim(cfg config.SimulatorConfig) *Sim {
	if cfg.TimeScale == 0 {
		cfg.TimeScale = 1e6
	}
	return NewSim(cfg)
}

// TestSimDialerDemoNumber: the number the first-run block calls is
// answered after 1 s and talks 2 s, whatever the seed or the attempt.
func TestSimDialerDemoNumber(t *testing.T) {
	for _, seed := range []int64{0, 1, 42} {
		d := NewSim(config.SimulatorConfig{Seed: seed, TimeScale: 1})
		for attempt := 1; attempt <= 3; attempt++ {
			if p := d.plan(domain.DialRequest{To: "+84900000009", Attempt: attempt}); p.outcome != domain.OutcomeAnswered || p.ring != time.Second || p.talk != 2*time.Second {
				t.Errorf("seed %d attempt %d: %+v", seed, attempt, p)
			}
		}
	}
}

func TestSimDialerTestNumbers(t *testing.T) {
	d := fastSim(config.SimulatorConfig{Seed: 1})
	want := map[string]string{
		"+84900000001": domain.OutcomeAnswered,
		"+84900000002": domain.OutcomeBusy,
		"+84900000003": domain.OutcomeNoAnswer,
		"+84900000004": domain.OutcomeFailed,
		"+84900000005": domain.OutcomeRejected,
		"+84900000006": domain.OutcomeVoiceMail,
		"+84900000007": domain.OutcomeInvalidNumber,
		"+84900000008": domain.OutcomeAnswered,
		"+84900000010": domain.OutcomeAnswered,
		"+84900000011": domain.OutcomeVoiceMail,
	}
	start := time.Now()
	for number, outcome := range want {
		// Each test number must be one a customer can import.
		if e164, err := domain.NormalizePhone(number[3:], "VN"); err != nil || e164 != number {
			t.Errorf("test number %s does not normalise to itself: %q, %v", number, e164, err)
		}
		for attempt := 1; attempt <= 3; attempt++ {
			res := d.Dial(context.Background(), domain.DialRequest{From: "02873000001", To: number, Attempt: attempt, Start: start, MaxDuration: 5 * time.Minute})
			if res.Outcome != outcome || res.Cause != domain.OutcomeCause[outcome] {
				t.Errorf("%s attempt %d: got %s/%d, want %s/%d", number, attempt, res.Outcome, res.Cause, outcome, domain.OutcomeCause[outcome])
			}
			connected := outcome == domain.OutcomeAnswered || outcome == domain.OutcomeVoiceMail
			if (res.AnsweredAt != nil) != connected {
				t.Errorf("%s: answered_at %v for %s", number, res.AnsweredAt, outcome)
			}
			if res.EndedAt.Before(start) {
				t.Errorf("%s: ended %v before it started %v", number, res.EndedAt, start)
			}
		}
	}
	res := d.Dial(context.Background(), domain.DialRequest{To: "+84900000001", Attempt: 1, Start: start})
	if res.Talk != 30*time.Second {
		t.Errorf("+84900000001 talks %v, want 30s", res.Talk)
	}
	// The long call is cut at max_duration and stays ANSWERED.
	res = d.Dial(context.Background(), domain.DialRequest{To: "+84900000008", Attempt: 1, Start: start, MaxDuration: 90 * time.Second})
	if res.Outcome != domain.OutcomeAnswered || res.Talk != 90*time.Second {
		t.Errorf("+84900000008 with max_duration 90s: %s after %v", res.Outcome, res.Talk)
	}
}

func TestSimDialerRulesFirst(t *testing.T) {
	d := fastSim(config.SimulatorConfig{Seed: 1, Rules: []config.SimulatorRule{
		{Suffix: "99", Outcome: domain.OutcomeRejected},
		{Number: "+84900000001", Outcome: domain.OutcomeBusy}, // overrides a test number
		{Suffix: "9", Outcome: domain.OutcomeAnswered, TalkTime: config.Duration{Duration: 61 * time.Second}},
	}})
	for to, want := range map[string]string{
		"+84912345699": domain.OutcomeRejected, "+84900000001": domain.OutcomeBusy, "+84912345619": domain.OutcomeAnswered,
		"+84900000002": domain.OutcomeBusy,
	} {
		if got := d.Dial(context.Background(), domain.DialRequest{To: to, Attempt: 1, Start: time.Now()}); got.Outcome != want {
			t.Errorf("%s: %s, want %s", to, got.Outcome, want)
		}
	}
	if got := d.Dial(context.Background(), domain.DialRequest{To: "+84912345619", Attempt: 1, Start: time.Now()}); got.Talk != 61*time.Second {
		t.Errorf("rule talk_time: %v", got.Talk)
	}
	// A forced outcome (fault injection) beats every rule.
	if got := d.Dial(context.Background(), domain.DialRequest{To: "+84912345699", Attempt: 1, Start: time.Now(), Outcome: domain.OutcomeFailed}); got.Outcome != domain.OutcomeFailed {
		t.Errorf("forced FAILED: got %s", got.Outcome)
	}
}

func TestSimDialerSeededChance(t *testing.T) {
	phones := make([]string, 2000)
	for i := range phones {
		phones[i] = fmt.Sprintf("+84912%06d", i)
	}
	outcomes := func(seed int64, weights map[string]float64) map[string]int {
		d := fastSim(config.SimulatorConfig{Seed: seed, Weights: weights})
		counts := map[string]int{}
		for _, p := range phones {
			counts[d.plan(domain.DialRequest{To: p, Attempt: 1}).outcome]++
		}
		return counts
	}
	a, b := outcomes(7, nil), outcomes(7, nil)
	for o, n := range a {
		if b[o] != n {
			t.Fatalf("same seed, different outcomes: %v vs %v", a, b)
		}
	}
	// Default weights: 60% answered, give or take.
	if a[domain.OutcomeAnswered] < 1000 || a[domain.OutcomeAnswered] > 1400 || a[domain.OutcomeInvalidNumber] != 0 {
		t.Errorf("default weights gave %v", a)
	}
	if c := outcomes(7, map[string]float64{domain.OutcomeBusy: 1}); c[domain.OutcomeBusy] != len(phones) {
		t.Errorf("only BUSY weighted, got %v", c)
	}
	// The outcome depends on (seed, number, attempt), not on call order.
	d := fastSim(config.SimulatorConfig{Seed: 3})
	p1 := d.plan(domain.DialRequest{To: phones[5], Attempt: 2})
	d.plan(domain.DialRequest{To: phones[6], Attempt: 1})
	if p2 := d.plan(domain.DialRequest{To: phones[5], Attempt: 2}); !reflect.DeepEqual(p1, p2) {
		t.Errorf("plan changed between calls: %+v vs %+v", p1, p2)
	}
}

func TestSimDialerCancelAndTimeScale(t *testing.T) {
	d := NewSim(config.SimulatorConfig{Seed: 1, TimeScale: 1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan domain.DialResult)
	go func() { done <- d.Dial(ctx, domain.DialRequest{To: "+84900000003", Attempt: 1, Start: time.Now()}) }()
	cancel()
	if res := <-done; res.Outcome != domain.OutcomeCanceled || res.Cause != 487 || res.AnsweredAt != nil {
		t.Errorf("cancelled call: %+v", res)
	}
	// SetTimeScale is safe while calls run.
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.SetTimeScale(float64(1000 * (i + 1)))
			d.Dial(context.Background(), domain.DialRequest{To: "+84900000002", Attempt: 1, Start: time.Now()})
		}()
	}
	wg.Wait()
	d.SetTimeScale(-1)
	if d.TimeScale() != 1 {
		t.Errorf("a bad time scale must fall back to 1, got %v", d.TimeScale())
	}
}

func TestSimulatorConfigChecks(t *testing.T) {
	for name, c := range map[string]config.SimulatorConfig{
		"unknown outcome":     {Weights: map[string]float64{"HUNG_UP": 1}},
		"negative weight":     {Weights: map[string]float64{domain.OutcomeBusy: -1}},
		"all zero":            {Weights: map[string]float64{domain.OutcomeBusy: 0}},
		"rule without key":    {Rules: []config.SimulatorRule{{Outcome: domain.OutcomeBusy}}},
		"rule with both":      {Rules: []config.SimulatorRule{{Suffix: "1", Number: "+84900000001", Outcome: domain.OutcomeBusy}}},
		"rule bad outcome":    {Rules: []config.SimulatorRule{{Suffix: "1", Outcome: domain.OutcomeCanceled}}},
		"rule negative ring":  {Rules: []config.SimulatorRule{{Suffix: "1", Outcome: domain.OutcomeBusy, RingTime: config.Duration{Duration: -time.Second}}}},
		"says of a machine":   {Rules: []config.SimulatorRule{{Suffix: "1", Machine: true, Says: []string{"có"}}}},
		"says when busy":      {Rules: []config.SimulatorRule{{Suffix: "1", Outcome: domain.OutcomeBusy, Says: []string{"có"}}}},
		"says too long":       {Rules: []config.SimulatorRule{{Suffix: "1", Outcome: domain.OutcomeAnswered, Says: []string{strings.Repeat("a", 501)}}}},
		"says two lines":      {Rules: []config.SimulatorRule{{Suffix: "1", Outcome: domain.OutcomeAnswered, Says: []string{"có\nkhông"}}}},
		"negative says_delay": {Rules: []config.SimulatorRule{{Suffix: "1", Outcome: domain.OutcomeAnswered, SaysDelay: config.Duration{Duration: -time.Second}}}},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	ok := config.SimulatorConfig{Weights: map[string]float64{domain.OutcomeAnswered: 1}, Rules: []config.SimulatorRule{{Suffix: "1", Outcome: domain.OutcomeBusy},
		{Suffix: "2", Outcome: domain.OutcomeAnswered, Says: []string{"Có, tôi xác nhận", ""}, SaysDelay: config.Duration{Duration: 2 * time.Second}}}}
	if err := ok.Validate(); err != nil {
		t.Errorf("good config refused: %v", err)
	}
}

func TestSimulatorConfigErrorNamesTheLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dialbox.toml")
	os.WriteFile(path, []byte("[simulator]\nseed = 2\n[simulator.weights]\nANSWERED = 1\nHUNG_UP = 2\n"), 0o600)
	_, err := config.LoadConfig(path, nil)
	var ce *config.ConfigError
	if !errors.As(err, &ce) || ce.Line != 5 || ce.Key != "simulator.weights.HUNG_UP" {
		t.Fatalf("got %v, want an error naming line 5 and simulator.weights.HUNG_UP", err)
	}
	os.WriteFile(path, []byte("[simulator]\n[[simulator.rules]]\nsuffix = \"1\"\noutcome = \"ANSWERED\"\n[[simulator.rules]]\noutcome = \"BUSY\"\n"), 0o600)
	if _, err := config.LoadConfig(path, nil); !errors.As(err, &ce) || ce.Line != 5 || ce.Key != "simulator.rules[1]" {
		t.Fatalf("got %v, want an error naming line 5 and simulator.rules[1]", err)
	}
	os.WriteFile(path, []byte("[simulator.weights]\nBUSY = 1\n"), 0o600)
	cfg, err := config.LoadConfig(path, nil)
	if err != nil || len(cfg.Simulator.Weights) != 1 {
		t.Fatalf("a weights table must replace the defaults whole: %v %v", cfg.Simulator.Weights, err)
	}
}

// The simulator holds the trunks of sip.trunks when any is configured, as
// the SIP dialer does ("" the first trunk), and none otherwise.
func TestSimHoldsTrunks(t *testing.T) {
	d := fastSim(config.SimulatorConfig{Seed: 1})
	if name, c := d.Trunk(""); name != "" || c.Limited() {
		t.Fatalf("without sip.trunks the first trunk is %q %+v, want none and no capacity", name, c)
	}
	if n, _ := d.Reserve("", 500); n != 500 {
		t.Fatalf("without sip.trunks reserved %d of 500, want all", n)
	}
	d.HoldTrunks([]config.SIPTrunk{{Name: "main", MaxChannels: 2, MaxCPS: 10}})
	if name, c := d.Trunk(""); name != "main" || c != (domain.TrunkCapacity{Channels: 2, CPS: 10}) {
		t.Fatalf(`with sip.trunks trunk "" is %q %+v, want main with its capacity`, name, c)
	}
	if n, _ := d.Reserve("main", 5); n != 2 {
		t.Fatalf("reserved %d on a trunk of 2 channels, want 2", n)
	}
	d.Release("main")
	if n, _ := d.Reserve("main", 5); n != 1 {
		t.Fatalf("after a call ended reserved %d, want the 1 channel it freed", n)
	}
}
