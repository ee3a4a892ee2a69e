package main

import (
	"context"
	"dialbox/internal/dnc"
	"dialbox/internal/domain"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// A list upload outlasting http.read_timeout and http.write_timeout still
// loads and is answered (docs/configuration.md#http): its deadlines follow
// the body while it keeps coming. The body here comes in 30 pieces 50 ms
// apart, three times the 500 ms both timeouts are set to, never pausing
// for as long as one.
func TestDNCSlowUploadOutlastsTheTimeouts(t *testing.T) {
	eachBackend(t, testDNCSlowUploadOutlastsTheTimeouts)
}

func testDNCSlowUploadOutlastsTheTimeouts(t *testing.T, backend string) {
	s := startSandboxOn(t, backend, "DIALBOX_HTTP_READ_TIMEOUT=500ms", "DIALBOX_HTTP_WRITE_TIMEOUT=500ms")
	const pieces = 30
	pr, pw := io.Pipe()
	go func() {
		started := time.Now()
		for i := range pieces {
			fmt.Fprintf(pw, "09130%05d\n", i)
			time.Sleep(50 * time.Millisecond)
		}
		// However fast the pieces went, the body outlasts the timeouts.
		for time.Since(started) < 1500*time.Millisecond {
			time.Sleep(50 * time.Millisecond)
			fmt.Fprint(pw, "\n")
		}
		pw.Close()
	}()
	req, err := http.NewRequest("PUT", s.url+"/admin/v1/apps/qa-key/dnc/numbers", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testAdminToken)
	req.Header.Set("Content-Type", "text/plain")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("the upload was cut off: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("the answer was cut off: %v", err)
	}
	var out struct {
		Result dnc.Report `json:"result"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &out) != nil || out.Result.Loaded != pieces {
		t.Fatalf("HTTP %d %s; want all %d numbers loaded", resp.StatusCode, body, pieces)
	}
	app, err := s.m.store.AppByKey(context.Background(), "qa-key")
	if err != nil {
		t.Fatal(err)
	}
	if n, _, _ := s.m.store.CountDNC(context.Background(), app.ID); n != pieces {
		t.Errorf("the list holds %d numbers, want %d", n, pieces)
	}
	// The deadlines are the configured ones again for the next request.
	if code, b := s.do(t, "GET", "/admin/v1/dnc", "Bearer "+testAdminToken, ""); code != 200 {
		t.Errorf("next request: HTTP %d %s", code, b)
	}
}

// `dialbox dnc import` beside a running engine, on its database: the
// engine sees the register at the next dial. The contacts are added after
// the import: the registered number ends DO_NOT_CALL in the advertising
// scenario, never dialled, and is called in the care scenario (the
// register restricts advertising calls only); an unlisted one is called.
func TestDNCImportBesideARunningServer(t *testing.T) {
	eachBackend(t, testDNCImportBesideARunningServer)
}

func testDNCImportBesideARunningServer(t *testing.T, backend string) {
	db := backendDatabase(t, backend)
	s, ids := fixtureStoreIn(t, db, adTenant("dnc-a"))
	dialer := newRecordingDialer()
	e := engStart(t, s, dialer, nil, dncAdClock())
	file := writeFile(t, "register.txt", "0913000101\n0913000102\n")
	var out strings.Builder
	if err := run(context.Background(), []string{"dnc", "import", file, "--database", db}, &out, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "2 numbers loaded") {
		t.Fatalf("import: %s", out.String())
	}
	contacts := engImport(t, s, ids[0], "sc", "", "+84913000101", "+84913000103")
	contacts = append(contacts, engImport(t, s, ids[0], "care", "", "+84913000101")...)
	e.Notify(ids[0])
	engWaitAllDone(t, s, ids[0], 3)
	if _, outcome, _ := engContact(t, s, contacts[0]); outcome != domain.OutcomeDoNotCall {
		t.Errorf("the number imported beside the engine ended %s in the advertising scenario", outcome)
	}
	if calls := engCalls(t, s, contacts[0]); len(calls) != 1 || calls[0].Hotline != "" {
		t.Errorf("the listed number's attempts: %+v", calls)
	}
	for _, id := range contacts[1:] {
		if _, outcome, _ := engContact(t, s, id); outcome == domain.OutcomeDoNotCall {
			t.Errorf("contact %s ended %s", id, outcome)
		}
	}
	if dialed := slices.Sorted(slices.Values(dialer.numbers())); !slices.Equal(dialed, []string{"+84913000101", "+84913000103"}) {
		t.Errorf("dialled %v: want the unlisted number and the care scenario's call to the registered one", dialed)
	}
}

// An upload's Content-Length is the client's word: room for its numbers
// is made as they arrive, never for bytes only declared, or a body that
// declares 2 GB and stalls would cost 160 MB before one byte is read
// (docs/compliance.md#loading-the-national-register).
func TestDNCUploadRoomFollowsTheBody(t *testing.T) {
	numbers, _, err := dnc.ReadFile(context.Background(), strings.NewReader("0912345678\n0912345679\n"),
		dnc.Length{Bytes: 2_000_000_000, Claimed: true}, "VN")
	if err != nil {
		t.Fatal(err)
	}
	if len(numbers) != 2 || cap(numbers) > 4096 {
		t.Errorf("2 numbers read with room made for %d", cap(numbers))
	}
}
