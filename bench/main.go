// Command bench measures dialbox against the machine's limits and against
// the mock servers QA teams use today, in one run, and writes the tables
// into docs/benchmarks.md, between its marker comments (a -cpuprofile run
// writes its own part, where the time goes).
//
//	go run ./bench            # full run (well under 15 minutes on 2 cores)
//	go run ./bench -quick     # smoke run: seconds per step, small sizes, no peers
//
// Everything runs on 127.0.0.1; every load is bounded in time and count;
// every process the harness starts is stopped when it ends, fails or is
// interrupted.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// ackedCounter counts the contacts operation A acknowledged since the
// current dialbox started.
var ackedCounter atomic.Int64

type options struct {
	quick      bool
	dur        time.Duration
	warmup     time.Duration
	maxReqs    int64
	fill1      int64
	fill2      int64
	fillMode   string
	peers      bool
	npmDir     string
	scratch    string
	keep       bool
	out        string
	cpuprofile string
	rev        string
	phases     map[string]bool
	serve      bool
	hookEvents int
	concs      []int
	wrk        bool
	sipCalls   int
	sipRate    float64
	sipPrompt  time.Duration
	dncNumbers int64
	postgres   string
	pgCalls    int
	voiceTurns int
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "sip-caller" {
		if err := runSIPCaller(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "sip-caller:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "tts-tone" {
		if err := runTTSTone(os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "tts-tone:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 2 && os.Args[1] == "bare-server" {
		if err := serveBare(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "bare-server:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	fs.BoolVar(&o.quick, "quick", false, "smoke run: 1 s steps, 200k/500k fills, no peers unless -peers is given")
	fs.DurationVar(&o.dur, "dur", 5*time.Second, "length of each measured step")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "warm-up before each measured step")
	fs.Int64Var(&o.maxReqs, "max-requests", 5_000_000, "most requests one step may send")
	fs.Int64Var(&o.fill1, "fill1", 1_000_000, "first growth size: contacts stored before operation A is measured again")
	fs.Int64Var(&o.fill2, "fill2", 5_000_000, "second growth size")
	fs.StringVar(&o.fillMode, "fill", "sql", `how to pre-fill: "sql" (copy an API-made contact row with SQL, server stopped) or "api" (1000-contact requests of operation A)`)
	fs.BoolVar(&o.peers, "peers", true, "install and measure the peers (WireMock, Prism, Mockoon) with npm")
	fs.StringVar(&o.npmDir, "npm-dir", "", "folder npm installs the peers into (default: <scratch>/npm)")
	fs.StringVar(&o.scratch, "scratch", "", "scratch folder (default: a new temporary folder, removed at the end)")
	fs.BoolVar(&o.keep, "keep", false, "keep the scratch folder (databases, logs, peer configs)")
	fs.StringVar(&o.out, "out", "docs/benchmarks.md", "page the report is written into, between its <!-- bench:begin/end --> markers (<!-- bench:profiles:begin/end --> with -cpuprofile), relative to the repository root (\"-\": none)")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "folder for CPU, block, mutex and heap profiles of dialbox during operation B and A (1, 100, 1000 contacts) at the most clients, its webhook burst and drain, and its SIP calls (builds a profiling copy of dialbox)")
	fs.BoolVar(&traceOn, "trace", false, "with -cpuprofile, also write execution traces (go tool trace; -pprof=syscall shows the time in fsync)")
	fs.StringVar(&o.rev, "rev", "", "build dialbox from this commit (git archive) instead of the working tree")
	fs.IntVar(&o.hookEvents, "webhook-contacts", 5000, "contacts whose calls produce the webhook deliveries measured")
	fs.BoolVar(&o.wrk, "wrk", true, "cross-check the top-concurrency steps of the headline with wrk (installed with apt-get when missing and root)")
	fs.Int64Var(&o.dncNumbers, "dnc-numbers", 10_000_000, "lines of the do-not-call register the dnc phase loads")
	fs.StringVar(&o.postgres, "postgres", "", "PostgreSQL server of the postgres phase, a URL whose user may create databases (default: a throwaway cluster, postgresql installed with apt-get when missing and root)")
	fs.IntVar(&o.pgCalls, "pg-calls", 5000, "contacts the postgres phase's engine runs call, on one node and on three")
	fs.IntVar(&o.voiceTurns, "latency-turns", 50, "turns the latency phase measures, of an agent conversation and of speech gathers each")
	concList := fs.String("clients", "1,16,64", "concurrent clients of each step")
	phaseList := fs.String("phases", "limits,main,peers,growth,webhooks,postgres,sip,console,dnc,latency", "phases to run (peers needs main; console reuses growth's database when it ran)")
	sipOnly := fs.Bool("sip", false, "run only the SIP phase (-phases sip): sipp calling sipp, dialbox's SIP user agent alone calling sipp, then dialbox placing the calls")
	fs.IntVar(&o.sipCalls, "sip-calls", 600, "calls each caller of the SIP phase places")
	fs.Float64Var(&o.sipRate, "sip-rate", 1500, "calls per second offered in the SIP phase (near what sipp sets up on 2 cores: a higher offer overflows the callee's socket)")
	fs.DurationVar(&o.sipPrompt, "sip-prompt", 5*time.Second, "prompt every call of the SIP phase plays before hanging up")
	fs.BoolVar(&o.serve, "serve", false, "only start dialbox with the bench tenant, print its address, token and request files, and wait (to drive it with another load generator)")
	fs.Parse(os.Args[1:])
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.quick {
		if !set["fill1"] {
			o.fill1 = 200_000
		}
		if !set["fill2"] {
			o.fill2 = 500_000
		}
		if !set["dur"] {
			o.dur = time.Second
		}
		if !set["warmup"] {
			o.warmup = 300 * time.Millisecond
		}
		if !set["peers"] {
			o.peers = false
		}
		if !set["webhook-contacts"] {
			o.hookEvents = 1000
		}
		if !set["sip-calls"] {
			o.sipCalls = 100
		}
		if !set["sip-prompt"] {
			o.sipPrompt = 2 * time.Second
		}
		if !set["dnc-numbers"] {
			o.dncNumbers = 200_000
		}
		if !set["pg-calls"] {
			o.pgCalls = 1000
		}
		if !set["latency-turns"] {
			o.voiceTurns = 10
		}
	}
	if *sipOnly {
		*phaseList = "sip"
	}
	if o.voiceTurns < 1 || o.voiceTurns > 1000 {
		fmt.Fprintln(os.Stderr, "bench: -latency-turns must be 1 to 1000")
		os.Exit(2)
	}
	if o.pgCalls < 1 || o.pgCalls > 1_000_000 {
		fmt.Fprintln(os.Stderr, "bench: -pg-calls must be 1 to 1000000")
		os.Exit(2)
	}
	if o.sipCalls < 1 || o.sipCalls > 5000 || o.sipRate <= 0 || o.sipRate > 5000 || o.sipPrompt < 100*time.Millisecond || o.sipPrompt > time.Minute {
		fmt.Fprintln(os.Stderr, "bench: -sip-calls must be 1 to 5000, -sip-rate above 0 and at most 5000, -sip-prompt 100ms to 1m")
		os.Exit(2)
	}
	if o.dncNumbers < 1 || o.dncNumbers > 100_000_000 {
		fmt.Fprintln(os.Stderr, "bench: -dnc-numbers must be 1 to 100,000,000")
		os.Exit(2)
	}
	for _, s := range strings.Split(*concList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 1024 {
			fmt.Fprintln(os.Stderr, "bench: -clients must be a list of numbers from 1 to 1024")
			os.Exit(2)
		}
		o.concs = append(o.concs, n)
	}
	o.phases = map[string]bool{}
	for _, ph := range strings.Split(*phaseList, ",") {
		switch ph = strings.TrimSpace(ph); ph {
		case "limits", "main", "peers", "growth", "webhooks", "postgres", "sip", "console", "dnc", "latency":
			o.phases[ph] = true
		default:
			fmt.Fprintf(os.Stderr, "bench: unknown phase %q (limits, main, peers, growth, webhooks, postgres, sip, console, dnc, latency)\n", ph)
			os.Exit(2)
		}
	}
	if o.fillMode != "sql" && o.fillMode != "api" {
		fmt.Fprintln(os.Stderr, `bench: -fill must be "sql" or "api"`)
		os.Exit(2)
	}

	// Stop every child on an interrupt.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	h := &Harness{o: o, points: map[string]*Point{}}
	go func() {
		if o.serve {
			return // serveOnly handles the interrupt and stops dialbox itself
		}
		s := <-sig
		fmt.Fprintf(os.Stderr, "\nbench: %v: stopping every process started\n", s)
		StopAll()
		h.cleanup()
		os.Exit(130)
	}()
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
				StopAll()
				panic(r)
			}
		}()
		return h.Run()
	}()
	StopAll()
	h.cleanup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// Harness is one benchmark run.
