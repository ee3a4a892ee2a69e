// Package httpx is the HTTP edge the public API, the admin API and the
// console share: the handler contract, the API envelope, reading JSON
// bodies (a string that is not UTF-8 refused by its field's name), writing
// answers (a file among them), the paged lists' query parameters, the
// router without redirects, the public operations A, B and C with their
// internal-error bodies, the per-application rate limits, and the one place
// where domain errors (internal/domain/errors.go) become each API's codes,
// messages and statuses.
//
// It imports internal/domain and no other dialbox package: the APIs and
// the console build on it, never the other way round.
package httpx
