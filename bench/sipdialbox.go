package main

// The SIP phase's dialbox step: dialbox itself places the calls, with
// [dialer] kind = "sip" and one trunk pointing at the sipp callee. The
// contacts go in through operation A, paced at the offered rate, and
// everything dialbox does for a call is measured along with its user
// agent: the scheduler (limits, trunk capacity, the claim commit), the
// prompt from the TTS cache, and the settling commit.

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"dialbox/internal/audio"
)

// dialboxCaller starts dialbox with a SIP trunk to the callee, and places
// the calls through operation A.
func (h *Harness) dialboxCaller() sipStarter {
	return func(trunk string, calls int, rate float64, prompt time.Duration) (*sipCaller, error) {
		dir := filepath.Join(h.scratch, "sip-dialbox-caller")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		// tts.command is split at spaces.
		if strings.ContainsAny(h.self, " \t") {
			return nil, fmt.Errorf("the harness's path %q holds a space: it cannot be dialbox's tts.command", h.self)
		}
		// A hotline carries one call at a time and max_concurrent bounds the
		// scenario: both allow every call at once. The trunk allows every
		// call at once and twice the offered rate, so neither is the limit.
		fixtures := filepath.Join(dir, "fixtures.toml")
		if err := os.WriteFile(fixtures, []byte(fixturesTOML("", calls, calls)), 0o644); err != nil {
			return nil, err
		}
		config := filepath.Join(dir, "config.toml")
		conf := fmt.Sprintf(`[dialer]
kind = "sip"

[sip]
listen = "127.0.0.1:0"
rtp_ports = "20000-40000"

[[sip.trunks]]
name = "bench"
address = %q
max_channels = %d
max_cps = %d

[tts]
engine = "command"
command = %q
cache_dir = %q
`, trunk, calls, int(math.Ceil(2*rate)), h.self+" tts-tone "+prompt.String(), filepath.Join(dir, "tts-cache"))
		if err := os.WriteFile(config, []byte(conf), 0o644); err != nil {
			return nil, err
		}
		db := filepath.Join(dir, "dialbox.db")
		removeDB(db)
		d, err := h.startDialbox("dialbox-sip", db, fixtures, config)
		if err != nil {
			return nil, err
		}
		bound := prompt + time.Duration(float64(calls)/rate*float64(time.Second)) + 90*time.Second
		return &sipCaller{
			pid:   func() int { return d.Cmd.Process.Pid },
			idle:  true,
			place: func() (sipPlaced, error) { return h.placeThroughDialbox(d, calls, rate, bound) },
			stop:  func() { d.Stop(30 * time.Second) },
		}, nil
	}
}

// sipClients is how many operation A requests may be under way at once
// in the SIP phase: at 1500 contacts/s a batch leaves every 20 ms, and a
// durable commit on a busy disk can take several times that.
const sipClients = 8

