// Command dialbox is a self-hosted outbound-calling ("callbot") server: the
// public API of the cloud it stands in for, a call engine, and webhooks.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"dialbox/internal/admin"
	"dialbox/internal/cli"
	"dialbox/internal/config"
	"dialbox/internal/console"
	"dialbox/internal/destinations"
	"dialbox/internal/dialer"
	"dialbox/internal/engine"
	"dialbox/internal/httpx"
	"dialbox/internal/importer"
	"dialbox/internal/llm"
	"dialbox/internal/ops"
	"dialbox/internal/proxy"
	"dialbox/internal/recordings"
	"dialbox/internal/sandbox"
	"dialbox/internal/sandboxclock"
	"dialbox/internal/script"
	"dialbox/internal/store"
	"dialbox/internal/tokenlimit"
	"dialbox/internal/webhook"

	"github.com/julienschmidt/httprouter"
)

// version is stamped at build time: go build -ldflags "-X main.version=v1.2.3".
var version = ""

func versionString() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "dev"
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Environ()); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "dialbox:", err)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer, env []string) error {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		m := NewMain(stdout)
		if err := m.ParseFlags(args, env); err != nil {
			return err
		}
		m.SetLogOutput(os.Stderr)
		if err := m.Run(ctx); err != nil {
			return err
		}
		<-ctx.Done()
		m.Log.Info("shutting down")
		return m.Close()
	}
	return cli.Run(ctx, cmd, args, stdout, env, cli.Parts{Open: openCommandStore, Migrations: sqliteMigrations(),
		PostgresMigrations: postgresMigrations(), Version: versionString()})
}

// openCommandStore opens the database of a command that works on it
// directly.
func openCommandStore(ctx context.Context, cfg config.Config) (cli.Store, error) {
	return openExistingStore(ctx, cfg)
}

// Main is one running dialbox: tests start it on 127.0.0.1:0 exactly as the
// binary starts it.
type Main struct {
	Config config.Config
	Stdout io.Writer
	Log    *slog.Logger
	// AccessLog gets the line per request; nil: Log.
	AccessLog *ops.AccessLog
	// now is the wall clock the admin API and the console read (wrong
	// tokens, sessions); tests set their own before Run.
	now func() time.Time

	logs *ops.LogBuffer // behind both loggers when log.flush_interval > 0

	metrics *ops.Metrics // what this server's /metrics serves, handed to each part
	store   Store
	// catalog is store seen through the configuration cache (internal/store/cache.go):
	// what the parts that serve and call are given.
	catalog   cachedStore
	serveLock *os.File // held while serving: one server per database
	// adminTokenFromEnv: Config.Admin.Token came from DIALBOX_ADMIN_TOKEN.
	adminTokenFromEnv bool
	api               *API
	ln                net.Listener
	server            *http.Server
	ops               *ops.Server

	sip   *dialer.SIP  // when dialer.kind is "sip", to hang up its calls at the end
	trial dialer.Trial // the console's "Try it": the simulator with the agent steps' model
	clock admin.Clock  // the simulator's; nil with real calls
	// sandboxNow is the time the rules of calling read, which the admin
	// API may move; nil with real calls, which keep the real time.
	sandboxNow *sandboxclock.Clock
	engine     *engine.Engine
	webhooks   *webhook.Deliverer
	sweeper    *recordings.Sweeper
	console    *console.Console // nil when console.enabled is false
	sink       *sandbox.Sink    // the webhook sink, mounted by mountAdmin
}

func NewMain(stdout io.Writer) *Main {
	return &Main{
		Config: config.DefaultConfig(),
		Stdout: stdout,
		Log:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
		now:    time.Now,
	}
}

// SetLogOutput points the loggers at out, as the log section asks: the
// access log batched when log.flush_interval is set, the rest at once.
func (m *Main) SetLogOutput(out io.Writer) {
	if iv := m.Config.Log.FlushInterval.Duration; iv > 0 {
		m.logs = ops.NewLogBuffer(out, iv)
		m.Log = ops.NewLogger(m.Config.Log, m.logs.Immediate())
		m.AccessLog = ops.NewAccessLog(m.Config.Log, m.logs)
		return
	}
	m.Log = ops.NewLogger(m.Config.Log, out)
	m.AccessLog = ops.NewAccessLog(m.Config.Log, out)
}

// ParseFlags reads the serve command's flags, config file and environment.
func (m *Main) ParseFlags(args, env []string) error {
	fs, f := cli.NewFlagSet("serve")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q\n%s", fs.Arg(0), cli.Usage)
	}
	cfg, err := f.Load(fs, env)
	if err != nil {
		return err
	}
	m.Config = cfg
	m.adminTokenFromEnv = cfg.Admin.Token != "" && envValue(env, "DIALBOX_ADMIN_TOKEN") == cfg.Admin.Token
	return nil
}

