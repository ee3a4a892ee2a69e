package domain

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"dialbox/internal/destinations"
	"dialbox/internal/script"
)

// Application is a tenant: its API key names it in ACCESS_TOKENs and its
// secret signs them.
type Application struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name"`
	APIKey    string    `json:"api_key"`
	APISecret string    `json:"-"`
	Disabled  bool      `json:"disabled"`
	IsDemo    bool      `json:"is_demo"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`

	// Destinations are the tenant's own allow and deny prefixes of the
	// destination policy (docs/compliance.md#destinations).
	Destinations destinations.Rules `json:"destinations"`
}

// An API key is a path segment of the admin API (/admin/v1/apps/{key}) and
// the apiKey claim of every ACCESS_TOKEN: letters, digits, '.', '_' and
// '-', starting with a letter or a digit, so that "." and "..", a '/' or a
// control character never become one (docs/admin.md#routes).
var apiKeyPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// apiSecretMinLength is the shortest secret the admin API and the CLI take,
// as admin.token: a secret signs the tenant's tokens, and a short one is
// guessed offline from any one of them.
const apiSecretMinLength = 16

// apiKeyProblem says what is wrong with key as an API key ("" if nothing).
func APIKeyProblem(key string) string {
	if apiKeyPattern.MatchString(key) {
		return ""
	}
	return "must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or a digit"
}

// apiSecretProblem says what is wrong with secret as a new API secret.
func APISecretProblem(secret string) string {
	if utf8.RuneCountInString(secret) >= apiSecretMinLength {
		return ""
	}
	return fmt.Sprintf("must have at least %d characters", apiSecretMinLength)
}

// RandomHex is n random bytes in hex: generated API keys, secrets and
// tokens.
func RandomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return hex.EncodeToString(b)
}

// Wallet is an application's balance. A postpaid wallet skips every balance
// and expiry check.
type Wallet struct {
	Prepaid        bool       `json:"prepaid"`
	Balance        int64      `json:"balance"`
	ExpiresAt      *time.Time `json:"expires_at"`
	PricePerCall   int64      `json:"price_per_call"`
	PricePerMinute int64      `json:"price_per_minute"`
}

// Expired reports whether a prepaid wallet is past its expiry at now.
func (w Wallet) Expired(now time.Time) bool {
	return w.Prepaid && w.ExpiresAt != nil && !now.Before(*w.ExpiresAt)
}

// Scenario statuses, as the public API spells them.
const (
	StatusDraft     = "DRAFT"
	StatusActive    = "ACTIVE"
	StatusReviewing = "REVIEWING"
	StatusReject    = "REJECT"
)

func ValidScenarioStatus(s string) bool {
	switch s {
	case StatusDraft, StatusActive, StatusReviewing, StatusReject:
		return true
	}
	return false
}

// CheckScenarioFields checks what a scenario must hold wherever it comes
// from (fixtures or the admin API).
func CheckScenarioFields(id, status string, fields []string, cc CallConfig) *FieldError {
	bad := func(field, reason string) *FieldError { return &FieldError{Field: field, Reason: reason} }
	if id == "" {
		return bad("id", "is required")
	}
	if status != "" && !ValidScenarioStatus(status) {
		return bad("status", "must be DRAFT, ACTIVE, REVIEWING or REJECT")
	}
	seen := map[string]bool{}
	for _, f := range fields {
		if f == "" || f == "phone_number" || f == "contact_id" || f == "so_dien_thoai" || seen[f] {
			return bad("personalized_fields", fmt.Sprintf("%q is empty, reserved or repeated", f))
		}
		seen[f] = true
	}
	switch {
	case cc.CallRouting != RoutingRandom && cc.CallRouting != RoutingRoundRobin:
		return bad("call_config.call_routing", "must be RANDOM or ROUND_ROBIN")
	case cc.MaxConcurrent < 1:
		return bad("call_config.max_concurrent", "must be at least 1")
	case cc.MaxDuration < 1:
		return bad("call_config.max_duration", "must be at least 1 second")
	case cc.ReCall.Times < 0:
		return bad("call_config.re_call.times", "must not be negative")
	case cc.ReCall.Delay < 0:
		return bad("call_config.re_call.delay", "must not be negative")
	}
	if _, err := ParseCallWindow(cc.CallWindow); err != nil {
		return bad("call_config.call_window", err.Error())
	}
	return cc.CheckPurpose(time.Now())
}

