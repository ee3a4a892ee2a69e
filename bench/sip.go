package main

// The SIP phase: real calls over loopback, each carrying a prompt as G.711
// RTP, to a sipp callee (testdata/sipp/uas.xml, echoing the audio back as
// a phone's would come back). Three callers place the same calls at the
// same offered rate: sipp itself (testdata/sipp/uac.xml), the machine's
// limit; dialbox's SIP user agent alone (internal/sipcall) in a driver
// process of its own (bench sip-caller); and dialbox itself, its SIP trunk
// pointed at the callee, the contacts sent through operation A
// (sipdialbox.go). All are judged the same way, from a packet capture of
// the callee's SIP port and RTP port (dumpcap, kernel timestamps): calls
// set up per second, calls held at once, the interval between a call's RTP
// packets; and from /proc of the process placing the calls: its CPU and
// memory per call. The targets are judged on dialbox itself; the user
// agent alone shows what the rest of dialbox adds.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/emiago/diago/audio"
)

// sipCaller is what places the calls of a SIP step.
type sipCaller struct {
	// pid is the process placing the calls, its CPU and memory read from
	// /proc; 0 until it runs (sipp's starts calling as it starts).
	pid func() int
	// idle says pid is up and has placed no call yet: its resident memory
	// now is the base that per-call memory is counted from.
	idle bool
	// place places the step's calls and returns once every one has ended.
	place func() (sipPlaced, error)
	stop  func()
}

// sipStarter starts a caller whose calls go to the callee at trunk
// (127.0.0.1:port, UDP): calls calls started at rate per second, each
// playing a prompt of prompt and hanging up after it.
type sipStarter func(trunk string, calls int, rate float64, prompt time.Duration) (*sipCaller, error)

// SIPResult is one SIP step.
type SIPResult struct {
	Key, Label string
	Calls      int     // offered
	Rate       float64 // offered, calls/s
	Placed     sipPlaced
	Wire       sipWire
	CPU        time.Duration // of the calling process during the step
	IdleKB     int64         // its resident memory before the first call; 0 unknown
	PeakKB     int64         // its peak resident memory (VmHWM)
	CalleeOK   int           // calls sipp's callee counted successful
	CalleeBad  int           // and failed
	Skipped    string
	Notes      []string
}

// CPUPerCall is the calling process's CPU time per call offered.
func (r *SIPResult) CPUPerCall() time.Duration {
	return r.CPU / time.Duration(max(r.Calls, 1))
}

// KBPerCall is the calling process's resident memory per call held at
// once, above its idle size; upper says the idle size is unknown and the
// whole peak was divided.
func (r *SIPResult) KBPerCall() (kb float64, upper bool) {
	if r.Wire.PeakHeld == 0 {
		return 0, false
	}
	if r.IdleKB == 0 {
		return float64(r.PeakKB) / float64(r.Wire.PeakHeld), true
	}
	return float64(r.PeakKB-r.IdleKB) / float64(r.Wire.PeakHeld), false
}

// sipPhase measures sipp calling sipp, then dialbox's user agent calling
// sipp, the same calls at the same offered rate.
func (h *Harness) sipPhase() {
	calls, rate, prompt := h.o.sipCalls, h.o.sipRate, h.o.sipPrompt
	sipp, err := aptTool("sipp", "sip-tester")
	var dumpcap string
	if err == nil {
		dumpcap, err = aptTool("dumpcap", "wireshark-common")
	}
	if err != nil {
		h.sipSkip = err.Error()
		logf("sip: skipped: %v", err)
		return
	}
	h.sipVer = strings.TrimSuffix(firstLine(strings.TrimSpace(commandOutput(sipp, "-v"))), ".")
	logf("sip: %d calls at %.0f/s, %s prompt each, to a sipp callee (%s)", calls, rate, prompt, h.sipVer)
	h.sipStep("sip:sipp", "sipp calling sipp (limit)", calls, rate, prompt, sipp, dumpcap, h.sippCaller(sipp))
	h.sipStep("sip:sipcall", "dialbox's SIP user agent alone (internal/sipcall) calling sipp", calls, rate, prompt, sipp, dumpcap, h.driverCaller())
	h.sipStep("sip:dialbox", "dialbox calling sipp (operation A, engine, SIP dialer)", calls, rate, prompt, sipp, dumpcap, h.dialboxCaller())
}

