package main

import (
	"dialbox/internal/admin"
	"dialbox/internal/domain"
	"encoding/json"
	"errors"
	"testing"
)

// TestNormalizePhone: the forms people and CRMs write are read as the
// region's numbers and come out in E.164; anything that is not a valid
// number is refused with the reason the skipped contact carries.
func TestNormalizePhone(t *testing.T) {
	for _, c := range []struct{ raw, region, want string }{
		{"0912345678", "VN", "+84912345678"},      // national, trunk prefix 0
		{"912345678", "VN", "+84912345678"},       // national, no trunk prefix
		{"84912345678", "VN", "+84912345678"},     // country code without +
		{"+84912345678", "VN", "+84912345678"},    // already E.164
		{"+84 912 345 678", "VN", "+84912345678"}, // spaces
		{"+84-912-345-678", "VN", "+84912345678"}, // dashes
		{"(091) 234-5678", "VN", "+84912345678"},  // brackets
		{"0912.345.678", "VN", "+84912345678"},    // dots
		{" 0912345678 ", "VN", "+84912345678"},    // padding
		{"02873000001", "VN", "+842873000001"},    // a landline
		{"028 7300 0001", "VN", "+842873000001"},
		{"+1 650 253 0000", "VN", "+16502530000"},  // another country, by its code
		{"tel:+84912345678", "VN", "+84912345678"}, // RFC 3966
		{"TEL:+84-912-345-678", "VN", "+84912345678"},
		{"6502530000", "US", "+16502530000"}, // phone.default_region decides
		{"+84912345678", "", "+84912345678"}, // no region: E.164 still reads
	} {
		got, err := domain.NormalizePhone(c.raw, c.region)
		if err != nil || got != c.want {
			t.Errorf("normalizePhone(%q, %q) = %q, %v; want %q", c.raw, c.region, got, err, c.want)
		}
	}
	for _, c := range []struct{ raw, region string }{
		{"", "VN"},
		{"abc", "VN"},
		{"1", "VN"},
		{"091234567", "VN"},     // a digit short
		{"091234567890", "VN"},  // too long
		{"0912345678abc", "VN"}, // trailing letters
		{"0012345678", "VN"},    // no such prefix
		{"+84000000000", "VN"},  // not an assigned range
		{"0912345678", "US"},    // a VN number read as a US one
		{"0912345678", ""},      // national form without a region
	} {
		if got, err := domain.NormalizePhone(c.raw, c.region); !errors.Is(err, domain.ErrInvalidPhone) && !errors.Is(err, domain.ErrPhoneLetter) {
			t.Errorf("normalizePhone(%q, %q) = %q, %v; want it refused", c.raw, c.region, got, err)
		}
	}
}

// TestPhoneLetters: a phone_number with a letter in it is not a number the
// phone library may read as keypad digits ("09123ABC78" is not
// +84912322278); everything else parses as before.
func TestPhoneLetters(t *testing.T) {
	for _, raw := range []string{"09123ABC78", "0912345abc", "O912345678", "0912345678 ext. 12", "tel:0912345678;ext=12", "tel:+84912345abc",
		"09123đ5678", "+84 912 345 67X"} {
		if e164, err := domain.NormalizePhone(raw, "VN"); err != domain.ErrPhoneLetter {
			t.Errorf("%q: %q, %v; want %v", raw, e164, err, domain.ErrPhoneLetter)
		}
	}
	for raw, want := range map[string]string{"0912345678": "+84912345678", "+84 912 345 678": "+84912345678",
		"84-912-345-678": "+84912345678", "(028) 7300 0001": "+842873000001"} {
		if got, err := domain.NormalizePhone(raw, "VN"); got != want || err != nil {
			t.Errorf("%q: %q, %v; want %q", raw, got, err, want)
		}
	}
}

// TestPhoneLettersSkipped: through operation A the contact is skipped with
// its reason, the others are added.
func TestPhoneLettersSkipped(t *testing.T) { eachBackend(t, testPhoneLettersSkipped) }

func testPhoneLettersSkipped(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	status, body := s.do(t, "POST", opA("sc-remind"), bearer(t, "qa-key", "qa-secret"),
		`{"contacts":[{"phone_number":"09123ABC78","ho_ten":"A"},{"phone_number":"0912345679","ho_ten":"B"}]}`)
	var ok struct {
		Result []map[string]string `json:"result"`
	}
	if status != 200 || json.Unmarshal(body, &ok) != nil || len(ok.Result) != 1 || ok.Result[0]["so_dien_thoai"] != "+84912345679" {
		t.Fatalf("HTTP %d %s", status, body)
	}
	var list struct {
		Imports []domain.ImportRecord `json:"imports"`
	}
	s.admin(t, "GET", "/apps/qa-key/imports", "", &list)
	var im admin.ImportWithSkipped
	s.admin(t, "GET", "/apps/qa-key/imports/"+list.Imports[0].ID, "", &im)
	if len(im.SkippedContacts) != 1 || im.SkippedContacts[0].Position != 0 || im.SkippedContacts[0].Reason != domain.ErrPhoneLetter.Error() {
		t.Errorf("skipped: %+v", im.SkippedContacts)
	}
	status, body = s.do(t, "POST", opA("sc-remind"), bearer(t, "qa-key", "qa-secret"), `{"contacts":[{"phone_number":"09123ABC78"}]}`)
	if status != 422 || !json.Valid(body) {
		t.Errorf("only a lettered number: HTTP %d %s", status, body)
	}
}

func BenchmarkNormalizePhone(b *testing.B) {
	for b.Loop() {
		domain.NormalizePhone("+84 912 345 678", "VN")
	}
}
