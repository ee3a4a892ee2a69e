// Package admin owns the admin API, /admin/v1 (docs/admin.md): its token
// and the limit on wrong ones, its routes, one file per resource, and the
// services its handlers share with the console (services.go), each rule
// written once. It asks of the store through the interfaces of store.go,
// one per part of a tenant, and is handed the sandbox's journal, fault
// rules and sink, the clocks, and what to wake, whole, by New.
//
// It may import internal/domain, internal/httpx, internal/auth (an
// application's access token), internal/sandbox, internal/sandboxclock,
// internal/dnc and internal/recordings (list and recording files),
// internal/config (a reset's configuration error) and dialbox's small
// libraries. Main and the CLI build on it, and the console reads its
// services through interfaces of its own; it imports none of them.
package admin
