// Package cli owns dialbox's command line but for `dialbox serve`: the
// help text, the flags every command shares (the config file, then
// DIALBOX_* variables, then the flags), and the commands that work on the
// database directly (docs/operations.md). It imports internal/config,
// internal/domain, internal/auth (to mint a token), internal/importer (the
// rules of an import, with internal/httpx's wording of its refusals),
// internal/store (for the database's name as messages show it) and
// dialbox's small libraries; main.go hands it the store it works on, in
// Parts.
package cli
