package main

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// demoTenant is the demo fixture with its webhook on this server's sink. It
// keeps the secret of an existing demo tenant, so tokens printed at start
// still work after a reset.
func (m *Main) demoTenant(ctx context.Context, now time.Time) *FixtureApp {
	fa := demoFixture(now)
	if old, err := m.store.DemoApp(ctx); err == nil {
		fa.APISecret = old.APISecret
	}
	fa.Webhooks = []FixtureWebhook{{URL: sinkURL(m.URL(), "demo"), Secret: m.Config.Sink.Secret}}
	return fa
}

// printDemo prints the demo tenant's credentials and one working curl line
// per operation, if the database has a demo tenant.
func (m *Main) printDemo(ctx context.Context) error {
	app, err := m.store.DemoApp(ctx)
	if errors.Is(err, errNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	token, err := MintToken(app, time.Now())
	if err != nil {
		return err
	}
	base := m.URL()
	auth := "-H 'Authorization: Bearer " + token + "'"
	fmt.Fprintf(m.Stdout, `
dialbox %s is serving on %s

Demo tenant
  API key:      %s
  API secret:   %s
  ACCESS_TOKEN: %s

Operation A, add contacts to a scenario:
  curl -s -X POST %s/api/v1/public-api/scenarios/%s/calls %s -H 'Content-Type: application/json' -d '{"contacts":[{"phone_number":"0912345678","danh_xung":"Anh","ho_ten":"Nguyen Van A"}]}'

Operation B, list scenarios:
  curl -s '%s/api/v1/public-api/scenarios?limit=10&offset=0' %s

Operation C, add contacts to a campaign:
  curl -s -X POST %s/api/v1/public-api/campaign %s -H 'Content-Type: application/json' -d '{"campaign_id":"%s","contacts":[{"phone_number":"+84 987 654 321","danh_xung":"Chị","ho_ten":"Tran Thi B"}]}'

The demo contacts are called by the simulated dialer (+84900000001..7 give
each outcome; see the README) and every result is posted, signed, to the
built-in webhook sink. Read it with the admin token (printed on the first
start, or admin.token):
  curl -s %s/admin/v1/sink -H 'Authorization: Bearer ADMIN_TOKEN'

`, versionString(), base, app.APIKey, app.APISecret, token,
		base, demoScenarioID, auth, base, auth, base, auth, demoCampaignID, base)
	return nil
}
