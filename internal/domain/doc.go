// Package domain holds what dialbox means by its words, with no I/O: the
// entities (applications, scenarios, campaigns, contacts, calls, wallets),
// call outcomes and a call's request and result, the API's domain errors,
// the calling rules (call windows, holds, advertising limits), phone
// numbers, and the payloads webhooks carry. Every other package may import
// it; it imports only dialbox's small libraries (docs/architecture.md).
package domain
