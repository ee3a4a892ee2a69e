package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"dialbox/internal/destinations"
	"dialbox/internal/proxy"
	"dialbox/internal/sipcall"

	"github.com/BurntSushi/toml"
	"github.com/nyaruka/phonenumbers"
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
	Voicebot   VoicebotConfig   `toml:"voicebot"`
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
			MaxConcurrentImports: 256, MaxQueuedContacts: 10_000_000, MemoryMiB: 100,
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

// ConfigError names the file (or environment variable), line and key of a
// bad setting so the start can stop with a message a person can act on.
type ConfigError struct {
	File string
	Line int
	Key  string
	Msg  string
}

func (e *ConfigError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	if e.Key != "" {
		return fmt.Sprintf("%s: %s: %s", loc, e.Key, e.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, e.Msg)
}

// decodeTOMLFile decodes path into v, lets after decode any toml.Primitive
// parts, refuses unknown keys, and turns every problem into a ConfigError
// with its line.
func DecodeTOMLFile(path string, v any, after func(toml.MetaData) error) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &ConfigError{File: path, Msg: err.Error()}
	}
	md, err := toml.Decode(string(data), v)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			// Line from the byte offset: Position.Line counts an error found at
			// a newline on the next line.
			line := pe.Position.Line
			if at := pe.Position.Start; at > 0 && at <= len(data) {
				line = strings.Count(string(data[:at]), "\n") + 1
			}
			return nil, &ConfigError{File: path, Line: line, Key: pe.LastKey, Msg: pe.Message}
		}
		// Type mismatches read "toml: line N (last key "k"): ...".
		ce := &ConfigError{File: path, Msg: err.Error()}
		if _, rest, ok := strings.Cut(err.Error(), "line "); ok {
			fmt.Sscanf(rest, "%d", &ce.Line)
			if _, k, ok := strings.Cut(rest, `(last key "`); ok {
				ce.Key, _, _ = strings.Cut(k, `"`)
				_, ce.Msg, _ = strings.Cut(rest, "): ")
			}
		}
		return nil, ce
	}
	if after != nil {
		if err := after(md); err != nil {
			var ce *ConfigError
			if errors.As(err, &ce) {
				ce.File, ce.Line = path, KeyLine(data, ce.Key)
			}
			return nil, err
		}
	}
	if und := md.Undecoded(); len(und) > 0 {
		key := und[0].String()
		return nil, &ConfigError{File: path, Line: KeyLine(data, key), Key: key, Msg: "unknown key"}
	}
	return data, nil
}

// LoadConfig reads the config file (if any) over the defaults, then applies
// DIALBOX_* environment variables, then validates.
func LoadConfig(path string, env []string) (Config, error) {
	cfg := DefaultConfig()
	var data []byte
	if path != "" {
		var err error
		if data, err = DecodeTOMLFile(path, &cfg, nil); err != nil {
			return cfg, err
		}
	}
	if err := applyEnv(&cfg, env); err != nil {
		return cfg, err
	}
	applyTrunkEnv(&cfg.SIP, env)
	fillTrunkDefaults(&cfg.SIP)
	if err := cfg.Validate(); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) && ce.File == "" {
			ce.File = path
			ce.Line = KeyLine(data, ce.Key)
		}
		return cfg, err
	}
	return cfg, nil
}

// trustedProxiesErr says what is wrong with http.trusted_proxies, if anything.
func trustedProxiesErr(list []string) error {
	_, err := proxy.Parse(list)
	return err
}

func supportedRegion(r string) bool {
	_, ok := phonenumbers.GetSupportedRegions()[r]
	return ok
}

// applyEnv sets every scalar key from DIALBOX_<SECTION>_<KEY> (upper case,
// dots as underscores): DIALBOX_LISTEN, DIALBOX_API_ERROR_HTTP_STATUS, ...
// Lists are comma-separated. Arrays of tables (simulator.rules) and maps
// (simulator.weights) are file-only.
func applyEnv(cfg *Config, env []string) error {
	vars := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "DIALBOX_") {
			vars[k] = v
		}
	}
	if len(vars) == 0 {
		return nil
	}
	return WalkKeys(reflect.ValueOf(cfg).Elem(), "", func(key string, f reflect.Value) error {
		name := "DIALBOX_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
		raw, ok := vars[name]
		if !ok {
			return nil
		}
		if err := setFromString(f, raw); err != nil {
			return &ConfigError{File: "environment " + name, Key: key, Msg: err.Error()}
		}
		return nil
	})
}

