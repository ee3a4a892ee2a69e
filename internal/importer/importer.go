// Package importer owns the rules of adding contacts that operations A and
// C and `dialbox import` share (docs/design.md#order-of-checks-for-operations-a-and-c):
// the checks before the contacts are looked at, each contact's validation
// and sizes, then the store's import. It imports only domain and config;
// the store comes in as the narrow Store it declares (docs/architecture.md).
package importer

import (
	"context"
	"dialbox/internal/config"
	"dialbox/internal/domain"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/google/uuid"
)

// Importer holds the rules of adding contacts: can the scenario take any
// (content, wallet expiry, hotline pool), which contacts are valid, then
// the store (duplicates against queued contacts, the queue bound, the
// balance). Operations A and C and `dialbox import` all go through it, so
// a file and an API call accept and refuse the same contacts.
type Importer struct {
	store     Store
	region    string // phone.default_region, to read phone numbers
	maxQueued int64  // limits.max_queued_contacts
	sizes     contactLimits
	log       *slog.Logger
	notify    func(appID int64) // told after contacts are added, so dialling starts at once; nil: no one
}

// Store is what the importer asks of the store: the wallet and
// the hotline pool it checks, and the import itself.
type Store interface {
	WalletExpired(ctx context.Context, appID int64, now time.Time) (bool, error)
	PoolAvailable(ctx context.Context, appID int64, poolKey string) (bool, error)
	Import(ctx context.Context, req domain.ImportRequest, now time.Time) (*domain.ImportResult, error)
}

// New returns the importer of cfg's phone region and limits; notify, if
// not nil, is told of each application that got contacts.
func New(store Store, cfg config.Config, log *slog.Logger, notify func(appID int64)) *Importer {
	sizes := contactLimits{field: cfg.Limits.MaxContactFieldBytes, contact: cfg.Limits.MaxContactBytes}
	return &Importer{store: store, region: cfg.Phone.DefaultRegion, maxQueued: cfg.Limits.MaxQueuedContacts,
		sizes: sizes, log: log, notify: notify}
}

// Import runs the checks docs/design.md#order-of-checks-for-operations-a-and-c orders after the body: the
// contacts' sizes (the last check of the body), content, wallet expiry,
// hotline pool, contact validation, then the store (which checks
// duplicates against queued contacts and the balance).
//
// It adds items (decoded JSON contacts) to sc, and to campaignID if set,
// for app at now. Refusals are domain errors; EALLINVALID comes with the
// result, whose skipped contacts are recorded. A failure of the store is
// EIMPORTFAILED, wrapping it.
func (im *Importer) Import(ctx context.Context, app *domain.Application, sc *domain.Scenario, campaignID string, items []any, now time.Time) (*domain.ImportResult, error) {
	if err := im.checkSizes(items); err != nil {
		return nil, err
	}
	if err := im.check(ctx, app, sc, now); err != nil {
		return nil, err
	}
	req := im.request(app, sc, campaignID, items)
	// The store records skipped contacts even when none is left (1403), and
	// checks duplicates against queued contacts and the balance (1105).
	res, err := im.store.Import(ctx, req, now)
	switch {
	case domain.ErrorCode(err) == domain.EINTERNAL:
		im.log.Error("import failed", "app", app.APIKey, "scenario", sc.ID, "err", err)
		return nil, &domain.Error{Code: domain.EIMPORTFAILED, Message: "Import contacts failed", Err: err}
	case err == nil && im.notify != nil:
		im.notify(app.ID)
	}
	return res, err
}

// check runs the checks docs/design.md#order-of-checks-for-operations-a-and-c orders before the contacts are
// looked at: content, wallet expiry, hotline pool (the import command too).
func (im *Importer) check(ctx context.Context, app *domain.Application, sc *domain.Scenario, now time.Time) error {
	if sc.HasNothingToSay() {
		return domain.ErrContentEmpty
	}
	expired, err := im.store.WalletExpired(ctx, app.ID, now)
	if err != nil {
		return err
	}
	if expired {
		return domain.ErrWalletExpired
	}
	ok, err := im.store.PoolAvailable(ctx, app.ID, sc.CallConfig.PoolHotlineKey)
	if err != nil {
		return err
	}
	if !ok {
		return domain.ErrPoolUnavailable
	}
	return nil
}

// request validates the contacts of one import (operation A or C, or
// a chunk of `dialbox import`) for the store.
func (im *Importer) request(app *domain.Application, sc *domain.Scenario, campaignID string, items []any) domain.ImportRequest {
	req := domain.ImportRequest{AppID: app.ID, ScenarioID: sc.ID, CampaignID: campaignID,
		UniquePhone: !sc.CallConfig.AllowDuplicatePhone, MaxQueued: im.maxQueued}
	req.Contacts, req.Skipped = ValidateContacts(items, sc, im.region)
	return req
}

