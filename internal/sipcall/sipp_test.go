package sipcall

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"dialbox/internal/testtool"
)

// Interop with sipp (Debian package sip-tester), a SIP implementation that
// is not diago: sipp answers on 127.0.0.1 as the callee, with the
// scenarios of testdata/sipp, and its own report must say the scenario
// passed.

// sippRun is one sipp process answering one call.
type sippRun struct {
	port   int // SIP, UDP on 127.0.0.1
	screen string
	done   chan struct{}
	err    error // sipp's exit
}

// sippExitBind is sipp's exit status when it cannot bind a socket (-2).
const sippExitBind = 254

// startSippUAS starts sipp as the callee of one call with scenario (a file
// of testdata/sipp), echoing RTP, on free ports of 127.0.0.1. sipp is
// bounded three ways: one call (-m 1), a global timeout, and a kill when the
// test ends.
func startSippUAS(t *testing.T, scenario string) *sippRun {
	t.Helper()
	bin := testtool.Require(t, "sipp", "sip-tester")
	sf, err := filepath.Abs(filepath.Join("..", "..", "testdata", "sipp", scenario))
	if err != nil {
		t.Fatal(err)
	}
	// The free ports found may be taken by the time sipp binds them (tests
	// run in parallel): try again with others.
	for try := 0; ; try++ {
		r := &sippRun{port: freeUDPPorts(t, 1), done: make(chan struct{})}
		rtp := freeUDPPorts(t, 4) // sipp binds the echo port, +1, +2, +3
		dir := t.TempDir()
		r.screen = filepath.Join(dir, "screen.log")
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, bin, "-sf", sf,
			"-i", "127.0.0.1", "-p", strconv.Itoa(r.port),
			"-mi", "127.0.0.1", "-mp", strconv.Itoa(rtp), "-rtp_echo",
			"-m", "1", "-timeout", "30s", "-timeout_error",
			"-nostdin", "-trace_screen", "-screen_file", r.screen,
			"-trace_err", "-error_file", filepath.Join(dir, "errors.log"))
		cmd.Dir = dir // sipp writes its logs into its working folder
		var out testtool.LockedBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			cancel()
			t.Fatal(err)
		}
		go func() {
			r.err = cmd.Wait()
			cancel()
			close(r.done)
		}()
		t.Cleanup(func() { cancel(); <-r.done })

		err := waitUDPBound(r.port, r.done)
		if err == nil {
			return r
		}
		if exitCode(r.err) == sippExitBind && try < 3 {
			continue
		}
		t.Fatalf("sipp did not start: %v (exit: %v)\n%s", err, r.err, out.String())
	}
}

// freeUDPPorts finds n consecutive free UDP ports on 127.0.0.1, the first
// even (sipp's RTP echo port is), and returns the first.
func freeUDPPorts(t *testing.T, n int) int {
	t.Helper()
	for range 100 {
		c, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		first := c.LocalAddr().(*net.UDPAddr).Port &^ 1
		c.Close()
		free := true
		for p := first; p < first+n && free; p++ {
			c, err := net.ListenPacket("udp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if free = err == nil; free {
				c.Close()
			}
		}
		if free && first+n <= 65536 {
			return first
		}
	}
	t.Fatalf("no %d free UDP ports in a row", n)
	return 0
}

// waitUDPBound waits until something is bound to UDP port on 127.0.0.1,
// as /proc/net/udp shows (probing with a bind of our own could take the
// port from under sipp), or the process has ended.
func waitUDPBound(port int, exited <-chan struct{}) error {
	want := fmt.Sprintf("0100007F:%04X", port)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("sipp exited")
		default:
		}
		b, err := os.ReadFile("/proc/net/udp")
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) > 1 && f[1] == want {
				return nil
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("UDP port %d not bound after 20 s", port)
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// report waits for sipp to end, which it does once its one call is over,
// and returns its final statistics screen. It fails the test unless sipp
// says the scenario passed: exit status 0 ("all calls were successful") and
// one successful call, none failed.
func (r *sippRun) report(t *testing.T) string {
	t.Helper()
	<-r.done
	b, _ := os.ReadFile(r.screen)
	screen := string(b)
	if r.err != nil {
		t.Fatalf("sipp: %v (exit status %d), its report:\n%s", r.err, exitCode(r.err), screen)
	}
	if ok, failed := sippCounter(t, screen, "Successful call"), sippCounter(t, screen, "Failed call"); ok != 1 || failed != 0 {
		t.Fatalf("sipp counted %d successful and %d failed calls, want 1 and 0:\n%s", ok, failed, screen)
	}
	return screen
}

// sippCounter reads a cumulative counter of sipp's statistics screen, a
// line such as "  Successful call  |  0  |  1" (periodic, cumulative).
func sippCounter(t *testing.T, screen, name string) int {
	t.Helper()
	var last string
	for _, line := range strings.Split(screen, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), name) {
			last = line
		}
	}
	f := strings.Split(last, "|")
	if len(f) < 3 {
		t.Fatalf("no %q line in sipp's report:\n%s", name, screen)
	}
	n, err := strconv.Atoi(strings.TrimSpace(f[len(f)-1]))
	if err != nil {
		t.Fatalf("sipp's %q line %q: %v", name, last, err)
	}
	return n
}

func sippTrunk(r *sippRun) Trunk {
	return Trunk{Name: "pbx", Address: "127.0.0.1:" + strconv.Itoa(r.port)}
}

func TestSippAnswersAndHearsPrompt(t *testing.T) {
	t.Parallel()
	r := startSippUAS(t, "uas.xml")
	// sipp echoes our RTP back from the address its SDP gave: with a
	// no-RTP timeout shorter than the prompt, the prompt plays to its end
	// only if sipp received our audio all along (a call without the echo
	// ends by no_rtp halfway).
	u := newTestUA(t, sippTrunk(r), func(o *Options) { o.NoRTPTimeout = time.Second })

	res := call(u, testCtx(t), tone(2000), nil)
	checkEnd(t, res, true, EndPromptDone, 200, OutcomeAnswered)
	if res.Err != nil || res.Codec != "PCMU" {
		t.Errorf("err %v (a BYE without its 200 is one), codec %q", res.Err, res.Codec)
	}
	if res.TalkTime < 1900*time.Millisecond {
		t.Errorf("talk %v, want the prompt's 2 s", res.TalkTime)
	}
	// sipp's call ends at our BYE, answered 200; its report says whether
	// every step of the scenario happened.
	r.report(t)
	t.Logf("ring %v, talk %v", res.RingTime, res.TalkTime)
}

func TestSippBusy(t *testing.T) {
	t.Parallel()
	r := startSippUAS(t, "uas_busy.xml")
	u := newTestUA(t, sippTrunk(r), nil)

	res := call(u, testCtx(t), tone(1000), nil)
	checkEnd(t, res, false, EndCallee, 486, OutcomeBusy)
	if res.Err != nil || res.Reason != "Busy Here" {
		t.Errorf("err %v reason %q", res.Err, res.Reason)
	}
	// sipp passes only once it has our ACK of the 486.
	r.report(t)
}
