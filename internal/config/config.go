package config

import (
	"fmt"
	"time"

	"dialbox/internal/destinations"
	"dialbox/internal/sipcall"
)

// Config is every setting of dialbox. config.example.toml documents each key
// with its default; DefaultConfig is where those defaults live.
type Config struct {
	Listen     string           `toml:"listen"`
	Database   string           `toml:"database"`
	Fixtures   string           `toml:"fixtures"`
	HTTP       HTTPConfig       `toml:"http"`
	API        APIConfig        `toml:"api"`
	Limits     LimitsConfig     `toml:"limits"`
	Phone      PhoneConfig      `toml:"phone"`
	Engine     EngineConfig     `toml:"engine"`
	Simulator  SimulatorConfig  `toml:"simulator"`
	Dialer     DialerConfig     `toml:"dialer"`
	SIP        SIPConfig        `toml:"sip"`
	TTS        TTSConfig        `toml:"tts"`
	ASR        ASRConfig        `toml:"asr"`
	Voicebot   VoicebotConfig   `toml:"voicebot"`
	LLM        LLMConfig        `toml:"llm"`
	Recordings RecordingsConfig `toml:"recordings"`
	Webhooks   WebhooksConfig   `toml:"webhooks"`
	Admin      AdminConfig      `toml:"admin"`
	Console    ConsoleConfig    `toml:"console"`
	Journal    JournalConfig    `toml:"journal"`
	Sink       SinkConfig       `toml:"sink"`
	Log        LogConfig        `toml:"log"`
	Metrics    MetricsConfig    `toml:"metrics"`
	Cluster    ClusterConfig    `toml:"cluster"`

	// Destinations are the operator's allow and deny prefixes of the
	// destination policy (docs/compliance.md#destinations).
	Destinations destinations.Rules `toml:"destinations"`
}

// ClusterConfig is what a node on a shared PostgreSQL database calls
// itself and how long what it claims outlives it
// (docs/postgres.md#nodes-and-leases); SQLite ignores it.
type ClusterConfig struct {
	// NodeName starts the node id its leases carry; empty: the hostname.
	NodeName string `toml:"node_name"`
	// Lease is how long a call or webhook message claimed by a node stays
	// its own without a renewal (renewed every third of it).
	Lease Duration `toml:"lease"`
}

