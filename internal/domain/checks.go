package domain

// Small rules on values tenants and operators send: webhook secrets and
// the keys a simulated callee may press.

import (
	"encoding/base64"
	"fmt"
	"strings"
	"unicode/utf8"
)

// checkWebhookSecret accepts Standard Webhooks secrets: "whsec_" and base64.
func CheckWebhookSecret(secret string) error {
	b64, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return fmt.Errorf("must start with whsec_")
	}
	if raw, err := base64.StdEncoding.DecodeString(b64); err != nil || len(raw) < 16 {
		return fmt.Errorf("must be whsec_ followed by at least 16 base64-encoded bytes")
	}
	return nil
}

// validDigits: only the keys of a phone's keypad.
func ValidDigits(s string) bool {
	for _, c := range s {
		if c > utf8.RuneSelf || !isDTMFKey(byte(c)) {
			return false
		}
	}
	return true
}

func isDTMFKey(c byte) bool { return c >= '0' && c <= '9' || c == '*' || c == '#' }
