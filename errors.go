package main

import (
	"errors"
	"fmt"
	"net/http"
)

// APIError is an error body of the public API: {"status":0,"code":N,"message":"..."}.
type APIError struct {
	Code    int          `json:"code"`
	Message string       `json:"message"`
	Details []FieldError `json:"details,omitempty"`
}

// FieldError says which input field was wrong and why (extension of the
// 400 Validation Failed body).
type FieldError struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

func (e *APIError) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

// The codes and messages of the spec's error tables, spelled as the spec does,
// plus dialbox's documented extensions (3001, 404, 413, 429).
var (
	errUnauthorized     = &APIError{Code: 401, Message: "Unauthorized"}
	errWalletExpired    = &APIError{Code: 1104, Message: "Portal wallet is expired"}
	errWalletEmpty      = &APIError{Code: 1105, Message: "Portal wallet is out of money"}
	errAppNotFound      = &APIError{Code: 1201, Message: "Application is not found"}
	errContentEmpty     = &APIError{Code: 1208, Message: "Scenario content is empty"}
	errImportFailed     = &APIError{Code: 1402, Message: "Import contacts failed"}
	errAllInvalid       = &APIError{Code: 1403, Message: "All contacts is invalid"}
	errPoolUnavailable  = &APIError{Code: 2301, Message: "Pool hotline is not available"}
	errUnknownA         = &APIError{Code: 9999, Message: "Unknown error"}
	errUnknownB         = &APIError{Code: 9999, Message: "Uknown error"}
	errSystemC          = &APIError{Code: 500, Message: "Lỗi hệ thống"}
	errScenarioNotFound = &APIError{Code: 3001, Message: "Scenario is not found"}
	errCampaignNotFound = &APIError{Code: 404, Message: "Campaign is not found"}
	errTooManyContacts  = &APIError{Code: 413, Message: "Too many contacts"}
	errRateLimited      = &APIError{Code: 429, Message: "Too many requests"}
	// errOverloaded sheds an import over limits.max_concurrent_imports.
	errOverloaded = &APIError{Code: 429, Message: "Too many requests",
		Details: []FieldError{{Field: "contacts", Reason: "too many imports in progress; retry shortly"}}}
)

// errQueueFull sheds an import that would leave an application with more
// than limits.max_queued_contacts contacts waiting to be called.
func errQueueFull(queued, max int64, adding int) *APIError {
	return &APIError{Code: 429, Message: "Too many requests", Details: []FieldError{{Field: "contacts",
		Reason: fmt.Sprintf("%d contacts are queued, at most %d may be (limits.max_queued_contacts); these %d must wait until calls finish some", queued, max, adding)}}}
}

// validationError is 400 Validation Failed naming the offending fields.
func validationError(details ...FieldError) *APIError {
	return &APIError{Code: 400, Message: "Validation Failed", Details: details}
}

// errNotFound is the store's answer for a row that does not exist for the
// tenant asking.
var errNotFound = errors.New("not found")

// Error-to-HTTP-status modes (config api.error_http_status).
const (
	StatusModeSemantic = "semantic"
	StatusModeAlways   = "always_200"
)

// httpStatusFor maps an error code to the HTTP status of its body in the
// "semantic" mode (DESIGN §3).
func httpStatusFor(code int) int {
	switch code {
	case 400:
		return http.StatusBadRequest
	case 401, 1201:
		return http.StatusUnauthorized
	case 1104, 1105:
		return http.StatusPaymentRequired
	case 3001, 404:
		return http.StatusNotFound
	case 413:
		return http.StatusRequestEntityTooLarge
	case 1208, 1403:
		return http.StatusUnprocessableEntity
	case 429:
		return http.StatusTooManyRequests
	case 2301:
		return http.StatusServiceUnavailable
	default: // 1402, 500, 9999 and anything unforeseen
		return http.StatusInternalServerError
	}
}
