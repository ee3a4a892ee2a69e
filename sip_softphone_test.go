package main

// docs/sip.md's softphone walk-through, run for real: baresip, configured
// with the page's own files, answers dialbox's call to the demo number and
// hears the prompt, or presses a key a script asks for; the result reaches
// the sink. Only the page's ports are
// swapped (for free ones), and its espeak-ng for the test's TTS engine (a
// tone), so that baresip is the one tool the test needs.

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"dialbox/internal/audio"
	"dialbox/internal/domain"
	"dialbox/internal/testtool"
)

// The page's addresses the test swaps for free ones.
const (
	pageBaresipAddr = "127.0.0.1:5072"
	pageDialboxSIP  = `"127.0.0.1:5070"`
)

var (
	baresipRTPPorts = regexp.MustCompile(`(?m)^rtp_ports\s.*\n`)
	dialboxRTPPorts = regexp.MustCompile(`(?m)^rtp_ports = .*$`)
	printedOpA      = regexp.MustCompile(`curl -s -X POST (\S+/calls) -H 'Authorization: ([^']+)' -H 'Content-Type: application/json' -d '([^']+)'`)
	printedSink     = regexp.MustCompile(`curl -s (\S+/admin/v1/sink) -H 'Authorization: ([^']+)'`)
)

// softphone is the walk-through's two programs running: baresip, with its
// keyboard on keys, and dialbox, with the curl lines its first run printed.
type softphone struct {
	dir       string
	tts       *sipTTS
	phoneOut  *testtool.LockedBuffer
	keys      io.Writer // baresip's standard input, its terminal's keys
	opA, sink []string  // printedOpA's and printedSink's matches
}

// startSoftphone runs steps 1 to 4 of the walk-through: baresip and dialbox
// started with the page's files.
func startSoftphone(t *testing.T) *softphone {
	t.Helper()
	baresip := testtool.Require(t, "baresip", "baresip")
	b, err := os.ReadFile(filepath.Join("docs", "sip.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	dir := t.TempDir()
	for _, d := range []string{"baresip", "heard"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}

	// baresip's files; without rtp_ports it takes any free port.
	phone := testtool.BaresipAddr(t)
	config := swapIn(t, softphoneBlock(t, page, "baresip/config"), pageBaresipAddr, phone)
	writeFileAt(t, filepath.Join(dir, "baresip", "config"), baresipRTPPorts.ReplaceAllString(config, ""))
	writeFileAt(t, filepath.Join(dir, "baresip", "accounts"), softphoneBlock(t, page, "baresip/accounts"))

	// dialbox's file: any free SIP and RTP port, and the test's TTS engine.
	// (diago keeps an RTP range process-wide: a fixed one would outlive
	// this test.)
	tts := newSIPTTS(t)
	toml := swapIn(t, softphoneBlock(t, page, "softphone.toml"), pageBaresipAddr, phone)
	toml = swapIn(t, toml, pageDialboxSIP, `"127.0.0.1:0"`)
	toml = dialboxRTPPorts.ReplaceAllString(toml, `rtp_ports = ""`)
	toml += "\n[tts]\nengine = \"http\"\nurl = \"" + tts.URL + "/tts?voice={voice}&text={text}\"\n"
	cfg := filepath.Join(dir, "softphone.toml")
	writeFileAt(t, cfg, toml)

	// baresip -f baresip, in the folder, as the page runs it; -t ends it
	// even if this test dies before its cleanup.
	sp := &softphone{dir: dir, phoneOut: &testtool.LockedBuffer{}}
	cmd := exec.Command(baresip, "-f", "baresip", "-t", "300")
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, sp.phoneOut, sp.phoneOut
	keys, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	sp.keys = keys
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("baresip's output:\n%s", sp.phoneOut.String())
		}
	})
	waitFor(t, "baresip ready", func() bool {
		select {
		case <-exited:
			t.Fatalf("baresip exited: %s", sp.phoneOut.String())
		default:
		}
		return strings.Contains(sp.phoneOut.String(), "baresip is ready.")
	})

	// ./dialbox serve --config softphone.toml; its first-run block says how
	// to call and where to read the result.
	var printed testtool.LockedBuffer
	m := startMain(t, &printed, []string{"--config", cfg, "--database", filepath.Join(dir, "softphone.db")}, nil, nil)
	t.Cleanup(func() { m.Close() })
	sp.opA = printedOpA.FindStringSubmatch(printed.String())
	sp.sink = printedSink.FindStringSubmatch(printed.String())
	if sp.opA == nil || sp.sink == nil {
		t.Fatalf("the first-run block has no operation A or sink line:\n%s", printed.String())
	}
	sp.tts = tts
	return sp
}

