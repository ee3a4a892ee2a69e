package main

import (
	"bytes"
	"dialbox/internal/auth"
	"dialbox/internal/config"
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"dialbox/internal/recordings"
	"dialbox/internal/store"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Fuzz targets: run one longer with
//   go test -run '^$' -fuzz '^FuzzAddToScenario$' -fuzztime 5m .
// Invariants: no panic, every malformed input gets the API's error envelope
// with a 4xx (never a 5xx), and valid inputs round-trip.

const fuzzFixtures = `
[[applications]]
name = "Fuzz tenant"
api_key = "fuzz-key"
api_secret = "fuzz-secret"
  [applications.wallet]
  prepaid = false
  [[applications.hotline_pools]]
  key = "POOL_SYSTEM"
  numbers = ["02873000001"]
  [[applications.scenarios]]
  id = "sc-fuzz"
  status = "ACTIVE"
  content = "Xin chào {{ho_ten}}"
  personalized_fields = ["danh_xung", "ho_ten"]
    [applications.scenarios.call_config]
    allow_duplicate_phone = true
  [[applications.campaigns]]
  id = "camp-fuzz"
  scenario_id = "sc-fuzz"
`

// fuzzServer starts dialbox in-process (engine off, so the fuzzer measures
// the request path only) and returns its handler and a valid token.
func fuzzServer(f *testing.F) (http.Handler, string) {
	fixtures := writeFile(f, "fixtures.toml", fuzzFixtures)
	m := startMain(f, io.Discard, []string{"--database", filepath.Join(filepath.Dir(fixtures), "fuzz.db"), "--fixtures", fixtures},
		[]string{"DIALBOX_ENGINE_ENABLED=false"}, func(m *Main) { m.Log = discardLog() })
	f.Cleanup(func() { m.Close() })
	app, err := m.store.AppByKey(f.Context(), "fuzz-key")
	if err != nil {
		f.Fatal(err)
	}
	return m.server.Handler, mintToken(f, app)
}

// checkEnvelope fails unless the response is the API's JSON envelope: a
// success body with a result, or an error body with a 4xx status.
func checkEnvelope(t *testing.T, rec *httptest.ResponseRecorder) map[string]json.RawMessage {
	t.Helper()
	var body map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("not a JSON body (HTTP %d): %q", rec.Code, rec.Body.String())
	}
	switch string(body["status"]) {
	case "1":
		if rec.Code != http.StatusOK || body["result"] == nil {
			t.Fatalf("success body with HTTP %d: %s", rec.Code, rec.Body.String())
		}
	case "0":
		if rec.Code < 400 || rec.Code > 499 || body["code"] == nil || body["message"] == nil {
			t.Fatalf("error body with HTTP %d: %s", rec.Code, rec.Body.String())
		}
	default:
		t.Fatalf("no status in body: %s", rec.Body.String())
	}
	return body
}

func fuzzPost(h http.Handler, token, path string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func FuzzAddToScenario(f *testing.F) {
	for _, seed := range []string{
		`{"contacts":[{"phone_number":"0912345678","ho_ten":"Nguyen Van A","danh_xung":"Anh"}]}`,
		`{"contacts":[{"phone_number":"+84 912 345 678"},{"phone_number":"84912345678","so":42}]}`,
		`{"contacts":[{"phone_number":"abc"}]}`,
		`{"contacts":[1,"x",null,[]]}`,
		`{"contacts":{}}`,
		`{}`,
		`[]`,
		``,
		`{"contacts":[{"phone_number":"0912345678","ho_ten":{"a":1}}]}`,
	} {
		f.Add([]byte(seed))
	}
	h, token := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := fuzzPost(h, token, "/api/v1/public-api/scenarios/sc-fuzz/calls", body)
		out := checkEnvelope(t, rec)
		if string(out["status"]) != "1" {
			return
		}
		// Valid inputs round-trip: every added contact comes back with an
		// id and its phone in E.164.
		var added []map[string]string
		if err := json.Unmarshal(out["result"], &added); err != nil || len(added) == 0 {
			t.Fatalf("success without contacts: %s", rec.Body.String())
		}
		for _, c := range added {
			if c["contact_id"] == "" || !strings.HasPrefix(c["so_dien_thoai"], "+") {
				t.Fatalf("added contact without id or E.164 phone: %v", c)
			}
		}
	})
}