// validNodeName allows what reads well in a metric label and a log line.
func validNodeName(s string) bool {
	if len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// HTTPConfig bounds how long a client may hold a connection, so slow or
// stuck clients cannot pile up, and how long a stop waits for requests and
// webhook attempts in flight.
type HTTPConfig struct {
	ReadHeaderTimeout Duration `toml:"read_header_timeout"`
	ReadTimeout       Duration `toml:"read_timeout"`
	WriteTimeout      Duration `toml:"write_timeout"`
	IdleTimeout       Duration `toml:"idle_timeout"`
	ShutdownTimeout   Duration `toml:"shutdown_timeout"`
	// TrustedProxies are the reverse proxies (addresses or networks) whose
	// X-Forwarded-For and X-Forwarded-Proto are believed: the client's
	// address for the limit on wrong admin tokens, and HTTPS for the
	// console's cookies (internal/proxy). Empty: none.
	TrustedProxies []string `toml:"trusted_proxies"`
}

type APIConfig struct {
	// ErrorHTTPStatus is "semantic" or "always_200" (docs/design.md#http-status-of-error-bodies).
	ErrorHTTPStatus string `toml:"error_http_status"`
}

type LimitsConfig struct {
	MaxContactsPerRequest int   `toml:"max_contacts_per_request"`
	MaxBodyBytes          int64 `toml:"max_body_bytes"`
	// RatePerSecond is each application's sustained request rate on the
	// public API (0: unlimited); Burst is how many it may send at once.
	RatePerSecond float64 `toml:"rate_per_second"`
	Burst         int     `toml:"burst"`
	// MaxConcurrentImports bounds operations A and C in progress at once;
	// one more is shed with 429 instead of queueing without bound.
	MaxConcurrentImports int `toml:"max_concurrent_imports"`
	// MaxQueuedContacts bounds each application's contacts not yet
	// finished; an import over it is shed with 429. 0: unlimited.
	MaxQueuedContacts int64 `toml:"max_queued_contacts"`
	// MaxContactFieldBytes bounds each name and value of a contact, and
	// MaxContactBytes the whole contact, as stored
	// (docs/design.md#contact-sizes); over either, an import is refused.
	MaxContactFieldBytes int `toml:"max_contact_field_bytes"`
	MaxContactBytes      int `toml:"max_contact_bytes"`
	// MemoryMiB is a soft limit on the process's memory: the garbage
	// collector works harder as it nears it (0: no limit; GOMEMLIMIT wins).
	MemoryMiB int64 `toml:"memory_mib"`
	// GCPercent is how far the heap grows past what is live before the
	// garbage collector runs, in percent (Go's GOGC; GOGC wins). Above
	// Go's 100 it spends less CPU on collecting a request's garbage,
	// while MemoryMiB still bounds the heap (docs/benchmarks.md#the-garbage-collector).
	GCPercent int `toml:"gc_percent"`
}

type PhoneConfig struct {
	DefaultRegion string `toml:"default_region"`
}

type EngineConfig struct {
	// Enabled turns the call engine on; with it off contacts stay queued.
	Enabled bool `toml:"enabled"`
	// PollInterval is how often the scheduler looks for due contacts when
	// nothing woke it earlier.
	PollInterval Duration `toml:"poll_interval"`
}

type SimulatorConfig struct {
	Seed      int64   `toml:"seed"`
	TimeScale float64 `toml:"time_scale"`
	// Weights of the outcomes of numbers no rule matches; empty means
	// defaultWeights (not in DefaultConfig: TOML merges maps, and a file
	// listing only ANSWERED must mean only ANSWERED).
	Weights map[string]float64 `toml:"weights"`
	Rules   []SimulatorRule    `toml:"rules"`
}

// SimulatorRule decides the outcome of calls to matching numbers.
type SimulatorRule struct {
	Suffix   string   `toml:"suffix"` // matches the E.164 number's ending
	Number   string   `toml:"number"` // matches one number exactly
	Outcome  string   `toml:"outcome"`
	TalkTime Duration `toml:"talk_time"`
	RingTime Duration `toml:"ring_time"`
	// The callee of a scripted call (docs/voicebot.md#the-simulator):
	// the keys it presses, DigitsDelay after the script first asks for
	// keys; Machine, a voicemail box (VOICE_MAIL, answered_by machine);
	// HangupAfter, when it hangs up, counted from the answer.
	Digits      string   `toml:"digits"`
	DigitsDelay Duration `toml:"digits_delay"`
	Machine     bool     `toml:"machine"`
	HangupAfter Duration `toml:"hangup_after"`
	// Says is what the callee says, one utterance per listening turn (a
	// speech gather, an agent's turn; "" for silence), each SaysDelay
	// after the turn begins (docs/sandbox.md#spoken-answers).
	Says      []string `toml:"says"`
	SaysDelay Duration `toml:"says_delay"`
}

type WebhooksConfig struct {
	Workers       int        `toml:"workers"`
	Timeout       Duration   `toml:"timeout"`
	RetrySchedule []Duration `toml:"retry_schedule"`
	// MaxInFlightPerEndpoint bounds one endpoint's attempts under way at
	// once on this node, so a receiver that never answers holds only that
	// many workers (docs/webhooks.md#fair-delivery).
	MaxInFlightPerEndpoint int `toml:"max_in_flight_per_endpoint"`
}

type AdminConfig struct {
	// Token is the admin API's bearer token; empty: one is generated on the
	// first start and kept in the database (the first-run block prints it).
	Token string `toml:"token"`
	// WrongTokensPerAddress is how many wrong admin tokens (on the admin
	// API and the console's sign-in together) one client address may send
	// at once, and per minute after that; WrongTokensOverall the same for
	// every address together. WrongTokenBackoff is how long the right token
	// is refused after the last wrong one while a limit is reached
	// (docs/admin.md#wrong-tokens).
	WrongTokensPerAddress int      `toml:"wrong_tokens_per_address"`
	WrongTokensOverall    int      `toml:"wrong_tokens_overall"`
	WrongTokenBackoff     Duration `toml:"wrong_token_backoff"`
}

// ConsoleConfig is the web console's (docs/console.md#configuration).
type ConsoleConfig struct {
	// Enabled serves the console at /console/.
	Enabled bool `toml:"enabled"`
	// SessionMaxAge is how long a sign-in lasts; then the admin token is
	// asked for again.
	SessionMaxAge Duration `toml:"session_max_age"`
	// SecureCookies marks the console's cookies Secure on every answer, for
	// a TLS proxy that does not send X-Forwarded-Proto; without it they are
	// Secure over TLS, to dialbox or to a trusted proxy saying so.
	SecureCookies bool `toml:"secure_cookies"`
}

type JournalConfig struct {
	// MaxEntries bounds the in-memory request journal; 0 turns it off.
	MaxEntries int `toml:"max_entries"`
	// MaxAge drops entries older than this.
	MaxAge Duration `toml:"max_age"`
	// MaxBodyBytes is how much of each request and response body is kept.
	MaxBodyBytes int `toml:"max_body_bytes"`
	// MaxBytes bounds what the kept entries hold in memory (oldest dropped
	// first).
	MaxBytes int `toml:"max_bytes"`
}

type SinkConfig struct {
	// Secret checks the Standard Webhooks signature of what /sink/{name} receives.
	Secret string `toml:"secret"`
	// MaxMessages bounds the messages kept in memory (oldest dropped first).
	MaxMessages int `toml:"max_messages"`
	// MaxBytes bounds what the kept messages of every name together hold
	// (oldest dropped first).
	MaxBytes int `toml:"max_bytes"`
	// MaxBodyBytes is the largest body the sink takes (413 beyond).
	MaxBodyBytes int `toml:"max_body_bytes"`
	// Access is who may post to the sink: "open" (anyone), "admin" (the
	// admin token), "off" (no sink), or "auto": open on a sandbox, off
	// otherwise (docs/sandbox.md#who-may-post-to-the-sink).
	Access string `toml:"access"`
}

// Who may post to /sink/{name} (sink.access).
const (
	SinkAccessAuto  = "auto"
	SinkAccessOpen  = "open"
	SinkAccessAdmin = "admin"
	SinkAccessOff   = "off"
)

type LogConfig struct {
	// Format is "text" or "json"; Level is "debug", "info", "warn" or "error".
	Format string `toml:"format"`
	Level  string `toml:"level"`
	// FlushInterval is how long access-log lines may wait in memory to be
	// written together; 0 writes each at once. Other lines never wait.
	FlushInterval Duration `toml:"flush_interval"`
}

// RecordingsConfig is [recordings]: where calls' recordings are kept, for
// how long, and the address their URLs give (docs/voicebot.md#recordings).
type RecordingsConfig struct {
	// Dir holds one WAV per recorded call; empty: "recordings" beside the
	// database.
	Dir string `toml:"dir"`
	// RetentionDays removes a recording this many days after its call
	// ended; 0 keeps it as long as its contact.
	RetentionDays int `toml:"retention_days"`
	// BaseURL starts recording_url; empty: this server's own address.
	BaseURL string `toml:"base_url"`
}

type MetricsConfig struct {
	// Listen is where GET /metrics is served; empty: on the main listener.
	Listen string `toml:"listen"`
}

// defaultSinkSecret is the sandbox's well-known sink secret; the demo
// tenant's webhook is signed with it.
// minContactFieldBytes is the least limits.max_contact_field_bytes may be:
// room for a phone number as people write it, "+84 (912) 345-678" and more.
const minContactFieldBytes = 64

const DefaultSinkSecret = "whsec_ZGlhbGJveC1zYW5kYm94LXNpbmstc2VjcmV0"

// Duration is a time.Duration written as "15s", "5m" in TOML and env.
type Duration struct{ time.Duration }

func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("not a duration like \"15s\" or \"5m\": %q", b)
	}
	d.Duration = v
	return nil
}