// call runs step 5, the printed operation A line.
func (sp *softphone) call(t *testing.T) {
	t.Helper()
	resp, body, err := request("POST", sp.opA[1], sp.opA[2], sp.opA[3])
	if err != nil || resp.StatusCode != 200 || !strings.Contains(string(body), `"status":1`) {
		t.Fatalf("the printed operation A line: %v %s", err, body)
	}
}

// completed is step 6: the data of the first verified call.completed in
// the sink.
func (sp *softphone) completed(t *testing.T, data any) {
	t.Helper()
	waitFor(t, "the call's result in the sink", func() bool {
		_, body, err := request("GET", sp.sink[1], sp.sink[2], "")
		if err != nil {
			return false
		}
		var got struct {
			Result struct {
				Messages []struct {
					EventType string `json:"event_type"`
					Verified  bool   `json:"verified"`
					Body      struct {
						Data json.RawMessage `json:"data"`
					} `json:"body"`
				} `json:"messages"`
			} `json:"result"`
		}
		json.Unmarshal(body, &got)
		for _, msg := range got.Result.Messages {
			if msg.EventType == "call.completed" && msg.Verified {
				return json.Unmarshal(msg.Body.Data, data) == nil
			}
		}
		return false
	})
}

func TestSIPSoftphoneWalkthrough(t *testing.T) {
	sp := startSoftphone(t)
	tts, dir := sp.tts, sp.dir
	sp.call(t)

	var call struct {
		Outcome    string     `json:"outcome"`
		Cause      int        `json:"cause"`
		Phone      string     `json:"phone"`
		AnsweredAt *time.Time `json:"answered_at"`
		EndedAt    time.Time  `json:"ended_at"`
		Duration   int        `json:"duration"`
		Cost       int        `json:"cost"`
	}
	sp.completed(t, &call)

	// The prompt (0.8 s of tone) was played whole, and the talk billed.
	var talk time.Duration
	if call.AnsweredAt != nil {
		talk = call.EndedAt.Sub(*call.AnsweredAt)
	}
	t.Logf("%s: %s %d, talked %v, billed %d s for %d", call.Phone, call.Outcome, call.Cause, talk, call.Duration, call.Cost)
	if call.Outcome != domain.OutcomeAnswered || call.Cause != 200 || talk < 700*time.Millisecond || call.Duration < 1 || call.Cost <= 0 {
		t.Fatalf("the softphone's call ended %s %d after %v of talk (duration %d, cost %d); want ANSWERED 200, the 0.8 s prompt talked and billed",
			call.Outcome, call.Cause, talk, call.Duration, call.Cost)
	}
	tts.mu.Lock()
	texts := slices.Clone(tts.texts)
	tts.mu.Unlock()
	if want := "Xin chào Anh Nguyen Van A, đây là cuộc gọi nhắc thanh toán."; !slices.Contains(texts, want) {
		t.Errorf("the TTS engine was asked for %q, want the demo content with the contact's fields: %q", texts, want)
	}

	// What baresip heard, which sndfile writes to heard/ as it comes (the
	// data size left 0 until the file is closed): at least half of the tone.
	// Not "terminated" in its output: after a short call baresip sometimes
	// prints that line late, or not at all.
	var heard audio.Buffer
	waitFor(t, "baresip's recording of the 0.8 s prompt", func() bool {
		files, _ := filepath.Glob(filepath.Join(dir, "heard", "*-dec.wav"))
		if len(files) == 0 {
			return false
		}
		data, err := os.ReadFile(files[0])
		if err != nil {
			return false
		}
		heard, err = audio.DecodeWAV(bytes.NewReader(data))
		return err == nil && heard.Rate > 0 && len(heard.Samples) >= heard.Rate*4/10
	})
	t.Logf("baresip heard %.2f s, RMS %.0f", float64(len(heard.Samples))/float64(heard.Rate), rms(heard.Samples))
	if r := rms(heard.Samples); r < 1000 {
		t.Errorf("baresip heard RMS %.0f; want the tone, well above silence", r)
	}
}