type Harness struct {
	o        options
	commit   string // what is measured, as the report names it
	server   int    // process group of the server under test, for its CPU use
	also     []int  // more process groups whose CPU counts as the server's (other nodes)
	db       int    // a local PostgreSQL's postmaster: its and its backends' CPU count as the server's
	repo     string
	scratch  string
	tempDir  bool
	bin      string // dialbox under test
	self     string // this program, for the bare server
	started  time.Time
	points   map[string]*Point
	order    []string
	notes    []string
	peerSkip map[string]string
	peerVer  []string

	peakRSS      float64 // MB, highest VmHWM seen
	peakRSSWhere string
	acked        int64 // contacts acknowledged by operation A in the main phase
	sizes        []sizeRow
	rawSize      *sizeRow
	webhook      *WebhookResult
	webhookSkip  string
	profiles     []string
	wrkBin       string // wrk for the cross-check, once found
	wrkSkip      string // why there is no cross-check
	sip          []*SIPResult
	sipSkip      string // why the SIP phase did not run
	sipVer       string
	dnc          *DNCResult
	dncSkip      string    // why the do-not-call phase did not run
	pg           *pgServer // the postgres phase's server, once up
	pgSkip       string    // why the postgres phase did not run, or where it stopped
	pgNotes      []string
	pgChecks     []string         // PASS/MISS lines: acknowledged contacts stored
	pgCalls      []*pgCallsResult // the engine on one node and on three

	latency     []latencyResult
	latencySkip string // why the latency phase did not run
}

