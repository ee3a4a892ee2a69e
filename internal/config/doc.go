// Package config owns dialbox's settings: their defaults, the TOML file,
// the DIALBOX_* variables, and the checks that refuse a bad value with its
// file, line and key (docs/configuration.md). It knows the bounds other
// parts hold their settings to (the journal's entry sizes, log levels), so
// a config is refused at start rather than failing later.
package config
