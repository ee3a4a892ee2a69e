package domain

import (
	"errors"
	"fmt"
	"strconv"
)

// Error is a domain error: what went wrong, in dialbox's own terms. The
// store, the importer and the handlers return it; the HTTP edge (internal/httpx)
// alone turns it into an API's code, message and status. Any other error is
// internal: logged, and answered with the API's internal-error body.
type Error struct {
	Code    string       // one of the E* kinds below
	Message string       // for people: the admin API answers it as it is
	Details []FieldError // EINVALID: the wrong fields; EQUEUEFULL: why to wait
	// Entity is what ENOTFOUND did not find ("Scenario", "Campaign"): the
	// public API answers a code of its own for each.
	Entity string
	Err    error // EIMPORTFAILED: the cause
}

// FieldError says which input field was wrong and why (extension of the
// 400 Validation Failed body).
type FieldError struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

// Domain error kinds.
const (
	EINTERNAL        = "internal"
	EINVALID         = "invalid"          // bad input; Details name the fields
	ETOOLARGE        = "too_large"        // a body or a contact list over the limits
	ENOTFOUND        = "not_found"        // Entity says what
	ECONFLICT        = "conflict"         // already exists, or not in a state that allows it
	EBADCONFIG       = "bad_config"       // the fixtures file cannot be applied
	ECONTENTEMPTY    = "content_empty"    // the scenario has nothing to say
	EWALLETEXPIRED   = "wallet_expired"   // a prepaid wallet past its expiry
	EWALLETEMPTY     = "wallet_empty"     // a prepaid wallet cannot pay the calls
	EPOOLUNAVAILABLE = "pool_unavailable" // no enabled hotline in the scenario's pool
	EALLINVALID      = "all_invalid"      // no contact of an import was left to add
	EQUEUEFULL       = "queue_full"       // limits.max_queued_contacts
	EIMPORTFAILED    = "import_failed"    // storing an import failed (the cause is wrapped)
)

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes every error of a kind match that kind's sentinel below, so
// errors.Is(notFound("Scenario"), errNotFound) holds.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// errorCode is err's kind: EINTERNAL for an error that is not an *Error,
// "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// The kinds' sentinels: returned as they are where nothing more need be
// said, and matched with errors.Is.
var (
	ErrNotFound        = &Error{Code: ENOTFOUND, Message: "not found"}
	ErrConflict        = &Error{Code: ECONFLICT, Message: "already exists"}
	ErrTooLarge        = &Error{Code: ETOOLARGE, Message: "too many contacts"}
	ErrContentEmpty    = &Error{Code: ECONTENTEMPTY, Message: "scenario content is empty"}
	ErrWalletExpired   = &Error{Code: EWALLETEXPIRED, Message: "wallet is expired"}
	ErrWalletEmpty     = &Error{Code: EWALLETEMPTY, Message: "wallet is out of money"}
	ErrPoolUnavailable = &Error{Code: EPOOLUNAVAILABLE, Message: "hotline pool is not available"}
	ErrAllInvalid      = &Error{Code: EALLINVALID, Message: "all contacts are invalid"}
)

// notFound is ENOTFOUND for an entity; its message is the admin API's.
func NotFound(entity string) *Error {
	return &Error{Code: ENOTFOUND, Entity: entity, Message: entity + " is not found"}
}

// conflict is ECONFLICT with the admin API's message.
func Conflict(format string, args ...any) *Error {
	return &Error{Code: ECONFLICT, Message: fmt.Sprintf(format, args...)}
}

// invalid is EINVALID for one field.
func Invalid(field, reason string) *Error {
	return ValidationError(FieldError{Field: field, Reason: reason})
}

// validationError is EINVALID naming the offending fields.
func ValidationError(details ...FieldError) *Error {
	return &Error{Code: EINVALID, Message: "Validation Failed", Details: details}
}

// errQueueFull refuses an import that would leave an application with more
// than limits.max_queued_contacts contacts waiting to be called.
func ErrQueueFull(queued, max int64, adding int) *Error {
	return &Error{Code: EQUEUEFULL, Message: "too many contacts queued", Details: []FieldError{{Field: "contacts",
		Reason: fmt.Sprintf("%d contacts are queued, at most %d may be (limits.max_queued_contacts); these %d must wait until calls finish some", queued, max, adding)}}}
}

// quotedPrefix quotes what a client sent for a message about it: at most
// its first 40 characters, then "…", so a message (and a console session
// keeping it) never carries a whole field back.
func QuotedPrefix(s string) string {
	const keep = 40
	n := 0
	for i := range s {
		if n == keep {
			return strconv.Quote(s[:i]) + "…"
		}
		n++
	}
	return strconv.Quote(s)
}