// Scenario is a calling script with its call settings.
type Scenario struct {
	AppID       int64
	ID          string
	Name        string
	Description string
	Status      string
	Content     string
	// Script, when set, is what a call runs instead of saying Content. It
	// is replaced, never changed in place, so clones may share it.
	Script             *script.Script
	PersonalizedFields []string
	CallConfig         CallConfig
	CreatedAt          time.Time
	UpdatedAt          time.Time
}

// CallScript is what an answered call runs: the scenario's script, or its
// content said once (script.FromContent).
func (sc *Scenario) CallScript() script.Script {
	if sc.Script != nil {
		return *sc.Script
	}
	return script.FromContent(sc.Content)
}

// HasNothingToSay is the 1208 rule: neither content nor a script.
func (sc *Scenario) HasNothingToSay() bool {
	return sc.Script == nil && strings.TrimSpace(sc.Content) == ""
}

// clone is a deep copy, so a cached scenario never changes under its readers.
func (sc *Scenario) Clone() *Scenario {
	c := *sc
	c.PersonalizedFields = slices.Clone(sc.PersonalizedFields)
	c.CallConfig.CallWindow.Days = slices.Clone(sc.CallConfig.CallWindow.Days)
	return &c
}

// CallConfig is how a scenario's contacts are dialled. Its JSON form is the
// one the real service uses; call_window is dialbox's addition.
type CallConfig struct {
	PoolHotlineKey      string     `json:"pool_hotline_key" toml:"pool_hotline_key"`
	CallRouting         string     `json:"call_routing" toml:"call_routing"`
	MaxConcurrent       int        `json:"max_concurrent" toml:"max_concurrent"`
	MaxDuration         int        `json:"max_duration" toml:"max_duration"`
	AllowDuplicatePhone bool       `json:"allow_duplicate_phone" toml:"allow_duplicate_phone"`
	ReCall              ReCall     `json:"re_call" toml:"re_call"`
	CallWindow          CallWindow `json:"call_window" toml:"call_window"`
	// AMD, on real calls, listens to the callee's first seconds for an
	// answering machine (docs/voicebot.md#answering-machine-detection).
	// Left out of JSON when off, so scenarios without it read as before.
	AMD bool `json:"amd,omitempty" toml:"amd"`
	// Record keeps each answered call's audio (docs/voicebot.md#recordings);
	// left out of JSON when off, like AMD.
	Record bool `json:"record,omitempty" toml:"record"`
	// Purpose is advertising or care (docs/compliance.md#advertising-calls).
	// Care, the default, is stored as "" and left out of JSON, so scenarios
	// without it read as before.
	Purpose string `json:"purpose,omitempty" toml:"purpose"`
}

// normalize writes a call config as it is stored and shown: days
// upper-case, care as no purpose.
func (cc *CallConfig) Normalize() {
	cc.CallWindow.normalizeDays()
	if cc.Purpose == PurposeCare {
		cc.Purpose = ""
	}
}

// ReCall says how often and after which outcomes a contact is called again.
type ReCall struct {
	Times       int  `json:"times" toml:"times"`
	Delay       int  `json:"delay" toml:"delay"` // seconds
	IsBusy      bool `json:"is_busy" toml:"is_busy"`
	IsNoAnswer  bool `json:"is_no_answer" toml:"is_no_answer"`
	IsFailed    bool `json:"is_failed" toml:"is_failed"`
	IsVoiceMail bool `json:"is_voice_mail" toml:"is_voice_mail"`
}

// CallWindow is the local time of day and week days in which calls may start.
type CallWindow struct {
	Start    string   `json:"start" toml:"start"`
	End      string   `json:"end" toml:"end"`
	Timezone string   `json:"timezone" toml:"timezone"`
	Days     []string `json:"days" toml:"days"`
}

// Call routing modes.
const (
	RoutingRandom     = "RANDOM"
	RoutingRoundRobin = "ROUND_ROBIN"
)

// DefaultCallConfig is what a scenario gets for every key it does not set.
func DefaultCallConfig() CallConfig {
	return CallConfig{
		PoolHotlineKey: "POOL_SYSTEM",
		CallRouting:    RoutingRoundRobin,
		MaxConcurrent:  10,
		MaxDuration:    300,
		ReCall:         ReCall{Delay: 300},
		CallWindow: CallWindow{
			Start:    "08:00",
			End:      "20:00",
			Timezone: "Asia/Ho_Chi_Minh",
			Days:     []string{"MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"},
		},
	}
}

