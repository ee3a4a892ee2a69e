package main

import (
	"context"
	"encoding/json"
	"log/slog"
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
	log       *slog.Logger
	notify    func(appID int64) // told after contacts are added, so dialling starts at once; nil: no one
}

func NewImporter(store Store, cfg Config, log *slog.Logger, notify func(appID int64)) *Importer {
	return &Importer{store: store, region: cfg.Phone.DefaultRegion, maxQueued: cfg.Limits.MaxQueuedContacts,
		log: log, notify: notify}
}

// Import runs the checks docs/design.md#order-of-checks-for-operations-a-and-c orders after the body: content,
// wallet expiry, hotline pool, contact validation, then the store (which
// checks duplicates against queued contacts and the balance).
//
// It adds items (decoded JSON contacts) to sc, and to campaignID if set,
// for app at now. Refusals are domain errors; EALLINVALID comes with the
// result, whose skipped contacts are recorded. A failure of the store is
// EIMPORTFAILED, wrapping it.
func (im *Importer) Import(ctx context.Context, app *Application, sc *Scenario, campaignID string, items []any, now time.Time) (*ImportResult, error) {
	if err := im.check(ctx, app, sc, now); err != nil {
		return nil, err
	}
	req := im.request(app, sc, campaignID, items)
	// The store records skipped contacts even when none is left (1403), and
	// checks duplicates against queued contacts and the balance (1105).
	res, err := im.store.Import(ctx, req, now)
	switch {
	case errorCode(err) == EINTERNAL:
		im.log.Error("import failed", "app", app.APIKey, "scenario", sc.ID, "err", err)
		return nil, &Error{Code: EIMPORTFAILED, Message: "Import contacts failed", Err: err}
	case err == nil && im.notify != nil:
		im.notify(app.ID)
	}
	return res, err
}

// check runs the checks docs/design.md#order-of-checks-for-operations-a-and-c orders before the contacts are
// looked at: content, wallet expiry, hotline pool (the import command too).
func (im *Importer) check(ctx context.Context, app *Application, sc *Scenario, now time.Time) error {
	if sc.HasNothingToSay() {
		return errContentEmpty
	}
	expired, err := im.store.WalletExpired(ctx, app.ID, now)
	if err != nil {
		return err
	}
	if expired {
		return errWalletExpired
	}
	ok, err := im.store.PoolAvailable(ctx, app.ID, sc.CallConfig.PoolHotlineKey)
	if err != nil {
		return err
	}
	if !ok {
		return errPoolUnavailable
	}
	return nil
}

// request validates the contacts of one import (operation A or C, or
// a chunk of `dialbox import`) for the store.
func (im *Importer) request(app *Application, sc *Scenario, campaignID string, items []any) ImportRequest {
	req := ImportRequest{AppID: app.ID, ScenarioID: sc.ID, CampaignID: campaignID,
		UniquePhone: !sc.CallConfig.AllowDuplicatePhone, MaxQueued: im.maxQueued}
	req.Contacts, req.Skipped = validateContacts(items, sc, im.region)
	return req
}

// validateContacts splits the request's contacts into those to add, with
// their normalized phone and echo fields, and those skipped with a reason.
func validateContacts(items []any, sc *Scenario, region string) ([]NewContact, []SkippedContact) {
	valid := make([]NewContact, 0, len(items))
	var skipped []SkippedContact
	seen := map[string]bool{}
	skip := func(i int, item any, reason string) {
		input, _ := marshalJSON(item)
		skipped = append(skipped, SkippedContact{Position: i, Input: input, Reason: reason})
	}
	phones := normalizePhones(items, region)
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
		phone, err := phones[i].e164, phones[i].err
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
		id, _ := uuid.NewV7()
		fields := stringMapJSON(echo)
		valid = append(valid, NewContact{Position: i, Input: item, ID: id.String(), Fields: fields, Phone: phone, Echo: echo})
	}
	return valid, skipped
}