type sizeRow struct {
	where    string
	contacts int64
	bytes    int64
}

// Point is one measured figure.
type Point struct {
	Key     string
	Label   string
	Conc    int
	Req     float64 // requests/s
	Units   float64 // contacts/s (operation A, decode) or rows/s (raw inserts)
	P50     time.Duration
	P99     time.Duration
	Cores   float64 // CPU the server used during the step, in cores
	Errors  int64
	ErrMsg  string
	Skipped string
}

func (h *Harness) add(p *Point) {
	if _, ok := h.points[p.Key]; !ok {
		h.order = append(h.order, p.Key)
	}
	h.points[p.Key] = p
	h.logPoint(p)
}

func (h *Harness) logPoint(p *Point) {
	if p.Skipped != "" {
		logf("  %-34s skipped: %s", p.Label, p.Skipped)
		return
	}
	extra := ""
	if p.Units > 0 && p.Req > 0 {
		extra = fmt.Sprintf(" %12s units/s", num(p.Units))
	} else if p.Units > 0 {
		extra = fmt.Sprintf(" %12s rows/s", num(p.Units))
	}
	errs := ""
	if p.Errors > 0 {
		errs = fmt.Sprintf("  (%d errors: %.120s)", p.Errors, p.ErrMsg)
	}
	logf("  %-34s %10s req/s%s  p50 %s  p99 %s  server CPU %.2f cores%s", p.Label, num(p.Req), extra, lat(p.P50), lat(p.P99), p.Cores, errs)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func (h *Harness) cleanup() {
	if h.pg != nil {
		h.pg.stop(h.o.keep)
		h.pg = nil
	}
	if h.tempDir && !h.o.keep && h.scratch != "" {
		os.RemoveAll(h.scratch)
	}
}

// findRepo walks up from the working directory to the dialbox module.
func findRepo() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(b), []byte("module dialbox")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run the harness inside the dialbox repository (go run ./bench)")
		}
		dir = parent
	}
}

func (h *Harness) Run() error {
	h.started = time.Now().UTC()
	var err error
	if h.repo, err = findRepo(); err != nil {
		return err
	}
	if h.o.scratch != "" {
		h.scratch = h.o.scratch
		if err := os.MkdirAll(h.scratch, 0o755); err != nil {
			return err
		}
	} else {
		if h.scratch, err = os.MkdirTemp("", "dialbox-bench-"); err != nil {
			return err
		}
		h.tempDir = true
	}
	if h.o.keep {
		logf("scratch folder: %s", h.scratch)
	}
	if h.self, err = os.Executable(); err != nil {
		return err
	}
	// What is measured, fixed now: HEAD may move while the run goes on.
	if h.o.rev != "" {
		out, err := exec.Command("git", "-C", h.repo, "rev-parse", "--verify", h.o.rev+"^{commit}").Output()
		if err != nil {
			return fmt.Errorf("-rev %s: not a commit of %s", h.o.rev, h.repo)
		}
		h.o.rev = strings.TrimSpace(string(out))
	}
	h.commit = gitDescribe(h.repo, h.o.rev)
	logf("building dialbox %s from %s", h.commit, h.repo)
	if h.bin, err = buildDialbox(h.repo, h.scratch, h.o.rev, h.o.cpuprofile != ""); err != nil {
		return err
	}
	if h.o.cpuprofile != "" {
		if h.o.cpuprofile, err = filepath.Abs(h.o.cpuprofile); err != nil {
			return err
		}
		if err := os.MkdirAll(h.o.cpuprofile, 0o755); err != nil {
			return err
		}
	}
	fixtures := filepath.Join(h.scratch, "fixtures.toml")
	if err := os.WriteFile(fixtures, []byte(fixturesTOML("", 2, 2)), 0o644); err != nil {
		return err
	}

	if h.o.serve {
		return h.serveOnly(fixtures)
	}
	if h.o.phases["limits"] {
		if err := h.limits(fixtures); err != nil {
			return err
		}
	}
	var opBBody, opABody []byte
	if h.o.phases["main"] {
		if opBBody, opABody, err = h.mainPhase(fixtures); err != nil {
			return err
		}
	}
	h.peerSkip = map[string]string{}
	switch {
	case h.o.peers && h.o.phases["peers"] && opBBody != nil:
		h.peerPhase(opBBody, opABody)
	default:
		why := "not run (-peers=false or -quick)"
		if h.o.peers && h.o.phases["peers"] {
			why = "not run: the peers answer what dialbox answered in the main phase, which was not run"
		} else if !h.o.phases["peers"] {
			why = "not run (-phases)"
		}
		for _, p := range peers {
			h.peerSkip[p.Name] = why
		}
	}
	if h.o.phases["growth"] {
		if err := h.growth(fixtures); err != nil {
			return err
		}
	}
	if h.o.phases["webhooks"] {
		h.webhookPhase()
	} else {
		h.webhookSkip = "not run (-phases)"
	}
	if h.o.phases["postgres"] {
		h.postgresPhase(fixtures)
	} else {
		h.pgSkip = "not run (-phases)"
	}
	if h.o.phases["sip"] {
		h.sipPhase()
	} else {
		h.sipSkip = "not run (-phases)"
	}
	if h.o.phases["console"] {
		if err := h.consolePhase(fixtures); err != nil {
			return err
		}
	}
	if h.o.phases["dnc"] {
		if err := h.dncPhase(fixtures); err != nil {
			return err
		}
	} else {
		h.dncSkip = "not run (-phases)"
	}
	if h.o.phases["latency"] {
		h.latencyPhase()
	} else {
		h.latencySkip = "not run (-phases)"
	}
	return h.report()
}