// sipStep runs one caller against a fresh sipp callee under a capture.
func (h *Harness) sipStep(key, label string, calls int, rate float64, prompt time.Duration, sipp, dumpcap string, start sipStarter) *SIPResult {
	r := &SIPResult{Key: key, Label: label, Calls: calls, Rate: rate}
	h.sip = append(h.sip, r)
	logf("  %s", label)
	dir := filepath.Join(h.scratch, strings.ReplaceAll(key, ":", "-"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.Skipped = err.Error()
		return r
	}
	bound := prompt + time.Duration(float64(calls)/rate*float64(time.Second)) + 60*time.Second

	uas, port, echo, err := startSippCallee(sipp, h.repo, dir, calls, bound)
	if err != nil {
		r.Skipped = err.Error()
		return r
	}
	defer uas.Stop(5 * time.Second)
	capture, pcap, err := startCapture(dumpcap, dir, port, echo)
	if err != nil {
		r.Skipped = err.Error()
		return r
	}
	defer capture.Stop(5 * time.Second)
	caller, err := start("127.0.0.1:"+strconv.Itoa(port), calls, rate, prompt)
	if err != nil {
		r.Skipped = err.Error()
		return r
	}
	defer caller.stop()

	// /proc of the calling process, every 100 ms until place returns (sipp
	// exits when its calls are done: its last sample stands).
	var (
		mu           sync.Mutex
		cpu0, cpu    time.Duration = -1, 0
		done                       = make(chan struct{})
		sampled                    = make(chan struct{})
		sampleTicker               = time.NewTicker(100 * time.Millisecond)
	)
	sample := func() {
		pid := caller.pid()
		if pid == 0 {
			return
		}
		c := groupCPU(pid)
		hwm, err := procStatusKB(pid, "VmHWM")
		if err != nil {
			return // ended
		}
		mu.Lock()
		defer mu.Unlock()
		if cpu0 < 0 {
			cpu0 = c
		}
		cpu, r.PeakKB = c, max(r.PeakKB, hwm)
	}
	if caller.idle {
		sample()
		r.IdleKB, _ = procStatusKB(caller.pid(), "VmRSS")
	}
	go func() {
		defer close(sampled)
		defer sampleTicker.Stop()
		for {
			select {
			case <-done:
				sample()
				return
			case <-sampleTicker.C:
				sample()
			}
		}
	}()
	placed, err := caller.place()
	close(done)
	<-sampled
	r.CPU, r.Placed = max(cpu-cpu0, 0), placed
	if err != nil {
		r.Skipped = err.Error()
		return r
	}
	caller.stop()

	// The callee ends after its last call; then the capture holds it all.
	select {
	case <-uas.done:
	case <-time.After(10 * time.Second):
		r.Notes = append(r.Notes, "the sipp callee had not ended 10 s after the last call")
	}
	uas.Stop(5 * time.Second)
	if screen, err := os.ReadFile(filepath.Join(dir, "callee-screen.log")); err == nil {
		r.CalleeOK, r.CalleeBad = sippCounter(string(screen), "Successful call"), sippCounter(string(screen), "Failed call")
	}
	capture.Stop(5 * time.Second)
	if m := dumpcapDrops.FindStringSubmatch(capture.LogTail(5)); m != nil && m[2] != "0" {
		r.Notes = append(r.Notes, fmt.Sprintf("the capture dropped %s of %s packets", m[2], m[1]))
	}
	if r.Wire, err = readCapture(pcap, port, echo); err != nil {
		r.Skipped = "reading the capture: " + err.Error()
		return r
	}
	// End to end: dialbox's window opens with the first contact offered,
	// so the API's commit and the scheduler's first claim count, and a
	// slow first call cannot shorten the window.
	if began := r.Placed.Began; !began.IsZero() && r.Wire.LastAnswer.After(began) {
		r.Wire.SetupRate = float64(r.Wire.Answered) / r.Wire.LastAnswer.Sub(began).Seconds()
	}
	h.logSIP(r)
	return r
}

func (h *Harness) logSIP(r *SIPResult) {
	w := r.Wire
	kb, _ := r.KBPerCall()
	logf("    %d/%d calls answered and ended by BYE/200; %.0f calls/s set up (p50 %s, p99 %s); %d held at once; RTP interval p50 %s p99 %s max %s (%d intervals); CPU %s/call, %.0f kB/call, peak RSS %.1f MB",
		w.Completed, r.Calls, w.SetupRate, lat(w.SetupP50), lat(w.SetupP99), w.PeakHeld, lat(w.RTPP50), lat(w.RTPP99), lat(w.RTPMax), w.RTPIntervals,
		r.CPUPerCall().Round(10*time.Microsecond), kb, float64(r.PeakKB)/1024)
}

// sippBuffer is the socket buffer size sipp is given (-buff_size), as
// dialbox's user agent asks for its own: sipp's default of 64 KB drops
// INVITEs in a burst of set-ups (/proc/net/udp counted 11 to 66 on the
// callee's SIP socket per run), and each costs its call 500 ms of set-up.
const sippBuffer = "4194304"

// startSippCallee starts sipp answering calls calls with uas.xml on free
// loopback ports: its SIP port and its RTP echo port.
func startSippCallee(sipp, repo, dir string, calls int, bound time.Duration) (*Proc, int, int, error) {
	for try := 0; ; try++ {
		port, err := freeUDPPort(1)
		if err != nil {
			return nil, 0, 0, err
		}
		echo, err := freeUDPPort(4) // sipp binds the echo port and the next three
		if err != nil {
			return nil, 0, 0, err
		}
		p, err := StartProc("sipp-callee", filepath.Join(dir, "callee.log"), nil, sipp,
			"-sf", filepath.Join(repo, "testdata", "sipp", "uas.xml"),
			"-i", "127.0.0.1", "-p", strconv.Itoa(port), "-mi", "127.0.0.1", "-mp", strconv.Itoa(echo), "-rtp_echo",
			"-m", strconv.Itoa(calls), "-timeout", strconv.Itoa(int(bound.Seconds()))+"s", "-nostdin",
			"-max_recv_loops", "10000", "-max_sched_loops", "10000", "-buff_size", sippBuffer,
			"-trace_screen", "-screen_file", filepath.Join(dir, "callee-screen.log"))
		if err != nil {
			return nil, 0, 0, err
		}
		err = waitUDPBound(port, p)
		if err == nil {
			return p, port, echo, nil
		}
		p.Stop(time.Second)
		if try == 3 {
			return nil, 0, 0, fmt.Errorf("sipp callee: %v\n%s", err, p.LogTail(10))
		}
	}
}

// freeUDPPort finds n consecutive free UDP ports on 127.0.0.1, the first
// even, and returns the first.
func freeUDPPort(n int) (int, error) {
	listen := func(port int) (net.PacketConn, error) {
		return net.ListenPacket("udp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	}
	for range 100 {
		c, err := listen(0)
		if err != nil {
			return 0, err
		}
		first := c.LocalAddr().(*net.UDPAddr).Port &^ 1
		c.Close()
		free := true
		for p := first; p < first+n && free; p++ {
			c, err := listen(p)
			if free = err == nil; free {
				c.Close()
			}
		}
		if free && first+n <= 65536 {
			return first, nil
		}
	}
	return 0, fmt.Errorf("no %d free UDP ports in a row", n)
}

// waitUDPBound waits until something listens on UDP port of 127.0.0.1, as
// /proc/net/udp shows (a probe binding the port could take it from sipp).
func waitUDPBound(port int, p *Proc) error {
	want := fmt.Sprintf("0100007F:%04X", port)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if p.Exited() {
			return errors.New("exited during start")
		}
		b, err := os.ReadFile("/proc/net/udp")
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[1] == want {
				return nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("UDP port %d not bound after 20 s", port)
}

// sippCounter reads a cumulative counter of sipp's statistics screen, a
// line such as "  Successful call  |  0  |  1" (periodic, cumulative); -1
// when missing.
func sippCounter(screen, name string) int {
	n := -1
	for _, line := range strings.Split(screen, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), name) {
			f := strings.Split(line, "|")
			if v, err := strconv.Atoi(strings.TrimSpace(f[len(f)-1])); err == nil {
				n = v
			}
		}
	}
	return n
}

// sippCaller is the limit: sipp placing the calls with uac.xml, playing
// the prompt with its RTP streamer.
func (h *Harness) sippCaller(sipp string) sipStarter {
	return func(trunk string, calls int, rate float64, prompt time.Duration) (*sipCaller, error) {
		dir := filepath.Join(h.scratch, "sipp-caller")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		// sipp's streamer reads raw mu-law from its working folder.
		pcm := tonePCM(prompt)
		ulaw := make([]byte, len(pcm)/2)
		if _, err := audio.EncodeUlawTo(ulaw, pcm); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, "prompt.ulaw"), ulaw, 0o644); err != nil {
			return nil, err
		}
		echo, err := freeUDPPort(4)
		if err != nil {
			return nil, err
		}
		bound := prompt + time.Duration(float64(calls)/rate*float64(time.Second)) + 60*time.Second
		var (
			mu  sync.Mutex
			pid int
			p   *Proc
		)
		c := &sipCaller{pid: func() int { mu.Lock(); defer mu.Unlock(); return pid }}
		c.place = func() (sipPlaced, error) {
			began := time.Now()
			var err error
			mu.Lock()
			p, err = startProc(dir, nil, "sipp-caller", filepath.Join(dir, "caller.log"), sipp,
				"-sf", filepath.Join(h.repo, "testdata", "sipp", "uac.xml"),
				"-i", "127.0.0.1", "-mi", "127.0.0.1", "-mp", strconv.Itoa(echo),
				"-d", strconv.Itoa(int(prompt.Milliseconds())), "-r", strconv.FormatFloat(rate, 'f', -1, 64), "-rp", "1000",
				"-l", strconv.Itoa(calls), "-m", strconv.Itoa(calls), "-timeout", strconv.Itoa(int(bound.Seconds()))+"s",
				"-nostdin", "-max_recv_loops", "10000", "-max_sched_loops", "10000", "-buff_size", sippBuffer,
				"-trace_screen", "-screen_file", filepath.Join(dir, "caller-screen.log"), trunk)
			if err == nil {
				pid = p.Cmd.Process.Pid
			}
			mu.Unlock()
			if err != nil {
				return sipPlaced{}, err
			}
			<-p.done
			res := sipPlaced{Calls: calls, Elapsed: time.Since(began), Outcomes: map[string]int{}}
			screen, _ := os.ReadFile(filepath.Join(dir, "caller-screen.log"))
			ok, failed := sippCounter(string(screen), "Successful call"), sippCounter(string(screen), "Failed call")
			if ok < 0 {
				return res, fmt.Errorf("sipp caller: no report (%v)\n%s", p.waitErr, p.LogTail(10))
			}
			res.Outcomes["successful"], res.Outcomes["failed"] = ok, failed
			if p.waitErr != nil {
				res.FirstErr = fmt.Sprintf("sipp caller: %v", p.waitErr)
			}
			return res, nil
		}
		c.stop = func() {
			mu.Lock()
			defer mu.Unlock()
			if p != nil {
				p.Stop(5 * time.Second)
			}
		}
		return c, nil
	}
}

