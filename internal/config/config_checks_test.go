package config

import (
	"errors"
	"testing"
)

// A key that takes one of a few words is refused with all of them listed,
// in the words each message has always had.
func TestOneOfMessages(t *testing.T) {
	for _, tc := range []struct {
		set      func(*Config)
		key, msg string
	}{
		{func(c *Config) { c.API.ErrorHTTPStatus = "loud" }, "api.error_http_status", `must be "semantic" or "always_200"`},
		{func(c *Config) { c.Sink.Access = "public" }, "sink.access", `must be "auto", "open", "admin" or "off"`},
		{func(c *Config) { c.Log.Format = "xml" }, "log.format", `must be "text" or "json"`},
		{func(c *Config) { c.Dialer.Kind = "pstn" }, "dialer.kind", `must be "simulated" or "sip"`},
	} {
		c := DefaultConfig()
		tc.set(&c)
		var ce *ConfigError
		if err := c.Validate(); !errors.As(err, &ce) || ce.Key != tc.key || ce.Msg != tc.msg {
			t.Errorf("%s: Validate() = %v, want %s: %s", tc.key, err, tc.key, tc.msg)
		}
	}
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
}

// The garbage collector's pace is a percent Go accepts; GOGC's "off" has
// no place here (limits.memory_mib bounds memory instead).
func TestGCPercentIsChecked(t *testing.T) {
	c := DefaultConfig()
	c.Limits.GCPercent = 0
	var ce *ConfigError
	if err := c.Validate(); !errors.As(err, &ce) || ce.Key != "limits.gc_percent" {
		t.Errorf("gc_percent 0: Validate() = %v, want an error naming limits.gc_percent", err)
	}
}
