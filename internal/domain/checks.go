package domain

// Small rules on values tenants and operators send: webhook secrets, and
// the keys a simulated callee may press and the words it may say.

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

// Bounds of what a simulated callee says (docs/sandbox.md#spoken-answers).
const (
	MaxSays      = 50  // utterances
	MaxSaysRunes = 500 // characters of one
)

// CheckSays says what is wrong with a simulated callee's utterances, one per
// listening turn ("" is a turn of silence): "" when nothing.
func CheckSays(says []string) string {
	if len(says) > MaxSays {
		return fmt.Sprintf("%d utterances: at most %d", len(says), MaxSays)
	}
	for i, s := range says {
		if utf8.RuneCountInString(s) > MaxSaysRunes {
			return fmt.Sprintf("[%d] is longer than %d characters", i, MaxSaysRunes)
		}
		if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < ' ' }) {
			return fmt.Sprintf("[%d] is not one line of text", i)
		}
	}
	return ""
}

func isDTMFKey(c byte) bool { return c >= '0' && c <= '9' || c == '*' || c == '#' }