// driverCaller is dialbox's SIP user agent in the `bench sip-caller`
// process.
func (h *Harness) driverCaller() sipStarter {
	return func(trunk string, calls int, rate float64, prompt time.Duration) (*sipCaller, error) {
		dir := filepath.Join(h.scratch, "sip-driver")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		out := filepath.Join(dir, "result.json")
		os.Remove(out)
		p, err := StartProc("sip-caller", filepath.Join(dir, "driver.log"), nil, h.self, "sip-caller",
			"-trunk", trunk, "-calls", strconv.Itoa(calls), "-rate", strconv.FormatFloat(rate, 'f', -1, 64),
			"-prompt", prompt.String(), "-rtp", "20000-40000", "-out", out)
		if err != nil {
			return nil, err
		}
		ready := func() error {
			if b, _ := os.ReadFile(p.Log); !bytes.Contains(b, []byte("ready\n")) {
				return errors.New("not ready")
			}
			return nil
		}
		if err := p.WaitReady(30*time.Second, ready); err != nil {
			p.Stop(5 * time.Second)
			return nil, err
		}
		bound := prompt + time.Duration(float64(calls)/rate*float64(time.Second)) + 90*time.Second
		return &sipCaller{
			pid:  func() int { return p.Cmd.Process.Pid },
			idle: true,
			place: func() (sipPlaced, error) {
				var res sipPlaced
				if err := p.Cmd.Process.Signal(syscall.SIGUSR1); err != nil {
					return res, err
				}
				err := p.WaitReady(bound, func() error {
					b, err := os.ReadFile(out)
					if err != nil {
						return err
					}
					return json.Unmarshal(b, &res)
				})
				return res, err
			},
			stop: func() { p.Stop(10 * time.Second) },
		}, nil
	}
}

