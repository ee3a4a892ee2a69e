package main

import (
	"net/http"
	"testing"
)

// TestRateLimit: an application over limits.burst gets 429 Too many
// requests with Retry-After, in the envelope, while another application's
// bucket is untouched.
func TestRateLimit(t *testing.T) {
	s := startServer(t, testFixtures, "DIALBOX_LIMITS_RATE_PER_SECOND=0.01", "DIALBOX_LIMITS_BURST=2")
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
