package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"dialbox/internal/sipcall"
	"dialbox/internal/tts"
)

// Dialer kinds (dialer.kind).
const (
	DialerSimulated = "simulated"
	DialerSIP       = "sip"
)

// TTS engines (tts.engine).
const (
	TTSEspeak  = "espeak-ng"
	TTSCommand = "command"
	TTSHTTP    = "http"
	TTSOpenAI  = "openai"
)

// Trunk defaults for keys a [[sip.trunks]] table leaves out.
const (
	defaultTrunkChannels = 30
	defaultTrunkCPS      = 5
)

type DialerConfig struct {
	// Kind is "simulated" (the default) or "sip": real calls through the
	// trunks of [sip], with prompts spoken by [tts].
	Kind string `toml:"kind"`
}

// SIPConfig is dialbox's SIP user agent and the trunks it calls through;
// read only when dialer.kind is "sip", checked always.
type SIPConfig struct {
	// Listen is host:port; an empty host is the address the system
	// reaches the trunks from (sipcall.Options.ListenAddr).
	Listen     string `toml:"listen"`
	ExternalIP string `toml:"external_ip"`
	// RTPPorts is "min-max"; empty lets the system pick each port.
	RTPPorts     string     `toml:"rtp_ports"`
	RingTimeout  Duration   `toml:"ring_timeout"`
	NumberFormat string     `toml:"number_format"`
	Trunks       []SIPTrunk `toml:"trunks"`
}

// SIPTrunk is one [[sip.trunks]] table. Its Password never reaches a log,
// an answer of the API or /metrics: String and LogValue leave it out.
type SIPTrunk struct {
	Name      string `toml:"name"`
	Address   string `toml:"address"`
	Transport string `toml:"transport"`
	Username  string `toml:"username"`
	Password  string `toml:"password"`
	Register  bool   `toml:"register"`
	// MaxChannels bounds the calls up at once on the trunk; MaxCPS the
	// calls started per second. Left out (0): 30 and 5.
	MaxChannels int `toml:"max_channels"`
	MaxCPS      int `toml:"max_cps"`
	// NumberFormat overrides sip.number_format for this trunk.
	NumberFormat string `toml:"number_format"`
}

func (t SIPTrunk) SIPCall(defaultFormat string) sipcall.Trunk {
	format := t.NumberFormat
	if format == "" {
		format = defaultFormat
	}
	return sipcall.Trunk{Name: t.Name, Address: t.Address, Transport: t.Transport, Username: t.Username,
		Password: t.Password, Register: t.Register, NumberFormat: format}
}

// String describes the trunk without its password.
func (t SIPTrunk) String() string { return t.SIPCall("").String() }

// GoString keeps %#v (and %+v of a Config) from printing the password.
func (t SIPTrunk) GoString() string { return t.String() }

// Format keeps every verb from printing the password.
func (t SIPTrunk) Format(f fmt.State, _ rune) { fmt.Fprint(f, t.String()) }

type TTSConfig struct {
	// Engine is "espeak-ng", "command", "http" or "openai".
	Engine string `toml:"engine"`
	Voice  string `toml:"voice"`
	// Command is the argv, split at spaces, of a program writing a WAV to
	// stdout; "{text}" and "{voice}" in its arguments are substituted,
	// "{text}" only where it cannot be an option (tts.NewCommand), else
	// the text is on its stdin.
	Command string `toml:"command"`
	// URL is a GET URL template answering a WAV ("http"), or the
	// /v1/audio/speech endpoint ("openai").
	URL string `toml:"url"`
	// Model is the "openai" engine's model.
	Model string `toml:"model"`
	// APIKey is the "openai" engine's key, from DIALBOX_TTS_API_KEY only.
	APIKey Secret `toml:"-"`
	// CacheDir keeps the renderings; empty: "tts-cache" beside the database.
	CacheDir string `toml:"cache_dir"`
	// The cache's bounds (docs/sip.md#text-to-speech), each 0 for none: its
	// total size, how long a rendering stays unused, and the free space a
	// rendering stored must leave on its file system.
	CacheMaxMiB     int64    `toml:"cache_max_mib"`
	CacheMaxAge     Duration `toml:"cache_max_age"`
	CacheMinFreeMiB int64    `toml:"cache_min_free_mib"`
}

// cacheLimits are the cache's bounds in bytes.
func (t TTSConfig) cacheLimits() tts.CacheLimits {
	return tts.CacheLimits{MaxBytes: t.CacheMaxMiB << 20, MaxAge: t.CacheMaxAge.Duration, MinFree: t.CacheMinFreeMiB << 20}
}