// startCapture captures the callee's SIP port (both ways) and the RTP
// sent to its echo port, with dumpcap on the loopback interface.
func startCapture(dumpcap, dir string, sipPort, echoPort int) (*Proc, string, error) {
	file := filepath.Join(dir, "callee.pcap")
	p, err := StartProc("dumpcap", filepath.Join(dir, "dumpcap.log"), nil, dumpcap,
		"-i", "lo", "-f", fmt.Sprintf("udp and (port %d or dst port %d)", sipPort, echoPort),
		"-s", "4096", "-B", "64", "-P", "-w", file)
	if err != nil {
		return nil, "", err
	}
	err = p.WaitReady(20*time.Second, func() error {
		if b, _ := os.ReadFile(p.Log); !bytes.Contains(b, []byte("Capturing on")) {
			return errors.New("not capturing yet")
		}
		return nil
	})
	if err != nil {
		p.Stop(5 * time.Second)
		return nil, "", err
	}
	return p, file, nil
}

var dumpcapDrops = regexp.MustCompile(`received/dropped on interface '[^']*': (\d+)/(\d+)`)

// sipWire is what the capture says of a step's calls.
type sipWire struct {
	Invited   int // calls that sent an INVITE
	Answered  int // answered 200
	Completed int // answered, then BYE answered 200
	Refused   int // a final non-2xx answer
	SetupRate float64
	// LastAnswer: the last call's 200 OK, where the setup rate's window ends.
	LastAnswer time.Time
	// SetupP50, SetupP99: from the first INVITE to its 200 OK.
	SetupP50, SetupP99 time.Duration
	PeakHeld           int // calls between their 200 OK and their BYE at once
	// RTP interval: between consecutive packets of one stream (source
	// and SSRC) to the callee; gaps in the sequence are not intervals.
	RTPP50, RTPP99, RTPMax time.Duration
	RTPIntervals           int
	RTPStreams             int
	RTPSeqGaps             int
}

