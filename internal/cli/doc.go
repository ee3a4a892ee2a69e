// Package cli owns dialbox's command line but for `dialbox serve`: the
// help text, the flags every command shares (the config file, then
// DIALBOX_* variables, then the flags), and the commands that work on the
// database directly (docs/operations.md). It imports internal/config,
// internal/domain, internal/auth (to mint a token) and dialbox's small
// libraries; the store it works on is handed in by main.go as Parts.
package cli