// fillTrunkDefaults gives each trunk the defaults of the keys it leaves out.
func fillTrunkDefaults(c *SIPConfig) {
	for i := range c.Trunks {
		t := &c.Trunks[i]
		if t.Transport == "" {
			t.Transport = "udp"
		}
		if t.MaxChannels == 0 {
			t.MaxChannels = defaultTrunkChannels
		}
		if t.MaxCPS == 0 {
			t.MaxCPS = defaultTrunkCPS
		}
	}
}

// trunkPasswordEnv is the variable that sets a trunk's password:
// DIALBOX_SIP_TRUNK_<NAME>_PASSWORD, the name upper case with anything but
// letters and digits as "_".
func trunkPasswordEnv(name string) string {
	return "DIALBOX_SIP_TRUNK_" + strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		}
		return '_'
	}, name) + "_PASSWORD"
}

// applyTrunkEnv sets trunk passwords from the environment, which keeps
// them out of the config file.
func applyTrunkEnv(c *SIPConfig, env []string) {
	for i := range c.Trunks {
		want := trunkPasswordEnv(c.Trunks[i].Name) + "="
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, want); ok {
				c.Trunks[i].Password = v
			}
		}
	}
}

// parsePortRange reads "min-max"; empty is 0, 0 (the system picks).
func ParsePortRange(s string) (lo, hi int, err error) {
	if s == "" {
		return 0, 0, nil
	}
	a, b, ok := strings.Cut(s, "-")
	lo, err1 := strconv.Atoi(strings.TrimSpace(a))
	hi, err2 := strconv.Atoi(strings.TrimSpace(b))
	switch {
	case !ok || err1 != nil || err2 != nil:
		return 0, 0, fmt.Errorf("%q is not a range like \"10000-20000\" (or empty: any free port)", s)
	case lo < 1024 || hi > 65535:
		return 0, 0, fmt.Errorf("%q must lie within 1024-65535", s)
	case lo+2 > hi:
		return 0, 0, fmt.Errorf("%q: min must be below max by at least 2 (RTP and RTCP take a pair)", s)
	}
	return lo, hi, nil
}

func validNumberFormat(f string) bool {
	return f == sipcall.NumberE164 || f == sipcall.NumberE164Digits || f == sipcall.NumberNational
}

// VoicebotConfig is [voicebot]: what scripts on real calls read.
type VoicebotConfig struct {
	// PromptsDir holds the WAV files of play steps; empty: "prompts"
	// beside the database.
	PromptsDir string `toml:"prompts_dir"`
}

// TrunkNames are sip.trunks' names, in order.
func (s SIPConfig) TrunkNames() []string {
	names := make([]string, len(s.Trunks))
	for i, t := range s.Trunks {
		names[i] = t.Name
	}
	return names
}

// PoolTrunks are the trunks a hotline pool may name; nil with the
// simulated dialer, which has none and accepts any.
func (c Config) PoolTrunks() map[string]bool {
	if c.Dialer.Kind != DialerSIP {
		return nil
	}
	names := map[string]bool{}
	for _, t := range c.SIP.Trunks {
		names[t.Name] = true
	}
	return names
}

// badKeyf is badKey with a formatted message.
func badKeyf(key, format string, args ...any) error {
	return badKey(key, fmt.Sprintf(format, args...))
}

func (c *Config) checkDialer() error {
	return oneOf("dialer.kind", c.Dialer.Kind, DialerSimulated, DialerSIP)
}

// checkSIP checks [sip] and its trunks; dialer.kind = "sip" needs one.
func (c *Config) checkSIP() error {
	s := c.SIP
	host, portStr, err := net.SplitHostPort(s.Listen)
	port, perr := strconv.Atoi(portStr)
	if err != nil || perr != nil || port < 0 || port > 65535 || (host != "" && net.ParseIP(host) == nil) {
		return badKeyf("sip.listen", "%q is not an IP address and port like \"10.0.0.5:5060\" (or \":5060\": the address the trunks are reached from)", s.Listen)
	}
	if s.ExternalIP != "" && net.ParseIP(s.ExternalIP) == nil {
		return badKeyf("sip.external_ip", "%q is not an IP address", s.ExternalIP)
	}
	lo, hi, err := ParsePortRange(s.RTPPorts)
	if err != nil {
		return badKeyf("sip.rtp_ports", "%v", err)
	}
	if port != 0 && lo <= port && port <= hi {
		return badKeyf("sip.rtp_ports", "%q holds the SIP port %d of sip.listen", s.RTPPorts, port)
	}
	if s.RingTimeout.Duration <= 0 {
		return badKey("sip.ring_timeout", "must be positive")
	}
	if !validNumberFormat(s.NumberFormat) {
		return badKey("sip.number_format", `must be "e164", "e164_digits" or "national"`)
	}
	names := map[string]bool{}
	for i, t := range s.Trunks {
		if err := t.Check(fmt.Sprintf("sip.trunks[%d]", i), names); err != nil {
			return err
		}
		names[t.Name] = true
	}
	if c.Dialer.Kind == DialerSIP && len(s.Trunks) == 0 {
		return badKey("sip.trunks", `dialer.kind = "sip" needs at least one [[sip.trunks]]`)
	}
	return nil
}