type sipCallTimes struct {
	invite, answer, bye time.Time
	byeOK, refused      bool
}

// readCapture reads a pcap of the callee's SIP and RTP ports.
func readCapture(path string, sipPort, echoPort int) (sipWire, error) {
	var w sipWire
	b, err := os.ReadFile(path)
	if err != nil {
		return w, err
	}
	calls := map[string]*sipCallTimes{}
	type stream struct {
		last time.Time
		seq  uint16
	}
	streams := map[string]*stream{}
	var intervals []time.Duration
	err = eachUDP(b, func(at time.Time, src []byte, sport, dport int, payload []byte) {
		switch {
		case sport == sipPort || dport == sipPort:
			sipPacket(calls, at, payload)
		case dport == echoPort && len(payload) >= 12 && payload[0]>>6 == 2:
			if pt := payload[1] & 0x7f; pt != 0 && pt != 8 {
				return // not G.711 (telephone-event)
			}
			seq := binary.BigEndian.Uint16(payload[2:4])
			key := fmt.Sprintf("%v:%d/%x", src, sport, payload[8:12])
			s := streams[key]
			switch {
			case s == nil:
				streams[key] = &stream{last: at, seq: seq}
				return
			case seq == s.seq:
				return // the same packet seen twice
			case seq != s.seq+1:
				w.RTPSeqGaps++
			default:
				intervals = append(intervals, at.Sub(s.last))
			}
			s.last, s.seq = at, seq
		}
	})
	if err != nil {
		return w, err
	}
	var first, last time.Time
	var setups []time.Duration
	type edge struct {
		at time.Time
		d  int
	}
	var edges []edge
	for _, c := range calls {
		if c.invite.IsZero() {
			continue
		}
		w.Invited++
		if first.IsZero() || c.invite.Before(first) {
			first = c.invite
		}
		if c.refused {
			w.Refused++
		}
		if c.answer.IsZero() {
			continue
		}
		w.Answered++
		if c.answer.After(last) {
			last = c.answer
		}
		setups = append(setups, c.answer.Sub(c.invite))
		edges = append(edges, edge{c.answer, 1})
		if !c.bye.IsZero() {
			edges = append(edges, edge{c.bye, -1})
			if c.byeOK {
				w.Completed++
			}
		}
	}
	if w.Answered > 0 && last.After(first) {
		w.SetupRate = float64(w.Answered) / last.Sub(first).Seconds()
	}
	w.LastAnswer = last
	w.SetupP50, w.SetupP99 = quantile(setups, 0.50), quantile(setups, 0.99)
	slices.SortFunc(edges, func(a, b edge) int { return a.at.Compare(b.at) })
	held := 0
	for _, e := range edges {
		held += e.d
		w.PeakHeld = max(w.PeakHeld, held)
	}
	w.RTPStreams, w.RTPIntervals = len(streams), len(intervals)
	w.RTPP50, w.RTPP99 = quantile(intervals, 0.50), quantile(intervals, 0.99)
	if len(intervals) > 0 {
		w.RTPMax = slices.Max(intervals)
	}
	return w, nil
}