// Run opens the database, applies fixtures (or makes the demo tenant on an
// empty database), and starts serving. It returns once the server listens.
func (m *Main) Run(ctx context.Context) (err error) {
	cfg := m.Config
	if cfg.Limits.MemoryMiB > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(cfg.Limits.MemoryMiB << 20)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(cfg.Limits.GCPercent)
	}
	var fixtures *store.FixtureFile
	if cfg.Fixtures != "" {
		if fixtures, err = m.loadFixtures(); err != nil {
			return err
		}
	}
	// A SQLite file has one server; PostgreSQL is shared by any number.
	if !config.IsPostgresURL(cfg.Database) {
		if m.serveLock, err = store.LockServing(cfg.Database); err != nil {
			return err
		}
	}
	// A PostgreSQL node's counters show only there (docs/postgres.md), so a
	// SQLite server's metrics stay as they were.
	storeMetrics := store.NewMetrics(config.IsPostgresURL(cfg.Database))
	m.metrics = ops.NewMetrics(versionString(), storeMetrics.Collectors()...)
	if m.store, err = openConfiguredStore(ctx, cfg, storeMetrics); err != nil {
		m.serveLock.Close()
		return err
	}
	m.catalog = newCachedStore(m.store)
	defer func() {
		if err != nil {
			defer m.serveLock.Close()
			if m.ln != nil {
				m.ln.Close()
			}
			m.stopCalling()
			if m.sip != nil {
				m.sip.Close()
			}
			m.store.Close()
		}
	}()
	// Listening first gives the demo tenant's webhook the sink's real address.
	if m.ln, err = net.Listen("tcp", cfg.Listen); err != nil {
		return fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	now := time.Now()
	if fixtures != nil {
		if err := m.store.ApplyFixtures(ctx, fixtures.Applications, now); err != nil {
			return fmt.Errorf("fixtures %s: %w", cfg.Fixtures, err)
		}
		if err := m.applyFixtureRegister(ctx, fixtures.DNC, now); err != nil {
			return err
		}
	} else if n, err := m.store.CountApps(ctx); err != nil {
		return err
	} else if n == 0 {
		if err := m.store.ApplyFixtures(ctx, []*store.FixtureApp{m.demoTenant(ctx, now)}, now); err != nil {
			return fmt.Errorf("demo tenant: %w", err)
		}
	}
	if err := m.repointDemoSink(ctx, now); err != nil {
		return fmt.Errorf("demo tenant: %w", err)
	}
	if cfg.Dialer.Kind == config.DialerSIP {
		if err := m.checkStoredPoolTrunks(ctx); err != nil {
			return err
		}
	}
	if err := m.checkScriptsCanRun(ctx, m.speechHeard(), cfg.LLM.URL != ""); err != nil {
		return err
	}

	// The parts, in dependency order, each complete before it is handed on
	// (faults and the journal are nil-safe; the admin API mounts them).
	journal := sandbox.NewJournal(cfg.Journal) // nil when journal.max_entries is 0
	faults := sandbox.NewFaults(m.catalog)
	var calls engine.Dialer
	var timeScale func() float64 // real calls: re_call delays in real time
	var chat script.Chat         // agent steps' model, on either dialer
	if cfg.LLM.URL != "" {
		chat = llm.Agent{Client: llm.New(cfg.LLM.URL, cfg.LLM.Model, cfg.LLM.APIKey, cfg.LLM.Timeout.Duration)}
	}
	m.trial = dialer.Trial{Chat: chat}
	if cfg.Dialer.Kind == config.DialerSIP {
		if m.sip, err = dialer.NewSIP(cfg, store.DataDir(cfg), m.Log, m.metrics.TrunkRegistered); err != nil {
			return err
		}
		m.sip.Chat = chat
		calls = m.sip
	} else {
		sim := dialer.NewSim(cfg.Simulator)
		sim.Chat = chat
		sim.HoldTrunks(cfg.SIP.Trunks)
		calls, m.clock, timeScale = sim, sim, sim.TimeScale
		m.sandboxNow = &sandboxclock.Clock{}
	}
	m.webhooks = NewWebhooks(m.catalog, faults, m.Log, cfg.Webhooks, m.URL(), m.metrics.EndpointsAtShare)
	policy, err := destinations.New(cfg.Phone.DefaultRegion, cfg.Destinations)
	if err != nil {
		return err
	}
	m.engine = engine.New(engine.Parts{Store: m.catalog, Dialer: calls, Log: m.Log, Config: cfg.Engine,
		Destinations: policy, Webhooks: m.webhooks, FirstTry: m.webhooks.FirstTry, ForceDial: faults.BeforeDial,
		TimeScale: timeScale, Now: m.sandboxNow.Now, Recordings: recordings.Folder(cfg, store.DataDir(cfg)), RecordingBase: m.recordingBase()})
	m.sweeper = recordings.NewSweeper(m.store, recordings.Folder(cfg, store.DataDir(cfg)), cfg, m.Log)
	m.api = NewAPI(cfg, m.catalog, importer.New(m.catalog, cfg, m.Log, m.engine.Notify), journal, faults, m.sandboxNow.Now, m.Log)

	router := httpx.NewRouter()
	m.api.routes(router)
	router.MethodNotAllowed = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, http.StatusMethodNotAllowed, httpx.ErrorBody{Code: 405, Message: "Method not allowed"})
	})
	if m.sink, err = sandbox.NewSink(cfg.Sink); err != nil {
		return err
	}
	if m.ops, err = m.startOps(router); err != nil {
		return err
	}
	if err := m.mountAdmin(ctx, router, journal, faults); err != nil {
		return err
	}
	// No route: the console's own page under /console/, else the public
	// API's 404 envelope.
	router.NotFound = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m.console != nil && strings.HasPrefix(r.URL.Path, "/console/") {
			m.console.NotFoundPage(w, r)
			return
		}
		m.api.writeError(w, &httpx.Error{Code: 404, Message: "Not found"})
	})
	m.server = &http.Server{
		Handler:           m.ops.Handler,
		ReadHeaderTimeout: cfg.HTTP.ReadHeaderTimeout.Duration,
		ReadTimeout:       cfg.HTTP.ReadTimeout.Duration,
		WriteTimeout:      cfg.HTTP.WriteTimeout.Duration,
		IdleTimeout:       cfg.HTTP.IdleTimeout.Duration,
		ErrorLog:          slog.NewLogLogger(m.Log.Handler(), slog.LevelWarn),
	}
	if m.console != nil {
		m.server.RegisterOnShutdown(m.console.Stop) // live streams would hold Shutdown to its timeout
	}
	if err := m.startCalling(ctx); err != nil {
		return err
	}
	go func() {
		if err := m.server.Serve(m.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.Log.Error("server stopped", "err", err)
		}
	}()
	m.Log.Info("dialbox serving", "version", versionString(), "addr", m.URL(), "database", store.Redacted(cfg.Database))
	// Already serving: a stop signal from now on is for Close, not a failed start.
	return m.printDemo(context.WithoutCancel(ctx))
}