func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

func Durations(ss ...string) []Duration {
	out := make([]Duration, len(ss))
	for i, s := range ss {
		v, _ := time.ParseDuration(s)
		out[i] = Duration{v}
	}
	return out
}

// DefaultConfig is the configuration of `go run .` with no file.
func DefaultConfig() Config {
	return Config{
		Listen:   "127.0.0.1:8080",
		Database: "dialbox.db",
		API:      APIConfig{ErrorHTTPStatus: StatusModeSemantic},
		Limits: LimitsConfig{MaxContactsPerRequest: 10000, MaxBodyBytes: 16 << 20, Burst: 100,
			MaxConcurrentImports: 256, MaxQueuedContacts: 10_000_000, MemoryMiB: 100, GCPercent: 400,
			MaxContactFieldBytes: 1024, MaxContactBytes: 8192},
		HTTP: HTTPConfig{ReadHeaderTimeout: Duration{10 * time.Second}, ReadTimeout: Duration{time.Minute},
			WriteTimeout: Duration{time.Minute}, IdleTimeout: Duration{2 * time.Minute}, ShutdownTimeout: Duration{10 * time.Second},
			TrustedProxies: []string{}},
		Phone:  PhoneConfig{DefaultRegion: "VN"},
		Engine: EngineConfig{Enabled: true, PollInterval: Duration{time.Second}},
		Simulator: SimulatorConfig{
			Seed:      1,
			TimeScale: 1,
		},
		Dialer: DialerConfig{Kind: DialerSimulated},
		SIP: SIPConfig{Listen: ":5060", RTPPorts: "10000-20000", RingTimeout: Duration{45 * time.Second},
			NumberFormat: sipcall.NumberE164},
		TTS: TTSConfig{Engine: TTSEspeak, Voice: "vi", CacheMaxMiB: 1024, CacheMaxAge: Duration{7 * 24 * time.Hour}, CacheMinFreeMiB: 1024},
		ASR: ASRConfig{Language: "vi", SampleRate: 8000, Timeout: Duration{15 * time.Second}},
		LLM: LLMConfig{Timeout: Duration{15 * time.Second}},
		Webhooks: WebhooksConfig{
			Workers:       8,
			Timeout:       Duration{15 * time.Second},
			RetrySchedule: Durations("0s", "5s", "5m", "30m", "2h", "5h", "10h", "10h"),
			// A quarter of the workers: one stuck receiver leaves the others
			// six of eight.
			MaxInFlightPerEndpoint: 2,
		},
		Recordings: RecordingsConfig{RetentionDays: 90},
		Admin:      AdminConfig{WrongTokensPerAddress: 5, WrongTokensOverall: 30, WrongTokenBackoff: Duration{2 * time.Second}},
		Console:    ConsoleConfig{Enabled: true, SessionMaxAge: Duration{12 * time.Hour}},
		Journal:    JournalConfig{MaxEntries: 1000, MaxAge: Duration{time.Hour}, MaxBodyBytes: 4096, MaxBytes: 16 << 20},
		Sink: SinkConfig{Secret: DefaultSinkSecret, MaxMessages: 1000, MaxBytes: 8 << 20, MaxBodyBytes: 64 << 10,
			Access: SinkAccessAuto},
		Log:     LogConfig{Format: "text", Level: "info", FlushInterval: Duration{100 * time.Millisecond}},
		Cluster: ClusterConfig{Lease: Duration{30 * time.Second}},
		// Empty, not nil: what config.example.toml's "allow = []" reads as.
		Destinations: destinations.Rules{Allow: []string{}, Deny: []string{}},
	}
}