// quantile is the nearest-rank q-quantile of d (sorted in place).
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[max(0, int(math.Ceil(q*float64(len(d))))-1)]
}

// sipPacket records the moments of a call a SIP message marks: its first
// INVITE, the 200 OK to it (or a final refusal), the BYE, the 200 to it.
func sipPacket(calls map[string]*sipCallTimes, at time.Time, msg []byte) {
	head, _, _ := bytes.Cut(msg, []byte("\r\n\r\n"))
	lines := strings.Split(string(head), "\r\n")
	var callID, cseq string
	for _, l := range lines[1:] {
		name, value, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "call-id", "i":
			callID = strings.TrimSpace(value)
		case "cseq":
			f := strings.Fields(value)
			cseq = f[len(f)-1]
		}
	}
	if callID == "" {
		return
	}
	c := calls[callID]
	if c == nil {
		c = &sipCallTimes{}
		calls[callID] = c
	}
	first := lines[0]
	switch {
	case strings.HasPrefix(first, "INVITE ") && c.invite.IsZero():
		c.invite = at
	case strings.HasPrefix(first, "BYE ") && c.bye.IsZero():
		c.bye = at
	case strings.HasPrefix(first, "SIP/2.0 "):
		code, _ := strconv.Atoi(strings.Fields(first)[1])
		switch {
		case cseq == "INVITE" && code >= 200 && code < 300 && c.answer.IsZero():
			c.answer = at
		case cseq == "INVITE" && code >= 300:
			c.refused = true
		case cseq == "BYE" && code == 200:
			c.byeOK = true
		}
	}
}

// eachUDP calls fn for every IPv4 UDP packet of a pcap file (Ethernet or
// Linux cooked link layer), with its capture time.
func eachUDP(b []byte, fn func(at time.Time, src []byte, sport, dport int, payload []byte)) error {
	if len(b) < 24 {
		return errors.New("not a pcap file")
	}
	var bo binary.ByteOrder = binary.LittleEndian
	nanos := false
	switch binary.LittleEndian.Uint32(b) {
	case 0xa1b2c3d4:
	case 0xa1b23c4d:
		nanos = true
	case 0xd4c3b2a1:
		bo = binary.BigEndian
	case 0x4d3cb2a1:
		bo, nanos = binary.BigEndian, true
	default:
		return errors.New("not a pcap file (pcapng? dumpcap needs -P)")
	}
	link := bo.Uint32(b[20:])
	hdr := map[uint32]int{1: 14, 113: 16}[link] // Ethernet, Linux cooked
	if hdr == 0 {
		return fmt.Errorf("pcap link type %d not read", link)
	}
	for off := 24; off+16 <= len(b); {
		sec, frac, n := bo.Uint32(b[off:]), bo.Uint32(b[off+4:]), int(bo.Uint32(b[off+8:]))
		off += 16
		if off+n > len(b) {
			break // cut short by the capture's end
		}
		pkt := b[off : off+n]
		off += n
		if !nanos {
			frac *= 1000
		}
		at := time.Unix(int64(sec), int64(frac))
		if len(pkt) < hdr+28 || binary.BigEndian.Uint16(pkt[hdr-2:]) != 0x0800 {
			continue
		}
		ip := pkt[hdr:]
		ihl := int(ip[0]&0x0f) * 4
		if ip[9] != 17 || len(ip) < ihl+8 {
			continue
		}
		udp := ip[ihl:]
		fn(at, ip[12:16], int(binary.BigEndian.Uint16(udp)), int(binary.BigEndian.Uint16(udp[2:])), udp[8:])
	}
	return nil
}