// placeThroughDialbox sends calls contacts through operation A, in a batch
// every 20 ms at rate contacts/s on up to sipClients connections, and waits
// until as many calls have ended.
func (h *Harness) placeThroughDialbox(d *Dialbox, calls int, rate float64, bound time.Duration) (sipPlaced, error) {
	res := sipPlaced{Calls: calls, Outcomes: map[string]int{}}
	batch := max(1, int(math.Ceil(rate*0.02)))
	type request struct {
		n   int
		req []byte
	}
	var reqs []request
	for left := calls; left > 0; left -= batch {
		n := min(batch, left)
		reqs = append(reqs, request{n, buildRequest("POST", d.Addr, "/api/v1/public-api/scenarios/"+benchScenarioID+"/calls",
			d.Token, contactBodies(n, len(reqs)+1)[len(reqs)])})
	}
	pool := make(chan *clientConn, sipClients)
	for range sipClients {
		c, err := dialClient(d.Addr)
		if err != nil {
			return res, err
		}
		defer c.Close()
		pool <- c
	}
	if h.o.cpuprofile != "" {
		file := filepath.Join(h.o.cpuprofile, "dialbox-sip.pprof")
		if err := d.StartProfile(file); err != nil {
			logf("profile %s: %v", file, err)
		} else {
			defer func() {
				if err := d.StopProfile(); err != nil {
					logf("profile %s: %v", file, err)
					return
				}
				h.profiles = append(h.profiles, file)
				logf("  CPU profile written: %s", file)
			}()
		}
	}

	metrics := buildRequest("GET", d.Addr, "/metrics", "", nil)
	idle, err := dialboxMetrics(d.Addr, metrics)
	if err != nil {
		return res, err
	}

	// Each batch leaves at its time on a free connection, as the clients
	// of an offered rate would, not once the batch before is answered: a
	// commit slowed by a busy disk must not slow the offer, as sipp's
	// offer waits for nothing either.
	began := time.Now()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		sent     int
		firstErr error
	)
	offered := 0
	for _, r := range reqs {
		time.Sleep(time.Until(began.Add(time.Duration(float64(offered) / rate * float64(time.Second)))))
		offered += r.n
		c := <-pool
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, body, _, err := c.Do(r.req)
			n, ok := checkImport(status, body)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				firstErr = cmp.Or(firstErr, fmt.Errorf("operation A: %w", err))
			case !ok:
				firstErr = cmp.Or(firstErr, fmt.Errorf("operation A: HTTP %d %.200s", status, body))
			}
			sent += n
			pool <- c // after body is read: the next Do reuses it
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return res, firstErr
	}
	logf("    operation A took the %d contacts in %s (offered over %s)", sent, time.Since(began).Round(time.Millisecond),
		time.Duration(float64(sent)/rate*float64(time.Second)).Round(time.Millisecond))

	// Counted from /metrics, not from the database: opening it from this
	// process while dialbox ran made dialbox's own reads fail ("database
	// disk image is malformed"): dialbox holds no lock on its -shm file.
	// The goroutines too, every 200 ms while the calls are up (each lasts
	// the prompt, seconds): what the collector scans per call.
	deadline := began.Add(bound)
	most := 0
	for {
		m, err := dialboxMetrics(d.Addr, metrics)
		if err != nil {
			return res, err
		}
		most = max(most, m.goroutines)
		if m.ended >= calls || time.Now().After(deadline) {
			logf("    goroutines: %d before the calls, at most %d during them", idle.goroutines, most)
			res.Outcomes, res.Elapsed, res.Began = m.outcomes, time.Since(began), began
			res.FirstErr = firstWarning(d.Log)
			if m.ended < calls {
				return res, fmt.Errorf("%d of %d calls ended within %s", m.ended, calls, bound)
			}
			return res, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// callMetrics is what the SIP step reads of dialbox's /metrics: the ended
// calls (dialbox_calls_total), by outcome, and go_goroutines.
type callMetrics struct {
	ended      int
	outcomes   map[string]int
	goroutines int
}

func dialboxMetrics(addr string, metrics []byte) (callMetrics, error) {
	m := callMetrics{outcomes: map[string]int{}}
	status, body, err := fetch(addr, metrics)
	if err != nil || status != 200 {
		return m, fmt.Errorf("GET /metrics: HTTP %d %v", status, err)
	}
	for _, l := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(l, "go_goroutines "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return m, fmt.Errorf("GET /metrics: %q", l)
			}
			m.goroutines = n
			continue
		}
		rest, ok := strings.CutPrefix(l, `dialbox_calls_total{outcome="`)
		if !ok {
			continue
		}
		outcome, value, ok := strings.Cut(rest, `"} `)
		n, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if !ok || err != nil {
			return m, fmt.Errorf("GET /metrics: %q", l)
		}
		m.outcomes[outcome] += int(n)
		m.ended += int(n)
	}
	return m, nil
}

// firstWarning is the first warning or error dialbox logged, or "".
func firstWarning(log string) string {
	f, err := os.Open(log)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l := sc.Bytes(); bytes.Contains(l, []byte("level=WARN")) || bytes.Contains(l, []byte("level=ERROR")) {
			return string(l)
		}
	}
	return ""
}

// runTTSTone is the `bench tts-tone DURATION` subcommand, dialbox's TTS
// engine in the SIP phase: it writes DURATION of a 440 Hz tone as an 8 kHz
// WAV to stdout, whatever the text, so every call plays the prompt length
// the phase asks for and no speech engine is needed.
func runTTSTone(args []string, out io.Writer) error {
	if len(args) < 1 {
		return errors.New("usage: bench tts-tone DURATION")
	}
	d, err := time.ParseDuration(args[0])
	if err != nil || d <= 0 || d > time.Hour {
		return fmt.Errorf("duration %q: want a positive duration up to 1h", args[0])
	}
	pcm := tonePCM(d)
	samples, err := audio.DecodePCM16(pcm)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(out)
	if err := audio.EncodeWAV(w, audio.Buffer{Rate: audio.PhoneRate, Samples: samples}); err != nil {
		return err
	}
	return w.Flush()
}