func FuzzAddToCampaign(f *testing.F) {
	for _, seed := range []string{
		`{"campaign_id":"camp-fuzz","contacts":[{"phone_number":"0912345678","ho_ten":"A"}]}`,
		`{"campaign_id":"nope","contacts":[{"phone_number":"0912345678"}]}`,
		`{"campaign_id":7,"contacts":[]}`,
		`{"contacts":[{"phone_number":"0912345678"}]}`,
		`{"campaign_id":"camp-fuzz"} trailing`,
	} {
		f.Add([]byte(seed))
	}
	h, token := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		checkEnvelope(t, fuzzPost(h, token, "/api/v1/public-api/campaign", body))
	})
}

func FuzzListScenarios(f *testing.F) {
	for _, seed := range []string{
		"", "status=ACTIVE", "limit=50&offset=0", "limit=0", "limit=51", "offset=-1",
		"fields=name,description", "fields=bogus", "status=active", "limit=1e3", "fields=,,id,",
	} {
		f.Add(seed)
	}
	h, token := fuzzServer(f)
	f.Fuzz(func(t *testing.T, query string) {
		req, err := http.NewRequest(http.MethodGet, "/api/v1/public-api/scenarios", nil)
		if err != nil {
			t.Skip()
		}
		req.URL.RawQuery = query
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		checkEnvelope(t, rec)
	})
}

func FuzzAuthenticate(f *testing.F) {
	for _, seed := range []string{
		"", "Bearer", "Bearer ", "Basic abc", "Bearer x.y.z",
		"Bearer eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJhcGlLZXkiOiJmdXp6LWtleSJ9.",
		"Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJhcGlLZXkiOjQyfQ.sig",
	} {
		f.Add(seed)
	}
	dir := f.TempDir()
	st, err := store.OpenSQLite(filepath.Join(dir, "auth.db"), sqliteMigrations(), store.NewMetrics(false), recordings.Files{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { st.Close() })
	fa := &store.FixtureApp{Name: "a", APIKey: "fuzz-key", APISecret: "fuzz-secret"}
	if err := st.ApplyFixtures(f.Context(), []*store.FixtureApp{fa}, time.Now()); err != nil {
		f.Fatal(err)
	}
	app, _ := st.AppByKey(f.Context(), "fuzz-key")
	good, _ := auth.MintToken(app, time.Now())
	f.Add("Bearer " + good)
	tokens := &auth.Cache{}
	f.Fuzz(func(t *testing.T, header string) {
		got, apiErr, err := tokens.Authenticate(t.Context(), st, header)
		switch {
		case err != nil:
			t.Fatalf("internal error for header %q: %v", header, err)
		case apiErr != nil && apiErr != httpx.ErrUnauthorized && apiErr != httpx.ErrAppNotFound:
			t.Fatalf("unexpected error %v for %q", apiErr, header)
		case apiErr == nil && (got == nil || got.APIKey != "fuzz-key"):
			t.Fatalf("accepted %q for %v", header, got)
		}
	})
}

func FuzzNormalizePhone(f *testing.F) {
	for _, seed := range []string{"0912345678", "84912345678", "+84 912 345 678", "+1 650 253 0000",
		"abc", "", "+", "0912345678 ext. 12", "(028) 7300 0001", "١٢٣"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		e164, err := domain.NormalizePhone(raw, "VN")
		if err != nil {
			return
		}
		if !strings.HasPrefix(e164, "+") {
			t.Fatalf("%q normalized to %q, not E.164", raw, e164)
		}
		again, err := domain.NormalizePhone(e164, "VN")
		if err != nil || again != e164 {
			t.Fatalf("E.164 %q of %q does not round-trip: %q, %v", e164, raw, again, err)
		}
	})
}