// serveOnly starts dialbox with the bench tenant and waits, so the same
// server can be loaded by another load generator.
func (h *Harness) serveOnly(fixtures string) error {
	h.o.keep = true
	d, err := h.startDialbox("dialbox", filepath.Join(h.scratch, "serve.db"), fixtures, "")
	if err != nil {
		return err
	}
	defer d.Stop(30 * time.Second)
	for _, n := range []int{1, 100, 1000} {
		if err := os.WriteFile(filepath.Join(h.scratch, fmt.Sprintf("op-a-%d.json", n)), contactBodies(n, 1)[0], 0o644); err != nil {
			return err
		}
	}
	fmt.Printf(`dialbox (bench tenant) is serving on http://%s
ACCESS_TOKEN: %s
Request bodies of operation A: %s/op-a-{1,100,1000}.json
Operation B:
  curl -s http://%s%s -H 'Authorization: Bearer %s'
Operation A:
  curl -s -X POST http://%s%s -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' --data-binary @%s/op-a-100.json
Log: %s
Stop with Ctrl-C.
`, d.Addr, d.Token, h.scratch, d.Addr, pathB, d.Token, d.Addr, pathA, d.Token, h.scratch, d.Log)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case <-sig:
	case <-d.done:
		return fmt.Errorf("dialbox exited: %v", d.waitErr)
	}
	return nil
}

// step runs one measured load step, with a warm-up first.
func (h *Harness) step(key, label string, t Target, conc int, during func() func()) *Point {
	return h.stepFor(h.o.dur, key, label, t, conc, during)
}

// stepFor is step with its own length: steps of 1000-contact requests run
// twice as long, so a step holds several rounds of 64 such requests.
func (h *Harness) stepFor(dur time.Duration, key, label string, t Target, conc int, during func() func()) *Point {
	if h.o.warmup > 0 {
		Run(t, conc, h.o.warmup, h.o.maxReqs)
	}
	var after func()
	if during != nil {
		after = during()
	}
	p := h.measure(key, label, conc, func() (Result, error) { return Run(t, conc, dur, h.o.maxReqs) })
	if after != nil {
		after()
	}
	h.add(p)
	return p
}

// measure runs one load and makes its point, with the CPU the server used
// meanwhile.
func (h *Harness) measure(key, label string, conc int, load func() (Result, error)) *Point {
	cpu0 := h.serverCPU()
	r, err := load()
	cpu := h.serverCPU() - cpu0
	p := &Point{Key: key, Label: label, Conc: conc}
	if err != nil {
		p.Skipped = err.Error()
		return p
	}
	p.Req, p.Units, p.P50, p.P99, p.Errors, p.ErrMsg = r.ReqPerSec(), r.UnitPerSec(), r.P50, r.P99, r.Errors, r.ErrMsg
	if h.server > 0 || len(h.also) > 0 || h.db > 0 {
		p.Cores = cpu.Seconds() / r.Elapsed.Seconds()
	}
	return p
}

// serverCPU is the CPU time used so far by the server under test and the
// groups counted with it.
func (h *Harness) serverCPU() time.Duration {
	var t time.Duration
	for _, g := range append([]int{h.server}, h.also...) {
		if g > 0 {
			t += groupCPU(g)
		}
	}
	if h.db > 0 {
		t += treeCPU(h.db)
	}
	return t
}

