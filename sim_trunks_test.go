package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// A simulated server with [[sip.trunks]] holds them
// (docs/calling.md#trunks-in-simulation): the pool's calls go through the
// first trunk, and one of one channel carries one call at a time, read
// from the call records, though the pool's two hotlines, both free when
// the contacts arrive together, would carry two.
func TestSimulatorHoldsConfiguredTrunks(t *testing.T) {
	fx := writeFile(t, "fixtures.toml", adminFixtures)
	dir := filepath.Dir(fx)
	conf := filepath.Join(dir, "dialbox.toml")
	writeFileAt(t, conf, `
[simulator]
time_scale = 1000.0
[[sip.trunks]]
name = "main"
address = "127.0.0.1:9"
max_channels = 1
max_cps = 100
`)
	m := startMain(t, io.Discard, []string{"--config", conf, "--database", filepath.Join(dir, "dialbox.db"), "--fixtures", fx},
		[]string{"DIALBOX_ENGINE_ENABLED=true", "DIALBOX_LIMITS_RATE_PER_SECOND=0"}, nil)
	t.Cleanup(func() { m.Close() })
	s := &testServer{m: m, url: m.URL()}
	const contacts = 6
	body := `{"contacts":[` + strings.TrimSuffix(strings.Repeat(`{"phone_number":"0900000009","ho_ten":"A"},`, contacts), ",") + `]}`
	if status, b := s.do(t, "POST", opA("sc-remind"), bearer(t, "qa-key", "qa-secret"), body); status != 200 {
		t.Fatalf("A answered %d %s", status, b)
	}
	waitFor(t, "every contact called", func() bool {
		return queryInt(t, m.store, `SELECT count(*) FROM contacts WHERE state = 'done'`) == contacts
	})
	if n := queryInt(t, m.store, `SELECT count(*) FROM calls a JOIN calls b ON a.id < b.id
		WHERE a.started_at < b.ended_at AND b.started_at < a.ended_at`); n != 0 {
		t.Errorf("%d pairs of calls up at once on a trunk of 1 channel", n)
	}
}
