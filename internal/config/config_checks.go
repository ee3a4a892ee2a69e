package config

import (
	"dialbox/internal/domain"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// badKey is the ConfigError every check returns: the key at fault and why.
func badKey(key, msg string) error { return &ConfigError{Key: key, Msg: msg} }

// oneOf checks a key that takes one of a few words: its error lists them,
// as in `must be "text" or "json"`.
func oneOf(key, value string, allowed ...string) error {
	if slices.Contains(allowed, value) {
		return nil
	}
	quoted := make([]string, len(allowed))
	for i, a := range allowed {
		quoted[i] = strconv.Quote(a)
	}
	last := len(quoted) - 1
	return badKey(key, "must be "+strings.Join(quoted[:last], ", ")+" or "+quoted[last])
}

// validate runs one check per section and returns the first problem. The
// order is part of the behaviour: a config with several problems reports the
// same first one on every version.
func (c *Config) Validate() error {
	for _, check := range []func() error{
		c.checkServer, c.checkAPI, c.checkLimits, c.checkHTTP, c.checkPhone,
		c.checkEngine, c.checkTimeScale, c.checkWebhooks, c.checkAdmin,
		c.checkRecordings, c.checkConsole, c.checkJournal, c.checkSink,
		c.checkLog, c.checkCluster, c.checkRetryDelays, c.checkDestinations,
		c.Simulator.Validate, c.checkDialer, c.checkSIP, c.checkTTS, c.checkASR, c.checkLLM,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

func (c *Config) checkServer() error {
	switch {
	case c.Listen == "":
		return badKey("listen", "must not be empty")
	case c.Database == "":
		return badKey("database", "must not be empty")
	case IsPostgresURL(c.Database) && CheckPostgresURL(c.Database) != nil:
		return badKey("database", "must be a SQLite file or a valid PostgreSQL URL like \"postgres://user:password@host:5432/dialbox\": "+CheckPostgresURL(c.Database).Error())
	}
	return nil
}

func (c *Config) checkAPI() error {
	return oneOf("api.error_http_status", c.API.ErrorHTTPStatus, StatusModeSemantic, StatusModeAlways)
}

func (c *Config) checkLimits() error {
	l := c.Limits
	switch {
	case l.MaxContactsPerRequest < 1:
		return badKey("limits.max_contacts_per_request", "must be at least 1")
	case l.MaxBodyBytes < 1:
		return badKey("limits.max_body_bytes", "must be at least 1")
	case l.RatePerSecond < 0:
		return badKey("limits.rate_per_second", "must not be negative (0: unlimited)")
	case l.Burst < 1:
		return badKey("limits.burst", "must be at least 1")
	case l.MaxConcurrentImports < 1:
		return badKey("limits.max_concurrent_imports", "must be at least 1")
	case l.MaxQueuedContacts < 0:
		return badKey("limits.max_queued_contacts", "must not be negative (0: unlimited)")
	case l.MaxContactFieldBytes < minContactFieldBytes:
		return badKey("limits.max_contact_field_bytes", fmt.Sprintf("must be at least %d (a phone number must fit)", minContactFieldBytes))
	case l.MaxContactBytes < l.MaxContactFieldBytes:
		return badKey("limits.max_contact_bytes", fmt.Sprintf("must be at least limits.max_contact_field_bytes (%d)", l.MaxContactFieldBytes))
	case l.MemoryMiB < 0:
		return badKey("limits.memory_mib", "must not be negative (0: no limit)")
	case l.GCPercent < 1:
		return badKey("limits.gc_percent", "must be at least 1")
	}
	return nil
}

func (c *Config) checkHTTP() error {
	h := c.HTTP
	switch {
	case h.ReadHeaderTimeout.Duration <= 0:
		return badKey("http.read_header_timeout", "must be positive")
	case h.ReadTimeout.Duration <= 0:
		return badKey("http.read_timeout", "must be positive")
	case h.WriteTimeout.Duration <= 0:
		return badKey("http.write_timeout", "must be positive")
	case h.IdleTimeout.Duration <= 0:
		return badKey("http.idle_timeout", "must be positive")
	case h.ShutdownTimeout.Duration <= 0:
		return badKey("http.shutdown_timeout", "must be positive")
	}
	if err := trustedProxiesErr(h.TrustedProxies); err != nil {
		return badKey("http.trusted_proxies", err.Error())
	}
	return nil
}

func (c *Config) checkPhone() error {
	if !supportedRegion(c.Phone.DefaultRegion) {
		return badKey("phone.default_region", fmt.Sprintf("%q is not a known region code like \"VN\"", c.Phone.DefaultRegion))
	}
	return nil
}

func (c *Config) checkEngine() error {
	if c.Engine.PollInterval.Duration <= 0 {
		return badKey("engine.poll_interval", "must be positive")
	}
	return nil
}

// checkTimeScale is the one simulator key checked before [webhooks]; the
// weights and rules come after [destinations] (SimulatorConfig.validate).
func (c *Config) checkTimeScale() error {
	if c.Simulator.TimeScale <= 0 {
		return badKey("simulator.time_scale", "must be positive")
	}
	return nil
}

func (c *Config) checkWebhooks() error {
	w := c.Webhooks
	switch {
	case w.Workers < 1:
		return badKey("webhooks.workers", "must be at least 1")
	case w.Timeout.Duration <= 0:
		return badKey("webhooks.timeout", "must be positive")
	case len(w.RetrySchedule) == 0:
		return badKey("webhooks.retry_schedule", "must list at least one delay")
	case w.MaxInFlightPerEndpoint < 1:
		return badKey("webhooks.max_in_flight_per_endpoint", "must be at least 1")
	}
	return nil
}

func (c *Config) checkAdmin() error {
	a := c.Admin
	switch {
	case a.Token != "" && len(a.Token) < 16:
		return badKey("admin.token", "must be at least 16 characters (or empty to generate one)")
	case a.WrongTokensPerAddress < 1:
		return badKey("admin.wrong_tokens_per_address", "must be at least 1")
	case a.WrongTokensOverall < 1:
		return badKey("admin.wrong_tokens_overall", "must be at least 1")
	case a.WrongTokenBackoff.Duration < time.Second || a.WrongTokenBackoff.Duration > time.Minute:
		return badKey("admin.wrong_token_backoff", "must be from 1s to 1m: the right token waits this long after a wrong one once a limit is reached")
	}
	return nil
}

func (c *Config) checkRecordings() error {
	switch {
	case c.Recordings.RetentionDays < 0:
		return badKey("recordings.retention_days", "must not be negative (0: kept as long as their contact)")
	case !validBaseURL(c.Recordings.BaseURL):
		return badKey("recordings.base_url", "must be an http:// or https:// URL with a host and no query, like \"https://dialbox.example.com\" (or empty: this server's address)")
	}
	return nil
}

func (c *Config) checkConsole() error {
	if c.Console.SessionMaxAge.Duration <= 0 {
		return badKey("console.session_max_age", "must be positive")
	}
	return nil
}

func (c *Config) checkJournal() error {
	j := c.Journal
	switch {
	case j.MaxEntries < 0:
		return badKey("journal.max_entries", "must not be negative")
	case j.MaxAge.Duration <= 0:
		return badKey("journal.max_age", "must be positive")
	case j.MaxBodyBytes < 0:
		return badKey("journal.max_body_bytes", "must not be negative")
	case j.MaxEntries > 0 && j.MaxBytes < MaxJournalEntryBytes(j.MaxBodyBytes):
		return badKey("journal.max_bytes", fmt.Sprintf("must be at least %d, what one entry with journal.max_body_bytes = %d may hold",
			MaxJournalEntryBytes(j.MaxBodyBytes), j.MaxBodyBytes))
	}
	return nil
}

func (c *Config) checkSink() error {
	s := c.Sink
	if err := domain.CheckWebhookSecret(s.Secret); err != nil {
		return badKey("sink.secret", err.Error())
	}
	switch {
	case s.MaxMessages < 1:
		return badKey("sink.max_messages", "must be at least 1")
	case s.MaxBodyBytes < 1:
		return badKey("sink.max_body_bytes", "must be at least 1")
	case s.MaxBytes < s.MaxBodyBytes:
		return badKey("sink.max_bytes", fmt.Sprintf("must be at least sink.max_body_bytes (%d), or a body the sink takes could not be kept", s.MaxBodyBytes))
	}
	return oneOf("sink.access", s.Access, SinkAccessAuto, SinkAccessOpen, SinkAccessAdmin, SinkAccessOff)
}

func (c *Config) checkLog() error {
	if err := oneOf("log.format", c.Log.Format, "text", "json"); err != nil {
		return err
	}
	switch {
	case !validLogLevel(c.Log.Level):
		return badKey("log.level", `must be "debug", "info", "warn" or "error"`)
	case c.Log.FlushInterval.Duration < 0:
		return badKey("log.flush_interval", "must not be negative")
	}
	return nil
}

func (c *Config) checkCluster() error {
	switch {
	case !validNodeName(c.Cluster.NodeName):
		return badKey("cluster.node_name", "must be at most 64 letters, digits, '.', '_' or '-' (or empty: the hostname)")
	case c.Cluster.Lease.Duration < time.Second:
		return badKey("cluster.lease", "must be at least 1s")
	}
	return nil
}

// checkRetryDelays comes after [cluster], not with the rest of [webhooks]:
// that is where it has always been, and the first problem reported stays so.
func (c *Config) checkRetryDelays() error {
	for _, d := range c.Webhooks.RetrySchedule {
		if d.Duration < 0 {
			return badKey("webhooks.retry_schedule", "delays must not be negative")
		}
	}
	return nil
}

func (c *Config) checkDestinations() error {
	if fe := c.Destinations.Validate(); fe != nil {
		return badKey("destinations."+fe.Field, fe.Message)
	}
	return nil
}

func (s *SimulatorConfig) Validate() error {
	total := 0.0
	for o, w := range s.Weights {
		if !domain.IsDialableOutcome(o) {
			return badKey("simulator.weights."+o, "is not an outcome: ANSWERED, BUSY, NO_ANSWER, FAILED, REJECTED, VOICE_MAIL or INVALID_NUMBER")
		}
		if w < 0 {
			return badKey("simulator.weights."+o, "must not be negative")
		}
		total += w
	}
	if len(s.Weights) > 0 && total == 0 {
		return badKey("simulator.weights", "at least one weight must be positive")
	}
	for i := range s.Rules {
		if err := s.Rules[i].Check(fmt.Sprintf("simulator.rules[%d]", i)); err != nil {
			return err
		}
	}
	return nil
}

// check validates one [[simulator.rules]] entry under key, filling in the
// VOICE_MAIL outcome a machine implies.
func (r *SimulatorRule) Check(key string) error {
	if r.Machine && r.Outcome == "" {
		r.Outcome = domain.OutcomeVoiceMail
	}
	switch {
	case (r.Suffix == "") == (r.Number == ""):
		return badKey(key, "set exactly one of suffix and number")
	case r.Machine && r.Outcome != domain.OutcomeVoiceMail:
		return badKey(key+".machine", "a machine answers VOICE_MAIL: leave outcome out or set it to VOICE_MAIL")
	case !domain.ValidDigits(r.Digits):
		return badKey(key+".digits", "must be keys 0-9, * and #")
	case r.Digits != "" && r.Outcome != domain.OutcomeAnswered:
		return badKey(key+".digits", "only a person presses keys: outcome must be ANSWERED")
	case r.DigitsDelay.Duration < 0 || r.HangupAfter.Duration < 0 || r.SaysDelay.Duration < 0:
		return badKey(key, "digits_delay, says_delay and hangup_after must not be negative")
	case domain.CheckSays(r.Says) != "":
		return badKey(key+".says", domain.CheckSays(r.Says))
	case r.Says != nil && r.Outcome != domain.OutcomeAnswered:
		return badKey(key+".says", "only a person speaks: outcome must be ANSWERED")
	case !domain.IsDialableOutcome(r.Outcome):
		return badKey(key+".outcome", "must be ANSWERED, BUSY, NO_ANSWER, FAILED, REJECTED, VOICE_MAIL or INVALID_NUMBER")
	case r.TalkTime.Duration < 0 || r.RingTime.Duration < 0:
		return badKey(key, "talk_time and ring_time must not be negative")
	}
	return nil
}

// isPostgresURL tells a PostgreSQL URL from a SQLite path in `database`
// (docs/postgres.md).
func IsPostgresURL(database string) bool {
	return strings.HasPrefix(database, "postgres://") || strings.HasPrefix(database, "postgresql://")
}

// checkPostgresURL says what is wrong with a PostgreSQL URL, if anything.
func CheckPostgresURL(url string) error {
	_, err := pgx.ParseConfig(url)
	return err
}

// maxJournalEntryBytes is the most one entry retains with bodies cut at
// bodyMax: the path, query and two headers at their cut, the request body,
// and an answer's buffer kept by reference (at most twice what is kept).
func MaxJournalEntryBytes(bodyMax int) int {
	return 4*MaxJournalFieldBytes + bodyMax + 2*max(bodyMax, CodePrefixLen) + JournalEntryOverhead + 1024
}

// maxJournalFieldBytes is how much of the path, the query and the
// Authorization and Content-Type headers an entry keeps: a request's line
// and headers may reach 1 MB each, and failed authentications are
// journaled too (docs/sandbox.md#6-verify-what-your-client-sent-the-journal).
const MaxJournalFieldBytes = 4096

// journalEntryOverhead is about what an entry costs beside its strings
// and bodies: the struct, its ring slot, the string headers.
const JournalEntryOverhead = 400

// codePrefixLen is enough of a body to read its code: every body of the
// public API starts {"status":0,"code":N or {"status":1.
const CodePrefixLen = 32

// validBaseURL: empty, or an absolute http(s) URL with a host and no query
// or fragment, which a recording's path can follow.
func validBaseURL(s string) bool {
	if s == "" {
		return true
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" &&
		u.RawQuery == "" && u.Fragment == "" && u.User == nil
}

func validLogLevel(s string) bool {
	_, ok := LogLevels[s]
	return ok
}

var LogLevels = map[string]slog.Level{
	"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError,
}