// limits measures the bare net/http server and raw SQLite inserts.
func (h *Harness) limits(fixtures string) error {
	logf("limits: bare net/http")
	port, err := freePort()
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	bare, err := StartProc("bare-server", filepath.Join(h.scratch, "bare-server.log"), nil, h.self, "bare-server", addr)
	if err != nil {
		return err
	}
	h.server = bare.Cmd.Process.Pid
	small := buildRequest("GET", addr, "/small", "", nil)
	if err := bare.WaitReady(30*time.Second, func() error { return probeHTTP(addr, small, 200) }); err != nil {
		bare.Stop(5 * time.Second)
		return err
	}
	decodeBodies := contactBodies(100, 8)
	decodeReqs := make([][]byte, len(decodeBodies))
	for i, b := range decodeBodies {
		decodeReqs[i] = buildRequest("POST", addr, "/decode", "", b)
	}
	countDecoded := func(status int, body []byte) (int, bool) {
		if status != 200 {
			return 0, false
		}
		n, err := strconv.Atoi(string(bytes.TrimSuffix(bytes.TrimPrefix(body, []byte(`{"status":1,"count":`)), []byte("}"))))
		return n, err == nil
	}
	for _, c := range h.o.concs {
		p := h.step(fmt.Sprintf("bare@%d", c), fmt.Sprintf("bare net/http, small JSON @%d", c),
			Target{Addr: addr, Reqs: [][]byte{small}, Check: func(s int, _ []byte) (int, bool) { return 0, s == 200 }}, c, nil)
		p.Units = 0
		h.crossCheck(p.Key, p.Label, wrkRequest{addr: addr, method: "GET", path: "/small"}, c)
	}
	for _, c := range h.o.concs {
		h.step(fmt.Sprintf("decode@%d", c), fmt.Sprintf("bare net/http, decode 100 contacts @%d", c),
			Target{Addr: addr, Reqs: decodeReqs, Check: countDecoded}, c, nil)
	}
	bare.Stop(5 * time.Second)

	logf("limits: raw SQLite inserts into dialbox's schema")
	rawDB := filepath.Join(h.scratch, "raw.db")
	d, err := StartDialbox(h.bin, "dialbox-schema", h.scratch, rawDB, fixtures, "", "")
	if err != nil {
		return fmt.Errorf("starting dialbox to make an empty database: %w", err)
	}
	d.Stop(15 * time.Second)
	appID, err := appIDOf(rawDB)
	if err != nil {
		return err
	}
	// The sequential phones go into an empty copy of their own, as the
	// only rows their index holds.
	seqDB := filepath.Join(h.scratch, "raw-sequential.db")
	if err := copyDB(rawDB, seqDB); err != nil {
		return err
	}
	defer removeDB(seqDB)
	bareDB := filepath.Join(h.scratch, "raw-bare.db")
	if err := createBareContacts(bareDB); err != nil {
		return err
	}
	defer removeDB(bareDB)
	same, err := opARows()
	if err != nil {
		return err
	}
	opA := func(i int64) rawRow { return same[i%int64(len(same))] }
	for _, m := range []struct {
		key, label string
		db         string
		batch      int
		row        func(int64) rawRow
	}{
		{"raw100", "raw SQLite inserts of op A's rows, 100 rows/commit (best of 2)", rawDB, 100, opA},
		{"raw1000", "raw SQLite inserts of op A's rows, 1000 rows/commit (best of 2)", rawDB, 1000, opA},
		{"rawseq1000", "raw SQLite inserts of ascending phones, 1000 rows/commit (best of 2)", seqDB, 1000, sequentialRow},
		{"rawbare1000", "raw SQLite inserts of op A's rows into a bare one-index table, 1000 rows/commit (best of 2)", bareDB, 1000, opA},
	} {
		h.server = 0
		// The best of two runs: a moment of load from elsewhere on the
		// machine must not lower the limit dialbox is compared with.
		p := &Point{Key: m.key, Label: m.label, Conc: 1}
		for try := 0; try < 2; try++ {
			r, err := rawInserts(m.db, appID, benchScenarioID, m.batch, h.o.dur, h.o.maxReqs*100, m.row)
			if err != nil {
				p.Skipped = err.Error()
				break
			}
			p.Units = max(p.Units, r.RowsPerSec())
		}
		h.add(p)
	}
	if rows, err := countContacts(rawDB); err == nil && rows > 0 {
		h.rawSize = &sizeRow{"raw inserts", rows, dbFilesSize(rawDB)}
	}
	if !h.o.keep {
		removeDB(rawDB)
	}
	return nil
}

func appIDOf(dbPath string) (int64, error) {
	db, err := openDB(dbPath)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var id int64
	err = db.QueryRow(`SELECT id FROM applications WHERE api_key = ?`, benchAPIKey).Scan(&id)
	return id, err
}

// fetch sends one request and returns a copy of the response body.
func fetch(addr string, req []byte) (int, []byte, error) {
	c, err := dialClient(addr)
	if err != nil {
		return 0, nil, err
	}
	defer c.Close()
	status, body, _, err := c.Do(req)
	return status, bytes.Clone(body), err
}