// FuzzAddedJSON: operation A's hand-written result, and the fields stored
// with each contact, are byte for byte what encoding/json writes without
// HTML escaping (marshalJSON, dialbox's one rule: internal/domain/jsonstring.go).
func FuzzAddedJSON(f *testing.F) {
	for _, seed := range [][3]string{{"0193b0a1-7c2e", "ho_ten", "Nguyễn Văn A"}, {"id", "contact_id", "x"},
		{"<&>", "\u2028\u2029", "\x00\x1f\b\f\n\r\t\"\\"}, {"\xff\xfe", "\xed\xa0\x80", "\x7f"}} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, id, key, value string) {
		echoes := []map[string]string{{key: value, "so_dien_thoai": value + key}, nil}
		added := []domain.AddedContact{{ID: id}, {ID: value}}
		want := make([]map[string]string, len(added))
		for i := range added {
			added[i].Echo = domain.EchoJSON(echoes[i], added[i].ID)
			want[i] = map[string]string{}
			for k, v := range echoes[i] {
				want[i][k] = v
			}
			want[i]["contact_id"] = added[i].ID
		}
		wantJSON := noHTMLEscape(t, want)
		if got := domain.AddedJSON(added); !bytes.Equal(got, wantJSON) {
			t.Fatalf("addedJSON\n got %s\nwant %s", got, wantJSON)
		}
		if got, _ := domain.MarshalJSON(added); !bytes.Equal(got, wantJSON) {
			t.Fatalf("marshalJSON through MarshalJSON\n got %s\nwant %s", got, wantJSON)
		}
		// The stored fields: the echo alone, whatever its keys.
		echo := map[string]string{key: value, id: key}
		wantFields := noHTMLEscape(t, echo)
		if got := domain.StringMapJSON(echo); !bytes.Equal(got, wantFields) {
			t.Fatalf("fields\n got %s\nwant %s", got, wantFields)
		}
	})
}

// noHTMLEscape is v as encoding/json's Encoder writes it with
// SetEscapeHTML(false), without the newline it ends with.
func noHTMLEscape(t *testing.T, v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// fuzzLoad writes data to a file and loads it with load; any failure must
// be a ConfigError naming that file, never a panic.
func fuzzLoad(t *testing.T, data string, load func(path string) error) {
	path := filepath.Join(t.TempDir(), "in.toml")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	err := load(path)
	var ce *config.ConfigError
	if err != nil && (!errors.As(err, &ce) || !strings.HasPrefix(err.Error(), path)) {
		t.Fatalf("error does not name the file: %v", err)
	}
}

func FuzzLoadConfig(f *testing.F) {
	if example, err := os.ReadFile("config.example.toml"); err == nil {
		f.Add(string(example))
	}
	for _, seed := range []string{"", "listen = 1", "[api]\nerror_http_status = \"x\"", "bogus = true",
		"[webhooks]\nretry_schedule = [\"1x\"]", "[[simulator.rules]]\nsuffix = \"1\""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		fuzzLoad(t, data, func(path string) error { _, err := config.LoadConfig(path, nil); return err })
	})
}

func FuzzLoadFixtures(f *testing.F) {
	f.Add(fuzzFixtures)
	for _, seed := range []string{"", "[[applications]]\napi_key = 1", "[[applications]]\napi_key = \"k\"",
		"[[applications]]\napi_key=\"k\"\napi_secret=\"s\"\n[[applications.scenarios]]\nid=\"x\"\n[applications.scenarios.call_config]\nmax_concurrent = \"ten\""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		fuzzLoad(t, data, func(path string) error { _, err := store.LoadFixtures(path); return err })
	})
}
