package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestRateLimit: an application over limits.burst gets 429 Too many
// requests with Retry-After, in the envelope, while another application's
// bucket is untouched.
func TestRateLimit(t *testing.T) { eachBackend(t, testRateLimit) }

func testRateLimit(t *testing.T, backend string) {
	s := startServerOn(t, backend, testFixtures, "DIALBOX_LIMITS_RATE_PER_SECOND=0.01", "DIALBOX_LIMITS_BURST=2")
	qa := "Bearer " + mintFor(t, s, "qa-key")
	other := "Bearer " + mintFor(t, s, "other-key")
	for i := 0; i < 2; i++ {
		if status, body := s.do(t, http.MethodGet, pathB+"?fields=name", qa, ""); status != http.StatusOK {
			t.Fatalf("request %d within the burst: %d %s", i+1, status, body)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, s.url+pathB, nil)
	req.Header.Set("Authorization", qa)
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("over the burst: HTTP %d, Retry-After %q; want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	status, body := s.do(t, http.MethodGet, pathB, qa, "")
	if want := `{"status":0,"code":429,"message":"Too many requests"}`; status != http.StatusTooManyRequests || string(body) != want {
		t.Errorf("over the burst: %d %s, want 429 %s", status, body, want)
	}
	if status, body := s.do(t, http.MethodGet, pathB, other, ""); status != http.StatusOK {
		t.Errorf("another tenant is limited too: %d %s", status, body)
	}
}

// TestImportsShedOverLimit: with every import slot taken, one more import is
// answered 429 with Retry-After at once instead of queueing.
func TestImportsShedOverLimit(t *testing.T) { eachBackend(t, testImportsShedOverLimit) }

func testImportsShedOverLimit(t *testing.T, backend string) {
	s := startServerOn(t, backend, testFixtures, "DIALBOX_LIMITS_MAX_CONCURRENT_IMPORTS=1")
	api := "Bearer " + mintFor(t, s, "qa-key")
	slots := s.m.api.imports
	slots <- struct{}{} // an import in progress holds the only slot
	status, body := s.do(t, http.MethodPost, opA("sc-remind"), api, `{"contacts":[{"phone_number":"0912000001"}]}`)
	if status != http.StatusTooManyRequests || !strings.Contains(string(body), `"code":429`) {
		t.Fatalf("import over the limit: %d %s, want 429", status, body)
	}
	<-slots
	if status, body := s.do(t, http.MethodPost, opA("sc-remind"), api, `{"contacts":[{"phone_number":"0912000001"}]}`); status != http.StatusOK {
		t.Fatalf("import once the slot is free: %d %s", status, body)
	}
}