// mainPhase measures operations B and A on a fresh database. It returns
// dialbox's own answers to operation B and to a one-contact operation A,
// which the peers are configured to answer.
func (h *Harness) mainPhase(fixtures string) (opB, opA []byte, err error) {
	logf("dialbox: operations B and A on a fresh database")
	db := filepath.Join(h.scratch, "main.db")
	d, err := h.startDialbox("dialbox", db, fixtures, "")
	if err != nil {
		return nil, nil, err
	}
	defer d.Stop(30 * time.Second)
	status, opB, err := fetch(d.Addr, d.opB())
	if err != nil || status != 200 {
		return nil, nil, fmt.Errorf("operation B: HTTP %d %s %v", status, opB, err)
	}
	a1 := d.opA(1)
	status, opA, err = fetch(d.Addr, a1[0])
	if err != nil || status != 200 {
		return nil, nil, fmt.Errorf("operation A: HTTP %d %s %v", status, opA, err)
	}
	h.acked++

	tB := Target{Addr: d.Addr, Reqs: [][]byte{d.opB()}, Check: checkOK}
	for _, c := range h.o.concs {
		h.step(fmt.Sprintf("B@%d", c), fmt.Sprintf("op B, list scenarios @%d", c), tB, c, h.profileAt(d, c, "opB"))
		h.points[fmt.Sprintf("B@%d", c)].Units = 0
		h.crossCheck(fmt.Sprintf("B@%d", c), fmt.Sprintf("op B, list scenarios @%d", c),
			wrkRequest{addr: d.Addr, method: "GET", path: pathB, token: d.Token}, c)
	}
	for _, n := range []int{1, 100, 1000} {
		t := Target{Addr: d.Addr, Reqs: d.opA(n), Check: h.countAcked(checkImport)}
		for _, c := range h.o.concs {
			prof := h.profileAt(d, c, fmt.Sprintf("opA%d", n))
			key, label, dur := fmt.Sprintf("A%d@%d", n, c), fmt.Sprintf("op A, %s/request @%d", contactsWord(n), c), h.o.dur*time.Duration(1+n/1000)
			// At the most clients, 100 and 1,000 a request are held to raw
			// inserts, the better of two runs: they keep their better too.
			twice := n >= 100 && c == h.o.concs[len(h.o.concs)-1]
			if twice {
				label += " (best of 2)"
			}
			first := h.stepFor(dur, key, label, t, c, prof)
			if twice {
				if second := h.stepFor(dur, key, label, t, c, nil); second.Units < first.Units {
					h.points[key] = first
				}
			}
			if n == 1 {
				h.crossCheck(fmt.Sprintf("A1@%d", c), fmt.Sprintf("op A, 1 contact/request @%d", c),
					wrkRequest{addr: d.Addr, method: "POST", path: pathA, token: d.Token, body: contactBodies(1, 1)[0]}, c)
			}
		}
	}
	h.acked += ackedCounter.Load()
	h.notePeak(d, "operation A and B steps on a fresh database")
	if err := d.Stop(30 * time.Second); err != nil {
		h.notes = append(h.notes, "dialbox did not stop cleanly after the main phase: "+err.Error())
	}
	stored, err := countContacts(db)
	if err != nil {
		return nil, nil, err
	}
	if stored < h.acked {
		h.notes = append(h.notes, fmt.Sprintf("DURABILITY: %s contacts were acknowledged but only %s are stored", num(float64(h.acked)), num(float64(stored))))
	} else {
		h.notes = append(h.notes, fmt.Sprintf("Durability check: every one of the %s contacts acknowledged by operation A is in the database after the server stopped (%s stored).", num(float64(h.acked)), num(float64(stored))))
	}
	h.sizes = append(h.sizes, sizeRow{"after the operation A steps", stored, dbFilesSize(db)})
	if !h.o.keep {
		removeDB(db)
	}
	return opB, opA, nil
}

// countAcked wraps a check so every contact acknowledged is counted for the
// durability check (warm-ups included).
func (h *Harness) countAcked(check func(int, []byte) (int, bool)) func(int, []byte) (int, bool) {
	return func(status int, body []byte) (int, bool) {
		n, ok := check(status, body)
		if ok {
			ackedCounter.Add(int64(n))
		}
		return n, ok
	}
}

// startBase starts dialbox on a base database, the one whose contact
// stored through operation A the SQL fill copies: with the engine off, so
// that contact stays queued as operation A left it. A call placed on it
// (the bench's scenario dials all day) would have been copied with it and
// would clash with the calls the console phase adds.
func (h *Harness) startBase(name, db, fixtures string) (*Dialbox, error) {
	config := filepath.Join(h.scratch, "config-base.toml")
	if err := os.WriteFile(config, []byte("[engine]\nenabled = false\n[limits]\nmax_queued_contacts = 0\n"), 0o644); err != nil {
		return nil, err
	}
	return h.startDialbox(name, db, fixtures, config)
}

func (h *Harness) startDialbox(name, db, fixtures, config string) (*Dialbox, error) {
	bin, profDir := h.bin, ""
	if h.o.cpuprofile != "" {
		profDir = filepath.Join(h.scratch, "prof-signal")
		if err := os.MkdirAll(profDir, 0o755); err != nil {
			return nil, err
		}
	}
	d, err := StartDialbox(bin, name, h.scratch, db, fixtures, config, profDir)
	if err != nil {
		return nil, err
	}
	h.server = d.Cmd.Process.Pid
	ackedCounter.Store(0)
	return d, nil
}

// profileAt returns, for the 64-client step when profiling, a hook that
// profiles the measured part of the step.
func (h *Harness) profileAt(d *Dialbox, conc int, name string) func() func() {
	if h.o.cpuprofile == "" || conc != h.o.concs[len(h.o.concs)-1] {
		return nil
	}
	return func() func() { return h.profile(d, fmt.Sprintf("dialbox-%s-%d", name, conc)) }
}