// Campaign groups contacts of one scenario; a paused campaign is not dialled.
type Campaign struct {
	AppID      int64     `json:"-"`
	ID         string    `json:"id"`
	Name       string    `json:"name"`
	ScenarioID string    `json:"scenario_id"`
	Paused     bool      `json:"paused"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// Contact states.
const (
	ContactQueued  = "queued"
	ContactDialing = "dialing"
	ContactDone    = "done"
)

// contactStates are the states a contacts filter may name ("": any).
var ContactStates = map[string]bool{"": true, ContactQueued: true, ContactDialing: true, ContactDone: true}

// NewContact is a validated contact ready to be stored by an import.
type NewContact struct {
	Position int
	Input    any // the contact as decoded, kept to explain a later skip where the scenario refuses repeated phones
	ID       string
	Fields   []byte
	Phone    string // E.164
	// Echo is the contact as result[i] returns it once added (EchoJSON):
	// bytes, not the map they were made from, so an import of thousands
	// holds a few hundred bytes a contact until it is answered.
	Echo []byte
}

// SkippedContact is a contact of a request that was not added, and why.
type SkippedContact struct {
	Position int             `json:"position"`
	Input    json.RawMessage `json:"input"`
	Reason   string          `json:"reason"`
}

// ImportRequest is one call of operation A or C after validation.
type ImportRequest struct {
	AppID      int64
	ScenarioID string
	CampaignID string // empty for operation A
	// UniquePhone is false when the scenario allows duplicate phones.
	UniquePhone bool
	// MaxQueued refuses the import when it would leave the application with
	// more unfinished contacts (limits.max_queued_contacts); 0: no bound.
	MaxQueued int64
	Contacts  []NewContact
	Skipped   []SkippedContact
}

// AddedContact is a stored contact as operation A and C echo it.
type AddedContact struct {
	ID   string
	Echo []byte // EchoJSON
}

// MarshalJSON writes contact_id with the echoed fields, keys in byte order
// as the spec's sample shows them (contact_id, danh_xung, ho_ten, so_dien_thoai).
func (c AddedContact) MarshalJSON() ([]byte, error) {
	return c.appendJSON(nil), nil
}

// EchoJSON is a contact as operation A and C return it: its fields with
// the pair "contact_id": id, in place of any such field.
func EchoJSON(fields map[string]string, id string) []byte {
	n := 2 + len(`"contact_id":""`) + len(id)
	for k, v := range fields {
		n += len(k) + len(v) + 6
	}
	return appendStringMap(make([]byte, 0, n), fields, "contact_id", id)
}

// stringMapJSON is m as marshalJSON writes a map[string]string, in a
// buffer of the size it will most likely take.
func StringMapJSON(m map[string]string) []byte {
	n := 2
	for k, v := range m {
		n += len(k) + len(v) + 6
	}
	return appendStringMap(make([]byte, 0, n), m, "", "")
}

// addedJSON is operation A's and C's result, the added contacts, as JSON.
// Written by hand because encoding/json, through a map per contact, was a
// tenth of the CPU of 100-contact imports; FuzzAddedJSON holds it to the
// bytes marshalJSON writes.
func AddedJSON(added []AddedContact) json.RawMessage {
	b := make([]byte, 0, 128*len(added)+2)
	b = append(b, '[')
	for i, c := range added {
		if i > 0 {
			b = append(b, ',')
		}
		b = c.appendJSON(b)
	}
	return append(b, ']')
}

func (c AddedContact) appendJSON(b []byte) []byte {
	return append(b, c.Echo...)
}

// appendStringMap appends m as marshalJSON writes a map[string]string
// (keys in byte order), with the pair idKey: id in it when idKey is set,
// in place of any such key of m.
func appendStringMap(b []byte, m map[string]string, idKey, id string) []byte {
	var small [8]string // most contacts have a few fields: no allocation
	keys := small[:0]
	if idKey != "" {
		keys = append(keys, idKey)
	}
	for k := range m {
		if idKey == "" || k != idKey {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		if idKey != "" && k == idKey {
			b = appendJSONString(b, id)
		} else {
			b = appendJSONString(b, m[k])
		}
	}
	return append(b, '}')
}
