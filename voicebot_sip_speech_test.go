package main

import (
	"context"
	"io"
	"path/filepath"
	"testing"
)

// TestSIPSpeechNeedsARecognizer: on real calls, a stored speech gather
// stops the start naming the scenario and step until [asr] names an
// engine; then dialbox starts.
func TestSIPSpeechNeedsARecognizer(t *testing.T) {
	dir := t.TempDir()
	fixtures := filepath.Join(dir, "fixtures.toml")
	writeFileAt(t, fixtures, voicebotFixtures(speechScenario))
	cfg := filepath.Join(dir, "dialbox.toml")
	writeFileAt(t, cfg, "[dialer]\nkind = \"sip\"\n[sip]\nlisten = \"127.0.0.1:0\"\nrtp_ports = \"\"\n"+
		"[[sip.trunks]]\nname = \"main\"\naddress = \"127.0.0.1:5999\"\n")
	run := func(env ...string) error {
		m := NewMain(io.Discard)
		m.Log = testLogger(t)
		if err := m.ParseFlags([]string{"--config", cfg, "--listen", "127.0.0.1:0", "--database", filepath.Join(dir, "dialbox.db"),
			"--fixtures", fixtures}, append(env, "DIALBOX_ENGINE_ENABLED=false")); err != nil {
			t.Fatal(err)
		}
		err := m.Run(context.Background())
		if err == nil {
			m.Close()
		}
		return err
	}
	err := run()
	want := `scenario "ask" of application "bot-key" cannot run here: steps[0] "ask": gather.input: a speech gather needs a recognizer on real calls: set [asr] engine`
	if err == nil || err.Error() != want {
		t.Errorf("without a recognizer: %v, want %q", err, want)
	}
	if err := run("DIALBOX_ASR_ENGINE=command", "DIALBOX_ASR_COMMAND=recognize {wav} {hints}"); err != nil {
		t.Errorf("with the command engine: %v", err)
	}
}
