package config

import (
	"dialbox/internal/proxy"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/nyaruka/phonenumbers"
)

// How a config is read: the TOML file, then DIALBOX_* variables over it,
// and errors that name the file, the line and the key.

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
	applyKeyEnv(&cfg, env)
	applyLLMEnv(&cfg.LLM, env)
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
		if tag == "" || tag == "-" { // "-": not a key (a secret read elsewhere)
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