// startOps adds the operator routes to router, with what they read.
func (m *Main) startOps(router *httprouter.Router) (*ops.Server, error) {
	p := ops.Parts{Router: router, Metrics: m.metrics, Store: m.store, Log: m.Log, AccessLog: m.AccessLog,
		MetricsListen: m.Config.Metrics.Listen, Webhooks: m.webhooks, OpenAPI: http.HandlerFunc(serveOpenAPI),
		Version: versionString(),
		Retained: map[string]func() (int, int){
			"journal":     m.api.journal.Size,
			"sink":        m.sink.Size,
			"token_cache": m.api.tokens.Size,
		}}
	if pg, ok := m.store.(interface{ NodeID() string }); ok {
		p.Node = pg.NodeID()
	}
	if m.sip != nil {
		p.TTSCache = m.sip.TTSCache()
	}
	if m.Config.Engine.Enabled {
		p.Engine = m.engine
	}
	return ops.New(p)
}

// URL is the base URL clients use to reach this server.
func (m *Main) URL() string {
	host, port, _ := net.SplitHostPort(m.ln.Addr().String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// recordingBase starts every recording_url: recordings.base_url, or this
// server's own address (docs/voicebot.md#recordings).
func (m *Main) recordingBase() string {
	if b := m.Config.Recordings.BaseURL; b != "" {
		return strings.TrimSuffix(b, "/")
	}
	return m.URL()
}

// Close stops accepting requests and taking webhook messages, cuts calls
// in progress (they are settled and queued again), lets in-flight requests
// and webhook attempts finish within http.shutdown_timeout, and closes the
// database.
func (m *Main) Close() error {
	var errs []error
	ctx, cancel := context.WithTimeout(context.Background(), m.Config.HTTP.ShutdownTimeout.Duration)
	defer cancel()
	if m.engine != nil {
		m.engine.Stop() // first, so no call starts during the grace period
	}
	delivered := make(chan struct{})
	go func() {
		defer close(delivered)
		if m.webhooks != nil {
			m.webhooks.Shutdown(ctx)
		}
	}()
	if m.server != nil {
		errs = append(errs, m.server.Shutdown(ctx))
	}
	errs = append(errs, m.ops.Close())
	<-delivered
	m.stopCalling() // an admin reset answered during the grace may have started calling again
	if m.sip != nil {
		errs = append(errs, m.sip.Close()) // the engine has hung its calls up already
	}
	if m.store != nil {
		errs = append(errs, m.store.Close())
	}
	if m.serveLock != nil {
		m.serveLock.Close()
	}
	if m.logs != nil {
		errs = append(errs, m.logs.Close()) // last: the lines of the stop itself
	}
	return errors.Join(errs...)
}

// startCalling starts webhook delivery, unless engine.enabled is false
// the call engine (which first settles calls a crash left up), and then
// the recordings' sweeper, whose first sweep removes the files of those
// calls.
func (m *Main) startCalling(ctx context.Context) error {
	if err := m.webhooks.Start(); err != nil {
		return err
	}
	if m.Config.Engine.Enabled {
		if err := m.engine.Start(ctx); err != nil {
			return err
		}
	}
	m.sweeper.Start()
	return nil
}

// stopCalling cuts calls in progress (they are settled and queued again)
// and stops delivery and the sweeper; all can be started again.
func (m *Main) stopCalling() {
	if m.engine != nil {
		m.engine.Stop()
	}
	if m.webhooks != nil {
		m.webhooks.Stop()
	}
	if m.sweeper != nil {
		m.sweeper.Stop()
	}
}

// mountAdmin adds the admin API, with the sandbox parts it shares with the
// public API, the engine and webhook delivery, and the sink to router.
func (m *Main) mountAdmin(ctx context.Context, router *httprouter.Router, journal *sandbox.Journal, faults *sandbox.Faults) error {
	hash, generated, err := admin.TokenHash(ctx, m.store, m.Config.Admin.Token)
	if err != nil {
		return err
	}
	sink := m.sink
	proxies, err := proxy.Parse(m.Config.HTTP.TrustedProxies)
	if err != nil {
		return err
	}
	wrongTokens := tokenlimit.New(tokenlimit.Config{PerAddress: m.Config.Admin.WrongTokensPerAddress,
		Overall: m.Config.Admin.WrongTokensOverall, Backoff: m.Config.Admin.WrongTokenBackoff.Duration,
		MaxAddresses: 10_000}, m.Log)
	adm := admin.New(admin.Parts{Apps: m.catalog, Calling: m.catalog, Contacts: m.catalog, Webhooks: m.catalog, DNC: m.catalog, Audit: m.catalog,
		Region: m.Config.Phone.DefaultRegion, Now: m.now, Log: m.Log, TokenHash: hash,
		WrongTokens: wrongTokens, Proxies: proxies,
		Journal: journal, Faults: faults, Sink: sink, Clock: m.clock, SandboxNow: m.sandboxNow, Trunks: m.Config.PoolTrunks(),
		Recordings: recordings.Folder(m.Config, store.DataDir(m.Config)), RecordingBase: m.recordingBase(),
		ReadTimeout: m.Config.HTTP.ReadTimeout.Duration, WriteTimeout: m.Config.HTTP.WriteTimeout.Duration,
		Speech: m.speechHeard(), Chat: m.Config.LLM.URL != "",
		Reset: m.resetTenants, Wake: m.engine.Notify, WakeWebhooks: m.webhooks.Notify})
	adm.Routes(router)
	access, err := sandbox.SinkAccess(ctx, m.Config, m.store)
	if err != nil {
		return err
	}
	sink.Mount(router, access, adm.Authorize)
	if m.Config.Console.Enabled {
		parts := console.Parts{Reads: adm, Actions: adm, Sandbox: adm, Engine: m.engine, Trial: m.trial, Trunks: m.Config.SIP.TrunkNames(), Journal: journal, Sink: sink,
			SandboxNow: m.sandboxNow, Proxies: proxies, Config: m.Config.Console, Log: m.Log, Now: m.now, Importer: m.api.importer}
		if m.sip != nil { // a nil *dialer.SIP would not be a nil console.TrunkUses
			parts.SIP = m.sip
		}
		if m.console, err = console.New(parts); err != nil {
			return err
		}
		m.console.Routes(router)
	}
	if generated != "" {
		fmt.Fprintf(m.Stdout, "\nAdmin API token (generated and kept in the database; set admin.token to choose one):\n  %s\n", generated)
	}
	return nil
}

// resetTenants stops calling, replaces every tenant by the fixtures (or the
// demo tenant) in one transaction, and starts calling again.
func (m *Main) resetTenants(ctx context.Context) error {
	m.stopCalling()
	ctx = context.WithoutCancel(ctx) // calling must restart even if the client goes away
	now := time.Now()
	apps := []*store.FixtureApp{m.demoTenant(ctx, now)}
	var err error
	if m.Config.Fixtures != "" {
		var ff *store.FixtureFile
		if ff, err = m.loadFixtures(); err == nil {
			apps = ff.Applications
		}
	}
	if err == nil {
		err = m.store.Reset(ctx, apps, now)
	}
	return errors.Join(err, m.startCalling(ctx))
}

// applyFixtureRegister adds the fixtures' [dnc] section to the national
// register, saying what its file held.
func (m *Main) applyFixtureRegister(ctx context.Context, d *store.FixtureDNC, now time.Time) error {
	if d == nil {
		return nil
	}
	start := time.Now()
	rep, err := store.ApplyFixtureRegister(ctx, m.store, d, m.Config.Phone.DefaultRegion, now)
	var bad *config.ConfigError
	if errors.As(err, &bad) {
		data, _ := os.ReadFile(m.Config.Fixtures)
		bad.File, bad.Line = m.Config.Fixtures, config.KeyLine(data, bad.Key)
		return bad
	}
	if err != nil {
		return fmt.Errorf("fixtures %s: %w", m.Config.Fixtures, err)
	}
	if rep.Bad > 0 {
		m.Log.Warn("fixtures: lines of the do-not-call file hold no phone number", "file", d.Path, "bad", rep.Bad, "first", rep.BadLines)
	}
	m.Log.Info("fixtures: national do-not-call register", "file", d.Path, "lines", rep.Lines, "added", rep.Loaded,
		"took", time.Since(start).Round(time.Millisecond))
	return nil
}

// loadFixtures reads the fixtures file; with real calls, a pool naming a
// trunk that is not configured is an error of the file, at its line.
func (m *Main) loadFixtures() (*store.FixtureFile, error) {
	path := m.Config.Fixtures
	ff, err := store.LoadFixtures(path)
	if err != nil {
		return nil, err
	}
	if err := ff.ReadDNC(path, m.Config.Phone.DefaultRegion); err != nil {
		return nil, err
	}
	trunks := m.Config.PoolTrunks()
	if trunks == nil {
		return ff, nil
	}
	for ai, fa := range ff.Applications {
		for pi, p := range fa.HotlinePools {
			if p.Trunk != "" && !trunks[p.Trunk] {
				key := fmt.Sprintf("applications[%d].hotline_pools[%d].trunk", ai, pi)
				data, _ := os.ReadFile(path)
				return nil, &config.ConfigError{File: path, Line: config.KeyLine(data, key), Key: key,
					Msg: fmt.Sprintf("%q is not one of sip.trunks", p.Trunk)}
			}
		}
	}
	return ff, nil
}

// speechHeard: the simulator hears the rules' says, real calls need an [asr] engine.
func (m *Main) speechHeard() bool {
	return m.Config.Dialer.Kind != config.DialerSIP || m.Config.ASR.Engine != ""
}

// checkScriptsCanRun refuses to start while a stored scenario's script has
// a step this deployment cannot run (script.Unmet): speech heard without
// a recognizer (speech false), or an agent without a language model (chat
// false). Its error names the application, the scenario and the step.
func (m *Main) checkScriptsCanRun(ctx context.Context, speech, chat bool) error {
	scripts, err := m.store.ScenarioScripts(ctx)
	if err != nil {
		return err
	}
	for _, sc := range scripts {
		if ps := sc.Script.Unmet(speech, chat); len(ps) > 0 {
			return fmt.Errorf("scenario %q of application %q cannot run here: %w", sc.ID, sc.App, ps[0])
		}
	}
	return nil
}

// checkStoredPoolTrunks refuses to start real calls while a pool made
// earlier (through the admin API) names a trunk that is not configured:
// its calls could go nowhere.
func (m *Main) checkStoredPoolTrunks(ctx context.Context) error {
	trunks := m.Config.PoolTrunks()
	pools, err := m.store.PoolTrunks(ctx)
	if err != nil {
		return err
	}
	for _, p := range pools {
		if !trunks[p.Trunk] {
			return fmt.Errorf("hotline pool %q of application %q calls through trunk %q, which is not one of sip.trunks: add the trunk, or delete the pool", p.Key, p.App, p.Trunk)
		}
	}
	return nil
}