func commandOutput(bin string, args ...string) string {
	out, _ := exec.Command(bin, args...).CombinedOutput()
	return string(out)
}

// sipSection is the SIP phase's table: each caller's figures, dialbox's
// beside its ratio to sipp's.
func (h *Harness) sipSection(w func(string, ...any)) {
	w("\n### %s\n\n", h.section("SIP calls"))
	if h.sipSkip != "" {
		w("Not run: %s.\n", h.sipSkip)
		return
	}
	if len(h.sip) == 0 {
		return
	}
	r0 := h.sip[0]
	w("Each caller places %d calls, offered at %.0f/s, over UDP on 127.0.0.1 to a fresh sipp callee (%s, `testdata/sipp/uas.xml`: 180, 200 with PCMU/PCMA, its `-rtp_echo` sending every RTP packet back, BYE answered 200). Every call plays a %s prompt as PCMU in 20 ms packets, then hangs up. "+
		"dialbox's own row is dialbox with `[dialer] kind = \"sip\"` and one trunk to the callee (`max_channels` = the calls, `max_cps` = twice the offer, one hotline per call, `max_concurrent` = the calls, a postpaid wallet: none of them the limit), its prompt from a `command` TTS engine (this harness writing a tone) through the TTS cache, the contacts sent through operation A in a batch every 20 ms at the offered rate (each batch at its time on one of %d connections, not after the one before is answered), so its figures hold the public API, the scheduler, the claim and settling commits and the TTS cache on top of the user agent alone. "+
		"Calls, setup times, calls held at once and RTP intervals are read from a packet capture of the callee's SIP port and of the RTP sent to it (dumpcap on `lo`, kernel timestamps), the same way for both callers: setup rate is answered calls over the time from the start of the offer to the last 200 OK: sipp's and the user agent's offer starts with their first INVITE, dialbox's with the first contact sent to operation A, so dialbox's figure holds the API's commit and the scheduler's first claim, and none can exceed the offered rate by more than the last call's setup; held is the most calls between their 200 OK and their BYE at once; an RTP interval is the time between consecutive packets of one stream (sequence gaps excluded). "+
		"CPU and memory are those of the process placing the calls, from /proc: CPU time over the calls offered; resident memory above the process's idle size (before its first call) over the calls held. sipp starts calling as it starts, so its idle size is unknown and its figure is its whole peak over the calls held (an upper bound). "+
		"sipp's caller ignores the echoed audio; dialbox's reads it (it hangs up a call whose far end goes silent).\n\n", r0.Calls, r0.Rate, h.sipVer, h.o.sipPrompt, sipClients)
	w("| Caller | Answered, BYE 200 | Setup rate | Setup p50 / p99 | Held at once | RTP interval p50 / p99 / max | CPU per call | Memory per call | Peak RSS | Compared with |\n")
	w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	lim := h.sipGot("sip:sipp")
	for _, r := range h.sip {
		if r.Skipped != "" {
			w("| %s | - | - | - | - | - | - | - | - | skipped: %s |\n", r.Label, strings.ReplaceAll(firstLine(r.Skipped), "|", "/"))
			continue
		}
		wi := r.Wire
		kb, upper := r.KBPerCall()
		mem := fmt.Sprintf("%.0f kB", kb)
		if upper {
			mem = "≤ " + mem
		}
		var cmp []string
		if r.Key == "sip:sipp" {
			cmp = append(cmp, "limit")
		} else if lim != nil {
			cmp = append(cmp, pct(wi.SetupRate, lim.Wire.SetupRate)+" of sipp's setup rate",
				times(r.CPUPerCall().Seconds(), lim.CPUPerCall().Seconds())+" sipp's CPU per call")
		}
		if ua := h.sipGot("sip:sipcall"); r.Key == "sip:dialbox" && ua != nil {
			cmp = append(cmp, times(r.CPUPerCall().Seconds(), ua.CPUPerCall().Seconds())+" the user agent's alone")
		}
		if bad := r.Calls - wi.Completed; bad > 0 {
			cmp = append(cmp, fmt.Sprintf("**%d calls not completed**", bad))
		}
		if r.Placed.FirstErr != "" {
			cmp = append(cmp, "first error: "+strings.ReplaceAll(firstLine(r.Placed.FirstErr), "|", "/"))
		}
		if wi.RTPSeqGaps > 0 {
			cmp = append(cmp, fmt.Sprintf("%d RTP sequence gaps", wi.RTPSeqGaps))
		}
		cmp = append(cmp, r.Notes...)
		w("| %s | %d of %d | %s calls/s | %s / %s | %d | %s / %s / %s | %s | %s | %.1f MB | %s |\n",
			r.Label, wi.Completed, r.Calls, num(wi.SetupRate), lat(wi.SetupP50), lat(wi.SetupP99), wi.PeakHeld,
			lat(wi.RTPP50), lat(wi.RTPP99), lat(wi.RTPMax), lat(r.CPUPerCall()), mem, float64(r.PeakKB)/1024, strings.Join(cmp, "; "))
	}
	if d := h.sipGot("sip:dialbox"); d != nil && lim != nil && d.Wire.SetupRate >= 0.95*d.Rate && lim.Wire.SetupRate >= 0.95*lim.Rate {
		w("\nsipp and dialbox both kept up with the offered rate: the setup rates are the offer, not a limit (raise `-sip-rate` to find one).\n")
	}
}

