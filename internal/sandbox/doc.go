// Package sandbox owns the QA sandbox's in-memory aids
// (docs/sandbox.md): the request journal of the public API (Journal), the
// fault rules that shape its answers, the simulated calls' outcomes and
// webhook deliveries (Faults), and the built-in webhook receiver (Sink).
// None survives a restart; a reset empties them.
//
// It may import internal/config, internal/domain and internal/httpx (the
// public operations and their error bodies), the router's parameters and
// the Standard Webhooks library; of the store it reads only a campaign's
// scenario, through Campaigns. The public API, the admin API, the console, the engine and
// the webhook deliverer use it; it imports none of them.
package sandbox
