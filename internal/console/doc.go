// Package console owns the web console at /console/ (docs/console.md): the
// supervisor's pages (overview, progress, contacts, webhook deliveries),
// the QA engineer's (request journal with "copy as curl", fault rules, the
// sink, the clock), their live updates, the sign-in with the admin token,
// sessions and CSRF tokens, and the templates and static files it embeds.
//
// It may import internal/config, internal/domain, internal/httpx (error
// pages, query parameters, served files), internal/sandbox and
// internal/sandboxclock (the sandbox's parts it shows), internal/proxy,
// and the types it shows of internal/engine and internal/dialer. It asks
// the admin API through Reads, Actions and Sandbox, the engine through
// Engine and the SIP dialer through TrunkUses, which it declares; it
// imports neither the admin API nor the root package.
package console