// check validates one trunk under key; names holds the earlier trunks'.
// Messages quote a key's own value, never the password.
func (t SIPTrunk) Check(key string, names map[string]bool) error {
	switch {
	case t.Name == "":
		return badKey(key+".name", "is required")
	case names[t.Name]:
		return badKeyf(key+".name", "%q names an earlier trunk too", t.Name)
	case !validTrunkAddress(t.Address):
		return badKeyf(key+".address", "%q is not host:port", t.Address)
	case t.Transport != "udp" && t.Transport != "tcp":
		return badKey(key+".transport", `must be "udp" or "tcp"`)
	case t.NumberFormat != "" && !validNumberFormat(t.NumberFormat):
		return badKey(key+".number_format", `must be "e164", "e164_digits" or "national" (or left out: sip.number_format)`)
	case t.MaxChannels < 1:
		return badKey(key+".max_channels", "must be at least 1")
	case t.MaxCPS < 1:
		return badKey(key+".max_cps", "must be at least 1")
	case t.Register && t.Username == "":
		return badKey(key+".username", "is required with register = true: the user the trunk registers")
	case t.Username != "" && t.Password == "":
		// Most likely a misspelt variable: starting anyway would fail
		// every call 401/407 (docs/sip.md#security).
		return badKeyf(key+".password", "is empty while username is %q: set %s (or password in this file)",
			t.Username, trunkPasswordEnv(t.Name))
	}
	return nil
}

func (c *Config) checkTTS() error {
	switch {
	case c.TTS.CacheMaxMiB < 0:
		return badKey("tts.cache_max_mib", "must not be negative (0: no size bound)")
	case c.TTS.CacheMaxAge.Duration < 0:
		return badKey("tts.cache_max_age", "must not be negative (0: no age bound)")
	case c.TTS.CacheMinFreeMiB < 0:
		return badKey("tts.cache_min_free_mib", "must not be negative (0: no free-space floor)")
	}
	switch c.TTS.Engine {
	case TTSEspeak:
	case TTSCommand:
		if _, err := tts.NewCommand(strings.Fields(c.TTS.Command)); err != nil {
			return badKeyf("tts.command", "%v", err)
		}
	case TTSHTTP:
		if _, err := tts.NewHTTP(c.TTS.URL, 0); err != nil {
			return badKeyf("tts.url", "%v", err)
		}
	case TTSOpenAI:
		if _, err := tts.NewOpenAI(c.TTS.URL, c.TTS.Model, "", 0); err != nil {
			return badKeyf("tts.url", "%v", err)
		}
	default:
		return badKey("tts.engine", `must be "espeak-ng", "command", "http" or "openai"`)
	}
	return nil
}

// validTrunkAddress: host:port, or a bare host (port 5060).
func validTrunkAddress(a string) bool {
	host, portStr, err := net.SplitHostPort(a)
	if err != nil {
		host, portStr = strings.Trim(a, "[]"), "5060"
	}
	port, err := strconv.Atoi(portStr)
	return host != "" && !strings.ContainsAny(host, " /@;") && err == nil && port >= 1 && port <= 65535
}

// ttsEngine builds the configured engine behind a disk cache.
func (c *Config) TTSEngine(cacheDir string) (*tts.Cache, error) {
	var engine tts.Engine
	switch c.TTS.Engine {
	case TTSCommand:
		cmd, err := tts.NewCommand(strings.Fields(c.TTS.Command))
		if err != nil {
			return nil, err
		}
		engine = cmd
	case TTSHTTP:
		h, err := tts.NewHTTP(c.TTS.URL, 0)
		if err != nil {
			return nil, err
		}
		engine = h
	case TTSOpenAI:
		o, err := tts.NewOpenAI(c.TTS.URL, c.TTS.Model, string(c.TTS.APIKey), 0)
		if err != nil {
			return nil, err
		}
		engine = o
	default:
		engine = tts.NewEspeak("")
	}
	return tts.NewCache(cacheDir, engine, c.TTS.cacheLimits())
}
