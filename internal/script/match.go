package script

import (
	"slices"
	"strings"
	"unicode"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// Words is text as a speech gather compares it: lower case, without
// diacritics (Vietnamese "Có ạ" is "co a"; "đ" is "d", a letter of its own
// that no normalization decomposes), split into words at anything that is
// not a letter or a digit.
func Words(text string) []string {
	text = strings.Map(func(r rune) rune {
		if r == 'đ' || r == 'Đ' {
			return 'd'
		}
		return r
	}, text)
	// A chain keeps state: one per call, so Words is safe on every goroutine.
	strip := transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
	if s, _, err := transform.String(strip, text); err == nil {
		text = s
	}
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r)
	})
}

// Match is the branch key a spoken answer takes: the key whose words appear
// in the heard text as whole words, in order and side by side (Words on
// both), the longest such key winning (ties: the first in byte order).
// False when no key matches.
func Match(keys []string, heard string) (string, bool) {
	text := Words(heard)
	best, bestLen := "", -1
	for _, k := range keys {
		kw := Words(k)
		n := len(strings.Join(kw, " "))
		if len(kw) == 0 || !containsRun(text, kw) || n < bestLen || n == bestLen && k > best {
			continue
		}
		best, bestLen = k, n
	}
	return best, bestLen >= 0
}

// containsRun says whether words holds run as consecutive elements.
func containsRun(words, run []string) bool {
	for i := 0; i+len(run) <= len(words); i++ {
		if slices.Equal(words[i:i+len(run)], run) {
			return true
		}
	}
	return false
}
