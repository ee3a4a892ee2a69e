package main

import "testing"

// TestNormalizePhone: the forms people and CRMs write are read as the
// region's numbers and come out in E.164; anything that is not a valid
// number is refused with the reason the skipped contact carries.
func TestNormalizePhone(t *testing.T) {
	for _, c := range []struct{ raw, region, want string }{
		{"0912345678", "VN", "+84912345678"},       // national, trunk prefix 0
		{"912345678", "VN", "+84912345678"},        // national, no trunk prefix
		{"84912345678", "VN", "+84912345678"},      // country code without +
		{"+84912345678", "VN", "+84912345678"},     // already E.164
		{"+84 912 345 678", "VN", "+84912345678"},  // spaces
		{"+84-912-345-678", "VN", "+84912345678"},  // dashes
		{"(091) 234-5678", "VN", "+84912345678"},   // brackets
		{"0912.345.678", "VN", "+84912345678"},     // dots
		{" 0912345678 ", "VN", "+84912345678"},     // padding
		{"tel:+84912345678", "VN", "+84912345678"}, // RFC 3966
		{"02873000001", "VN", "+842873000001"},     // a landline
		{"028 7300 0001", "VN", "+842873000001"},
		{"+1 650 253 0000", "VN", "+16502530000"}, // another country, by its code
		{"6502530000", "US", "+16502530000"},      // phone.default_region decides
		{"+84912345678", "", "+84912345678"},      // no region: E.164 still reads
	} {
		got, err := normalizePhone(c.raw, c.region)
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
		if got, err := normalizePhone(c.raw, c.region); err != errInvalidPhone {
			t.Errorf("normalizePhone(%q, %q) = %q, %v; want errInvalidPhone", c.raw, c.region, got, err)
		}
	}
}
