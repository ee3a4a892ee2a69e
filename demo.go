package main

import (
	"context"
	"dialbox/internal/admin"
	"dialbox/internal/auth"
	"dialbox/internal/config"
	"dialbox/internal/domain"
	"dialbox/internal/store"
	"errors"
	"fmt"
	"strings"
	"time"
)

// demoTenant is the demo fixture with its webhook on the sink of the node
// that delivers, so it works from every node of a cluster. It
// keeps the secret of an existing demo tenant, so tokens printed at start
// still work after a reset.
func (m *Main) demoTenant(ctx context.Context, now time.Time) *store.FixtureApp {
	fa := store.DemoFixture(now)
	if old, err := m.store.DemoApp(ctx); err == nil {
		fa.APISecret = old.APISecret
	}
	fa.Webhooks = []store.FixtureWebhook{{URL: domain.LocalSinkURL("demo"), Secret: m.Config.Sink.Secret}}
	return fa
}

// printDemo prints the demo tenant's credentials and one working curl line
// per operation, if the database has a demo tenant.
func (m *Main) printDemo(ctx context.Context) error {
	app, err := m.store.DemoApp(ctx)
	if errors.Is(err, domain.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	token, err := auth.MintToken(app, time.Now())
	if err != nil {
		return err
	}
	base := m.URL()
	sink, err := m.sinkCommand(ctx, base)
	if err != nil {
		return err
	}
	auth := "-H 'Authorization: Bearer " + token + "'"
	fmt.Fprintf(m.Stdout, `
dialbox %s is serving on %s

Demo tenant
  API key:      %s
  API secret:   %s
  ACCESS_TOKEN: %s

Operation A, add contacts to a scenario:
  curl -s -X POST %s/api/v1/public-api/scenarios/%s/calls %s -H 'Content-Type: application/json' -d '{"contacts":[{"phone_number":"%s","danh_xung":"Anh","ho_ten":"Nguyen Van A"}]}'

Operation B, list scenarios:
  curl -s '%s/api/v1/public-api/scenarios?limit=10&offset=0' %s

Operation C, add contacts to a campaign:
  curl -s -X POST %s/api/v1/public-api/campaign %s -H 'Content-Type: application/json' -d '{"campaign_id":"%s","contacts":[{"phone_number":"%s","danh_xung":"Chị","ho_ten":"Tran Thi B"}]}'

%s %s
%s
`, versionString(), base, app.APIKey, app.APISecret, token,
		base, store.DemoScenarioID, auth, demoPhoneLocal, base, auth, base, auth, store.DemoCampaignID, demoPhoneSpaced,
		m.whoCallsDemo(), sink, m.consoleLine(base))
	return nil
}

// consoleLine points to the web console, when it is served.
func (m *Main) consoleLine(base string) string {
	if !m.Config.Console.Enabled {
		return ""
	}
	return "\nWatch the calls in the web console (sign in with the admin token):\n  " + base + "/console/\n"
}

// whoCallsDemo says what happens to the demo contacts: the simulator's
// quick test number, or, with real calls, the trunk.
func (m *Main) whoCallsDemo() string {
	if m.Config.Dialer.Kind == config.DialerSIP {
		return fmt.Sprintf(`dialbox calls the demo contacts for real, through the SIP trunk %q of
the demo pool (see docs/sip.md), and each result is posted, signed, to the
built-in webhook sink when the call ends.`, m.Config.SIP.Trunks[0].Name)
	}
	return `The simulated dialer calls the demo contacts: +84900000009 answers after
1 s and talks 2 s (+84900000001..8 give each outcome; see
docs/calling.md), and each result is posted, signed, to the built-in
webhook sink within seconds.`
}

// demoPhone is what the first-run block's commands call: the simulator's
// quick test number (answered after 1 s, 2 s of talk), so a person who runs
// them sees the results in the sink within seconds. Written as a CRM might,
// in local form for operation A and spaced for operation C.
const (
	demoPhoneLocal  = "0900000009"
	demoPhoneSpaced = "+84 900 000 009"
)

// sinkCommand is how the first-run block tells to read the sink, at base:
// a curl line only when it works as printed. A token dialbox generated is
// in the database, so it is printed; a token from DIALBOX_ADMIN_TOKEN is
// referred to by that variable, which the operator's shell has; a token
// from a config file is not copied to the output (nor is the token of an
// older dialbox, which kept only its hash), so the block says where it is.
func (m *Main) sinkCommand(ctx context.Context, base string) (string, error) {
	url := base + "/admin/v1/sink"
	switch {
	case m.Config.Admin.Token != "" && m.adminTokenFromEnv:
		return "Read it with the admin token:\n  curl -s " + url + ` -H "Authorization: Bearer $DIALBOX_ADMIN_TOKEN"`, nil
	case m.Config.Admin.Token != "":
		return "Read it with GET " + url + " and your admin.token as the bearer token.", nil
	}
	token, err := m.store.AdminSetting(ctx, admin.TokenPlainSetting)
	if err != nil || token == "" {
		return "Read it with GET " + url + " and the admin token printed on the first start.", err
	}
	return "Read it with the admin token:\n  curl -s " + url + " -H 'Authorization: Bearer " + token + "'", nil
}

// envValue is the value of key in env (KEY=value entries), "" when unset.
func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if val, ok := strings.CutPrefix(kv, key+"="); ok {
			v = val
		}
	}
	return v
}

// repointDemoSink moves a demo sink webhook an older dialbox made, with the
// address of the server that started last, to the sink of the node that
// delivers: with the old form a server started on another --listen, or a
// cluster whose last node stopped, posted the demo's results to nobody.
func (m *Main) repointDemoSink(ctx context.Context, now time.Time) error {
	app, err := m.store.DemoApp(ctx)
	if errors.Is(err, domain.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return m.store.RepointDemoSink(ctx, app.ID, domain.LocalSinkURL("demo"), now)
}