// TestSIPSoftphonePressesAKey is step 8: the demo scenario given the
// page's press1.json, a key typed in baresip's terminal during the call
// reaches the gather, whose branch sets the result.
func TestSIPSoftphonePressesAKey(t *testing.T) {
	sp := startSoftphone(t)
	b, err := os.ReadFile(filepath.Join("docs", "sip.md"))
	if err != nil {
		t.Fatal(err)
	}
	script := softphoneBlock(t, string(b), "press1.json")
	admin := strings.Replace(sp.sink[1], "/admin/v1/sink", "/admin/v1/apps/demo-key/scenarios/demo-scenario", 1)
	if resp, body, err := request("PATCH", admin, sp.sink[2], script); err != nil || resp.StatusCode != 200 {
		t.Fatalf("PATCH the page's press1.json: %v %s", err, body)
	}
	sp.call(t)
	waitFor(t, "baresip's call established", func() bool {
		return strings.Contains(sp.phoneOut.String(), "Call established")
	})
	if _, err := io.WriteString(sp.keys, "1"); err != nil {
		t.Fatal(err)
	}
	var call struct {
		Outcome string `json:"outcome"`
		Digits  string `json:"digits"`
		Result  string `json:"result"`
		Steps   []struct {
			Name     string `json:"name"`
			Input    string `json:"input"`
			TimedOut bool   `json:"timed_out"`
		} `json:"steps"`
	}
	sp.completed(t, &call)
	t.Logf("%s, digits %q, result %q, steps %+v", call.Outcome, call.Digits, call.Result, call.Steps)
	if !strings.Contains(sp.phoneOut.String(), "send DTMF digit: '1'") {
		t.Errorf("baresip did not say it sent the key")
	}
	if call.Outcome != domain.OutcomeAnswered || call.Digits != "1" || call.Result != "confirmed" {
		t.Errorf("the call ended %s with digits %q and result %q; want ANSWERED, the key 1 pressed and the result confirmed",
			call.Outcome, call.Digits, call.Result)
	}
}

// softphoneBlock is the fenced block that follows "<!-- softphone: name -->"
// in the page.
func softphoneBlock(t *testing.T, page, name string) string {
	t.Helper()
	_, rest, ok := strings.Cut(page, "<!-- softphone: "+name+" -->\n")
	fence, rest, ok2 := strings.Cut(rest, "\n")
	block, _, ok3 := strings.Cut(rest, "\n```")
	if !ok || !ok2 || !ok3 || !strings.HasPrefix(fence, "```") {
		t.Fatalf("docs/sip.md has no fenced block after <!-- softphone: %s -->", name)
	}
	return block + "\n"
}

// swapIn replaces what the page wrote, which must be there.
func swapIn(t *testing.T, text, old, new string) string {
	t.Helper()
	if !strings.Contains(text, old) {
		t.Fatalf("the walk-through's file no longer holds %s:\n%s", old, text)
	}
	return strings.ReplaceAll(text, old, new)
}

func rms(samples []int16) float64 {
	var sum float64
	for _, s := range samples {
		sum += float64(s) * float64(s)
	}
	return math.Sqrt(sum / float64(max(len(samples), 1)))
}