// profile starts profiling d into -cpuprofile's <name>.pprof (and its
// block, mutex and heap profiles) and returns what stops it; nil when not
// profiling or it could not start.
func (h *Harness) profile(d *Dialbox, name string) func() {
	if h.o.cpuprofile == "" {
		return nil
	}
	file := filepath.Join(h.o.cpuprofile, name+".pprof")
	if err := d.StartProfile(file); err != nil {
		logf("profile %s: %v", file, err)
		return nil
	}
	return func() {
		if err := d.StopProfile(); err != nil {
			logf("profile %s: %v", file, err)
			return
		}
		h.profiles = append(h.profiles, file)
		logf("  CPU profile written: %s", file)
	}
}

func (h *Harness) notePeak(d *Dialbox, where string) {
	mb := d.PeakRSSMB()
	logf("  dialbox peak resident memory (VmHWM): %.1f MB", mb)
	if mb > h.peakRSS {
		h.peakRSS, h.peakRSSWhere = mb, where
	}
}

// peerPhase installs and measures the peers.
func (h *Harness) peerPhase(opB, opA []byte) {
	npmDir := h.o.npmDir
	if npmDir == "" {
		npmDir = filepath.Join(h.scratch, "npm")
	}
	if err := os.MkdirAll(npmDir, 0o755); err != nil {
		h.peerSkip = map[string]string{}
		for _, p := range peers {
			h.peerSkip[p.Name] = err.Error()
		}
		return
	}
	logf("peers: npm install into %s", npmDir)
	h.peerSkip = installPeers(npmDir)
	token, _ := benchToken()
	for _, p := range peers {
		h.peerVer = append(h.peerVer, p.Package)
		if why := h.peerSkip[p.Name]; why != "" {
			logf("peer %s skipped: %s", p.Name, why)
			continue
		}
		logf("peer %s", p.Name)
		proc, addr, err := StartPeer(p, npmDir, h.scratch, token, opB, opA)
		if err != nil {
			h.peerSkip[p.Name] = "cannot be started: " + firstLine(err.Error())
			logf("peer %s skipped: %v", p.Name, err)
			continue
		}
		h.server = proc.Cmd.Process.Pid
		tB := Target{Addr: addr, Reqs: [][]byte{buildRequest("GET", addr, pathB, token, nil)}, Check: checkOK}
		a1 := contactBodies(1, 8)
		reqsA := make([][]byte, len(a1))
		for i, b := range a1 {
			reqsA[i] = buildRequest("POST", addr, pathA, token, b)
		}
		tA := Target{Addr: addr, Reqs: reqsA, Check: checkImport}
		// The JVM and V8 need a longer warm-up than one step's: WireMock
		// still gains half again between 3 and 10 seconds of load.
		Run(tB, 64, 5*h.o.warmup, h.o.maxReqs)
		Run(tA, 64, 5*h.o.warmup, h.o.maxReqs)
		for _, c := range h.o.concs {
			pt := h.step(fmt.Sprintf("peer:%s:B@%d", p.Name, c), fmt.Sprintf("%s, op B @%d", p.Name, c), tB, c, nil)
			pt.Units = 0
			h.crossCheck(pt.Key, pt.Label, wrkRequest{addr: addr, method: "GET", path: pathB, token: token}, c)
		}
		for _, c := range h.o.concs {
			pt := h.step(fmt.Sprintf("peer:%s:A1@%d", p.Name, c), fmt.Sprintf("%s, op A 1 contact @%d", p.Name, c), tA, c, nil)
			pt.Units = 0 // a peer stores nothing
			h.crossCheck(pt.Key, pt.Label, wrkRequest{addr: addr, method: "POST", path: pathA, token: token, body: a1[0]}, c)
		}
		if err := proc.Stop(15 * time.Second); err != nil {
			logf("peer %s: %v", p.Name, err)
		}
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// growth measures operation A on a fresh database, then on a database
// filled to each growth size. The filled database itself is never
// measured: each size is measured on a copy, so the contacts the steps add
// (a million or more at full speed) do not change the sizes.
func (h *Harness) growth(fixtures string) error {
	top := h.o.concs[len(h.o.concs)-1]
	// dialbox bounds a tenant's queued contacts (limits.max_queued_contacts,
	// 10 million by default); growth sizes near it run without the bound.
	config := ""
	if max(h.o.fill1, h.o.fill2) > 8_000_000 {
		config = filepath.Join(h.scratch, "config-growth.toml")
		if err := os.WriteFile(config, []byte("[limits]\nmax_queued_contacts = 0\n"), 0o644); err != nil {
			return err
		}
		h.notes = append(h.notes, "The growth steps ran with limits.max_queued_contacts = 0 (no bound): the sizes asked for come near its default of 10 million.")
	}

	logf("growth: operation A on a fresh database")
	fresh := filepath.Join(h.scratch, "growth-fresh.db")
	if err := h.growthSteps("g0", "fresh database", fresh, fixtures, config, top); err != nil {
		return err
	}
	removeDB(fresh)

	// The base: dialbox's schema and tenant, and one contact stored through
	// operation A for the SQL fill to copy.
	base := filepath.Join(h.scratch, "growth.db")
	d, err := h.startBase("dialbox-growth-base", base, fixtures)
	if err != nil {
		return err
	}
	if status, body, err := fetch(d.Addr, d.opA(1)[0]); err != nil || status != 200 {
		d.Stop(30 * time.Second)
		return fmt.Errorf("growth: operation A: HTTP %d %.200s %v", status, body, err)
	}
	d.Stop(30 * time.Second)
	filled := int64(0)
	for i, size := range []int64{h.o.fill1, h.o.fill2} {
		if size <= 0 {
			continue
		}
		stored, err := countContacts(base)
		if err != nil {
			return err
		}
		if size > stored {
			logf("growth: filling to %s contacts (%s mode)", num(float64(size)), h.o.fillMode)
			var took time.Duration
			if h.o.fillMode == "sql" {
				took, err = sqlFill(base, filled, size-stored)
				filled += size - stored
			} else {
				took, err = h.apiFill(base, fixtures, size-stored)
			}
			if err != nil {
				return err
			}
			rate := float64(size-stored) / took.Seconds()
			logf("  filled in %s (%s contacts/s)", took.Round(time.Millisecond), num(rate))
			h.notes = append(h.notes, fmt.Sprintf("Growth fill from %s to %s contacts (%s mode) took %s (%s contacts/s).",
				num(float64(stored)), num(float64(size)), h.o.fillMode, took.Round(time.Second), num(rate)))
			if stored, err = countContacts(base); err != nil {
				return err
			}
		}
		h.sizes = append(h.sizes, sizeRow{"growth database", stored, dbFilesSize(base)})
		work := filepath.Join(h.scratch, "growth-work.db")
		if err := copyDB(base, work); err != nil {
			return err
		}
		err = h.growthSteps(fmt.Sprintf("g%d", i+1), short(stored)+" stored", work, fixtures, config, top)
		removeDB(work)
		if err != nil {
			return err
		}
	}
	return nil
}

// growthSteps measures operation A with 1, 100 and 1000 contacts per
// request at top clients on db, each step the best of two: the growth
// ratios compare steps run minutes apart on a shared machine.
func (h *Harness) growthSteps(tag, label, db, fixtures, config string, top int) error {
	d, err := h.startDialbox("dialbox-growth-"+tag, db, fixtures, config)
	if err != nil {
		return err
	}
	defer d.Stop(60 * time.Second)
	for _, n := range []int{1, 100, 1000} {
		t := Target{Addr: d.Addr, Reqs: d.opA(n), Check: checkImport}
		key := fmt.Sprintf("%s:A%d@%d", tag, n, top)
		name := fmt.Sprintf("op A, %s/request @%d, %s (best of 2)", contactsWord(n), top, label)
		dur := h.o.dur * time.Duration(1+n/1000)
		first := h.stepFor(dur, key, name, t, top, nil)
		if second := h.stepFor(dur, key, name, t, top, nil); second.Units < first.Units {
			h.points[key] = first
		}
	}
	h.notePeak(d, "operation A with "+label)
	return nil
}

// copyDB copies a stopped server's database (and WAL, if any).
func copyDB(src, dst string) error {
	removeDB(dst)
	for _, suffix := range []string{"", "-wal"} {
		in, err := os.Open(src + suffix)
		if errors.Is(err, os.ErrNotExist) && suffix != "" {
			continue
		}
		if err != nil {
			return err
		}
		out, err := os.Create(dst + suffix)
		if err != nil {
			in.Close()
			return err
		}
		_, err = io.Copy(out, in)
		in.Close()
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func removeDB(path string) {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
}

// apiFill adds n contacts through operation A, 1000 per request, 16 at a
// time.
func (h *Harness) apiFill(db, fixtures string, n int64) (time.Duration, error) {
	d, err := h.startDialbox("dialbox-fill", db, fixtures, "")
	if err != nil {
		return 0, err
	}
	defer d.Stop(60 * time.Second)
	start := time.Now()
	t := Target{Addr: d.Addr, Reqs: d.opA(1000), Check: checkImport}
	var added int64
	for added < n {
		r, err := Run(t, 16, time.Hour, (n-added+999)/1000)
		if err != nil {
			return 0, err
		}
		if r.Units == 0 {
			return 0, fmt.Errorf("fill through the API: nothing stored: %s", r.ErrMsg)
		}
		added += r.Units
	}
	return time.Since(start), nil
}

func contactsWord(n int) string {
	if n == 1 {
		return "1 contact"
	}
	return strconv.Itoa(n) + " contacts"
}

func short(n int64) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.FormatInt(n/1_000_000, 10) + "M"
	case n >= 1000 && n%1000 == 0:
		return strconv.FormatInt(n/1000, 10) + "k"
	}
	return num(float64(n))
}

func gitDescribe(repo, build string) string {
	ref := "HEAD"
	if build != "" {
		ref = build
	}
	out, err := exec.Command("git", "-C", repo, "rev-parse", "--short", ref).Output()
	if err != nil {
		return "unknown"
	}
	rev := strings.TrimSpace(string(out))
	if build != "" {
		return rev
	}
	st, _ := exec.Command("git", "-C", repo, "status", "--porcelain", "--", ".", ":(exclude)bench", ":(exclude)docs").Output()
	if len(bytes.TrimSpace(st)) > 0 {
		rev += " + uncommitted changes"
	}
	return rev
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
		}
	}
	return runtime.GOARCH
}