// sipGot is a SIP step that was measured, or nil.
func (h *Harness) sipGot(key string) *SIPResult {
	for _, r := range h.sip {
		if r.Key == key && r.Skipped == "" {
			return r
		}
	}
	return nil
}

// sipTargets judges the SIP goals on this run's figures.
func (h *Harness) sipTargets() []string {
	d, lim := h.sipGot("sip:dialbox"), h.sipGot("sip:sipp")
	why := h.sipSkip
	if why == "" {
		why = "a step is missing"
	}
	var out []string
	what := "dialbox's SIP calls set up per second >= 50% of sipp's"
	if d != nil && lim != nil {
		out = append(out, fmt.Sprintf("%s %s: %s calls/s = %s of sipp's %s calls/s (offered %.0f/s)", verdict(d.Wire.SetupRate >= 0.5*lim.Wire.SetupRate),
			what, num(d.Wire.SetupRate), pct(d.Wire.SetupRate, lim.Wire.SetupRate), num(lim.Wire.SetupRate), d.Rate))
	} else {
		out = append(out, fmt.Sprintf("**NOT MEASURED** %s: %s", what, why))
	}
	what = "dialbox's SIP calls held at once >= 500, every one completed"
	if d != nil {
		out = append(out, fmt.Sprintf("%s %s: %d held, %d of %d completed", verdict(d.Wire.PeakHeld >= 500 && d.Wire.Completed == d.Calls),
			what, d.Wire.PeakHeld, d.Wire.Completed, d.Calls))
	} else {
		out = append(out, fmt.Sprintf("**NOT MEASURED** %s: %s", what, why))
	}
	what = "RTP send interval p99 < 40 ms and max < 60 ms (20 ms packets)"
	if d != nil && d.Wire.RTPIntervals > 0 {
		out = append(out, fmt.Sprintf("%s %s: p99 %s, max %s over %s intervals of %d streams, on the wire",
			verdict(d.Wire.RTPP99 < 40*time.Millisecond && d.Wire.RTPMax < 60*time.Millisecond),
			what, lat(d.Wire.RTPP99), lat(d.Wire.RTPMax), num(float64(d.Wire.RTPIntervals)), d.Wire.RTPStreams))
	} else {
		out = append(out, fmt.Sprintf("**NOT MEASURED** %s: %s", what, why))
	}
	return out
}