// walkKeys calls fn for every settable leaf of a config struct with its
// dotted TOML key.
func WalkKeys(v reflect.Value, prefix string, fn func(key string, f reflect.Value) error) error {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		tag := t.Field(i).Tag.Get("toml")
		if tag == "" {
			continue
		}
		key := tag
		if prefix != "" {
			key = prefix + "." + tag
		}
		f := v.Field(i)
		if f.Kind() == reflect.Struct && f.Type() != reflect.TypeOf(Duration{}) {
			if err := WalkKeys(f, key, fn); err != nil {
				return err
			}
			continue
		}
		if err := fn(key, f); err != nil {
			return err
		}
	}
	return nil
}

func setFromString(f reflect.Value, raw string) error {
	if d, ok := f.Addr().Interface().(*Duration); ok {
		return d.UnmarshalText([]byte(raw))
	}
	switch f.Kind() {
	case reflect.String:
		f.SetString(raw)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
		if err != nil {
			return fmt.Errorf("not an integer: %q", raw)
		}
		f.SetInt(n)
	case reflect.Float64:
		n, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
		if err != nil {
			return fmt.Errorf("not a number: %q", raw)
		}
		f.SetFloat(n)
	case reflect.Bool:
		b, err := strconv.ParseBool(strings.TrimSpace(raw))
		if err != nil {
			return fmt.Errorf("not true or false: %q", raw)
		}
		f.SetBool(b)
	case reflect.Slice:
		parts := strings.Split(raw, ",")
		s := reflect.MakeSlice(f.Type(), len(parts), len(parts))
		for i, p := range parts {
			if err := setFromString(s.Index(i), strings.TrimSpace(p)); err != nil {
				return err
			}
		}
		f.Set(s)
	default:
		return fmt.Errorf("cannot be set from the environment; use the config file")
	}
	return nil
}

// keyLine finds the line of a key in a TOML document. key is dotted, with
// [i] after the name of an array of tables ("applications[1].scenarios[0].status").
// When the key itself is not written (a default), it falls back to the line
// of its nearest written parent; 0 when nothing matches.
func KeyLine(data []byte, key string) int {
	for k := key; k != ""; k = parentKey(k) {
		if n := FindKeyLine(data, k); n > 0 {
			return n
		}
	}
	return 0
}

func parentKey(k string) string {
	if i := strings.LastIndexAny(k, ".["); i > 0 {
		return k[:i]
	}
	return ""
}

func FindKeyLine(data []byte, key string) int {
	// Keys from the TOML library (unknown keys) carry no [i]: they match
	// the first element of an array of tables that has them.
	same := func(p string) bool { return p == key || !strings.Contains(key, "[") && stripIndexes(p) == key }
	counts := map[string]int{} // array-of-tables path -> elements seen
	arrays := map[string]bool{}
	table := ""
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "[["):
			name := strings.TrimSpace(strings.Trim(strings.SplitN(line, "]]", 2)[0], "["))
			arrays[name] = true
			counts[name]++
			for p := range counts {
				if strings.HasPrefix(p, name+".") {
					delete(counts, p)
				}
			}
			table = indexedPath(name, arrays, counts)
		case strings.HasPrefix(line, "["):
			name := strings.TrimSpace(strings.Trim(strings.SplitN(line, "]", 2)[0], "["))
			table = indexedPath(name, arrays, counts)
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		default:
			k, _, ok := strings.Cut(line, "=")
			if !ok {
				continue
			}
			full := strings.Trim(strings.TrimSpace(k), `"`)
			if table != "" {
				full = table + "." + full
			}
			if same(full) {
				return i + 1
			}
		}
		if same(table) {
			return i + 1
		}
	}
	return 0
}

// stripIndexes turns "a[0].b[1].c" into "a.b.c".
func stripIndexes(p string) string {
	var b strings.Builder
	depth := 0
	for _, r := range p {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// indexedPath turns a table name into its indexed form using the current
// element of every array of tables on the way.
func indexedPath(name string, arrays map[string]bool, counts map[string]int) string {
	segs := strings.Split(name, ".")
	var b strings.Builder
	for i, s := range segs {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(strings.TrimSpace(s))
		if p := strings.Join(segs[:i+1], "."); arrays[p] {
			fmt.Fprintf(&b, "[%d]", counts[p]-1)
		}
	}
	return b.String()
}

// Error-to-HTTP-status modes (config api.error_http_status).
const (
	StatusModeSemantic = "semantic"
	StatusModeAlways   = "always_200"
)
