// Package cli owns dialbox's command line but for `dialbox serve`: the
// help text, the flags every command shares (the config file, then
// DIALBOX_* variables, then the flags), and the commands that work on the
// database directly (docs/operations.md). It imports internal/config,
// internal/domain, internal/auth (to mint a token), internal/admin (the
// scenario transitions the admin API takes too), internal/importer (the
// rules of an import, with internal/httpx's wording of its refusals),
// internal/dnc (reading a list file), internal/store (the file mechanics of
// backup, restore and migrate-to, and the database's name as messages show
// it) and dialbox's small libraries; main.go hands it, in Parts, the store
// it works on and the migrations it embeds.
package cli