// ValidateContacts splits the request's contacts into those to add, with
// their normalized phone and echo fields, and those skipped with a reason.
func ValidateContacts(items []any, sc *domain.Scenario, region string) ([]domain.NewContact, []domain.SkippedContact) {
	valid := make([]domain.NewContact, 0, len(items))
	var skipped []domain.SkippedContact
	seen := map[string]bool{}
	skip := func(i int, item any, reason string) {
		input, _ := domain.MarshalJSON(item)
		skipped = append(skipped, domain.SkippedContact{Position: i, Input: input, Reason: reason})
	}
	phones := domain.NormalizePhones(items, region)
next:
	for i, item := range items {
		obj, ok := item.(map[string]any)
		if !ok {
			skip(i, item, "contact is not a JSON object")
			continue
		}
		if _, ok := obj["phone_number"].(string); !ok {
			skip(i, item, "phone_number is required and must be a string")
			continue
		}
		phone, err := phones[i].E164, phones[i].Err
		if err != nil {
			skip(i, item, err.Error())
			continue
		}
		echo := make(map[string]string, len(sc.PersonalizedFields)+len(obj))
		for _, f := range sc.PersonalizedFields {
			echo[f] = ""
		}
		for k, v := range obj {
			if k == "phone_number" {
				continue
			}
			switch v := v.(type) {
			case string:
				echo[k] = v
			case json.Number:
				echo[k] = v.String()
			case nil:
				echo[k] = ""
			default:
				skip(i, item, k+" must be a string or a number")
				continue next
			}
		}
		echo["so_dien_thoai"] = phone
		if !sc.CallConfig.AllowDuplicatePhone {
			if seen[phone] {
				skip(i, item, "phone_number repeats an earlier contact of this request")
				continue
			}
			seen[phone] = true
		}
		u, _ := uuid.NewV7()
		id := u.String()
		c := domain.NewContact{Position: i, ID: id, Fields: domain.StringMapJSON(echo), Phone: phone, Echo: domain.EchoJSON(echo, id)}
		if !sc.CallConfig.AllowDuplicatePhone {
			c.Input = item // to explain a skip if its phone is queued already
		}
		valid = append(valid, c)
	}
	return valid, skipped
}

// contactLimits bound what one contact may store
// (docs/design.md#contact-sizes): each field's name and value
// (limits.max_contact_field_bytes) and the whole contact
// (limits.max_contact_bytes), counted as the JSON dialbox stores.
type contactLimits struct{ field, contact int }

// maxSizeDetails bounds the details of a refusal for size: enough to fix
// a request, not a list as long as the request.
const maxSizeDetails = 10

// checkSizes refuses the whole import when a contact is over the limits,
// naming each such field (at most maxSizeDetails), before anything of it
// is stored: a skipped contact would store its input too.
func (im *Importer) checkSizes(items []any) error {
	var bad []domain.FieldError
	for i, item := range items {
		key, reason, over := im.Oversized(item)
		if !over {
			continue
		}
		field := fmt.Sprintf("contacts[%d]", i)
		if key != "" {
			field += "." + key
		}
		if bad = append(bad, domain.FieldError{Field: field, Reason: reason}); len(bad) == maxSizeDetails {
			break
		}
	}
	if len(bad) > 0 {
		return domain.ValidationError(bad...)
	}
	return nil
}

// Oversized says what of a contact is over the limits: the field's name
// (empty when it is the contact as a whole, or a name itself too long to
// repeat) and why. `dialbox import` skips such a row where operations A
// and C refuse the request.
func (im *Importer) Oversized(item any) (key, reason string, over bool) {
	l := im.sizes
	obj, ok := item.(map[string]any)
	if !ok {
		if n := jsonSize(item); n > l.contact {
			return "", fmt.Sprintf("is %d bytes, more than limits.max_contact_bytes (%d)", n, l.contact), true
		}
		return "", "", false
	}
	// Names in order, so the same request is always answered the same;
	// most contacts have a few fields, sorted without an allocation.
	var small [8]string
	keys := small[:0]
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	total := 2 + max(len(obj)-1, 0) // {} and the commas
	for _, k := range keys {
		name := domain.JSONStringSize(k)
		value, text := storedSize(obj[k])
		switch {
		case name > l.field:
			return "", fmt.Sprintf("has a field name of %d bytes, more than limits.max_contact_field_bytes (%d)", name, l.field), true
		case text > l.field:
			return k, fmt.Sprintf("is %d bytes, more than limits.max_contact_field_bytes (%d)", text, l.field), true
		}
		total += name + 2 + 1 + value // "name":value
	}
	if total > l.contact {
		return "", fmt.Sprintf("is %d bytes, more than limits.max_contact_bytes (%d)", total, l.contact), true
	}
	return "", "", false
}

// storedSize is the length of a field's value in the stored JSON, where a
// number is kept as the string it was written as, and of its text alone
// (without quotes): what a field's limit counts.
func storedSize(v any) (value, text int) {
	switch v := v.(type) {
	case string:
		n := domain.JSONStringSize(v)
		return n + 2, n
	case json.Number:
		return len(v) + 2, len(v)
	}
	n := jsonSize(v)
	return n, n
}

// jsonSize is the length of v's JSON as domain.MarshalJSON writes it, without
// writing it: contacts are measured on every import.
func jsonSize(v any) int {
	switch v := v.(type) {
	case string:
		return domain.JSONStringSize(v) + 2
	case json.Number:
		return len(v)
	case nil:
		return len("null")
	case bool:
		if v {
			return len("true")
		}
		return len("false")
	case map[string]any:
		n := 2 + max(len(v)-1, 0)
		for k, e := range v {
			n += domain.JSONStringSize(k) + 2 + 1 + jsonSize(e)
		}
		return n
	case []any:
		n := 2 + max(len(v)-1, 0)
		for _, e := range v {
			n += jsonSize(e)
		}
		return n
	}
	b, _ := domain.MarshalJSON(v) // not a decoded JSON value: not expected
	return len(b)
}
