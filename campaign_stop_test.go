package main

import (
	"strings"
	"testing"

	"dialbox/internal/domain"
)

// Stopping a campaign pauses it and ends each contact it had queued
// CANCELED, never dialled, with an attempt record, its call_blocks row and
// its contact.completed event; the scenario's other contacts and other
// campaigns' stay queued.
func TestAdminStopCampaign(t *testing.T) { eachBackend(t, testAdminStopCampaign) }

func testAdminStopCampaign(t *testing.T, backend string) {
	s := startSandboxOn(t, backend) // the engine is off: every contact stays queued until the stop
	s.admin(t, "POST", "/apps/qa-key/webhooks", `{"url":"https://example.com/hook","events":["contact.completed"]}`, nil)
	var contacts []string
	for range 7 {
		contacts = append(contacts, `{"phone_number":"0912345678","ho_ten":"A"}`)
	}
	if st, e := s.public(t, "qa-key", "qa-secret", "POST", pathC, `{"campaign_id":"camp-1","contacts":[`+strings.Join(contacts, ",")+`]}`); st != 200 {
		t.Fatalf("C: %+v", e)
	}
	if st, e := qaImport(t, s, oneContact); st != 200 {
		t.Fatalf("A: %+v", e)
	}
	var c domain.Campaign
	s.admin(t, "POST", "/apps/qa-key/campaigns/camp-1/stop", "", &c)
	if !c.Paused {
		t.Errorf("a stopped campaign is not paused: %+v", c)
	}
	for query, want := range map[string]int{
		`SELECT count(*) FROM contacts WHERE campaign_id = 'camp-1' AND state = 'done' AND outcome = 'CANCELED' AND attempts = 1`: 7,
		`SELECT count(*) FROM contacts WHERE campaign_id IS NULL AND state = 'queued'`:                                            1,
		`SELECT count(*) FROM calls WHERE outcome = 'CANCELED' AND cause = 487 AND hotline = ''`:                                  7,
		`SELECT count(*) FROM call_blocks WHERE reason = 'campaign_stopped'`:                                                      7,
		`SELECT count(*) FROM webhook_messages WHERE event_type = 'contact.completed' AND payload LIKE '%"CANCELED"%'`:            7,
	} {
		if got := queryInt(t, s.m.store, query); got != want {
			t.Errorf("%s: %d, want %d", query, got, want)
		}
	}
	var p struct{ Contacts []domain.ContactRecord }
	s.admin(t, "GET", "/apps/qa-key/contacts?campaign_id=camp-1&state=queued", "", &p)
	if len(p.Contacts) != 0 {
		t.Errorf("%d contacts of the stopped campaign still queued", len(p.Contacts))
	}
	s.adminFail(t, "POST", "/apps/qa-key/campaigns/nope/stop", "", 404)
	s.adminFail(t, "POST", "/apps/other-key/campaigns/camp-1/stop", "", 404)
}
