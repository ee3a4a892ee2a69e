// Package ops owns what an operator sees of a running dialbox: the
// operator routes (/metrics, /healthz, /readyz, /openapi.yaml) and their
// readiness checks, the registry of a server's metrics and the collectors
// read at each scrape (the database's values, the retained bytes, the TTS
// cache), the loggers, and the access log with its request ids and HTTP
// metrics wrapped around every route (docs/operations.md).
//
// It imports internal/config, internal/domain, internal/httpx (answers in
// the API's JSON) and internal/tts, never the
// root package: the store, the engine, webhook delivery and the TTS cache
// reach it through the small interfaces it declares, handed in by New.
package ops
