package sipcall

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nyaruka/phonenumbers"
)

// Number formats for the request-URI user (Trunk.NumberFormat).
const (
	NumberE164       = "e164"        // +84912345678
	NumberE164Digits = "e164_digits" // 84912345678
	NumberNational   = "national"    // 0912345678
)

var errNotE164 = errors.New("not an E.164 number")

// FormatNumber writes the E.164 number e164 as format asks. National
// numbers are the digits a caller inside the country dials: Vietnam's
// +84 becomes 0; other countries follow libphonenumber's national format
// (trunk prefix included) with its spaces and punctuation removed.
func FormatNumber(e164, format string) (string, error) {
	if !isE164(e164) {
		return "", fmt.Errorf("sipcall: number %q: %w", e164, errNotE164)
	}
	switch format {
	case NumberE164, "":
		return e164, nil
	case NumberE164Digits:
		return e164[1:], nil
	case NumberNational:
		if rest, ok := strings.CutPrefix(e164, "+84"); ok {
			return "0" + rest, nil
		}
		num, err := phonenumbers.Parse(e164, "")
		if err != nil {
			return "", fmt.Errorf("sipcall: number %q: %w", e164, err)
		}
		return digitsOnly(phonenumbers.Format(num, phonenumbers.NATIONAL)), nil
	}
	return "", fmt.Errorf("sipcall: unknown number format %q", format)
}

// isE164 reports whether s is "+" and 7 to 15 digits, the first not 0.
func isE164(s string) bool {
	if len(s) < 8 || len(s) > 16 || s[0] != '+' || s[1] == '0' {
		return false
	}
	return digitsOnly(s[1:]) == s[1:]
}

func digitsOnly(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}
