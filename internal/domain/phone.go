package domain

import (
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/nyaruka/phonenumbers"
)

var (
	ErrInvalidPhone = errors.New("phone_number is not a valid phone number")
	ErrPhoneLetter  = errors.New("phone_number must not contain letters")
)

// NormalizePhone parses a phone number as written by a person or a CRM
// ("0912345678", "84912345678", "+84 912 345 678"), reading numbers without
// a country code as numbers of region, and returns it in E.164. Digits
// alone, or grouped by single spaces, dots or dashes, take the fast path
// (fastPhone), with exactly the phone library's answers: FuzzFastPhone
// checks it.
func NormalizePhone(raw, region string) (string, error) {
	if n, err, ok := fastPhone(raw, region); ok {
		if err != nil {
			return "", err
		}
		return DNCE164(n), nil
	}
	return parsePhone(raw, region)
}

// parsePhone is NormalizePhone through the phone library alone.
func parsePhone(raw, region string) (string, error) {
	if hasLetter(withoutTelScheme(raw)) {
		return "", ErrPhoneLetter
	}
	num, err := phonenumbers.Parse(raw, region)
	if err != nil || !phonenumbers.IsValidNumber(num) {
		return "", ErrInvalidPhone
	}
	return phonenumbers.Format(num, phonenumbers.E164), nil
}

// withoutTelScheme drops an RFC 3966 "tel:" in front of a number, the one
// run of letters a phone field may carry that is not the number itself.
func withoutTelScheme(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 4 && strings.EqualFold(s[:4], "tel:") {
		return s[4:]
	}
	return s
}

// hasLetter reports whether s holds a letter. The phone library reads
// letters as the keypad's digits ("09123ABC78" would be +84912322278),
// which no CRM field means; a number with one is refused instead. A byte
// scan, next to nothing beside parsing.
func hasLetter(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return strings.IndexFunc(s[i:], unicode.IsLetter) >= 0
		}
		if 'a' <= c|0x20 && c|0x20 <= 'z' {
			return true
		}
	}
	return false
}

type NormalizedPhone struct {
	E164 string
	Err  error
}

// parallelPhonesFrom is the request size from which phone numbers are
// parsed on every core: parsing is most of the CPU of a large import, and
// a CRM often sends its batches one at a time.
const parallelPhonesFrom = 256

// normalizePhones parses the phone_number of every contact object of
// items; the result at i is zero where items[i] has no string phone_number.
func NormalizePhones(items []any, region string) []NormalizedPhone {
	out := make([]NormalizedPhone, len(items))
	parse := func(from, to int) {
		for i := from; i < to; i++ {
			if obj, ok := items[i].(map[string]any); ok {
				if raw, ok := obj["phone_number"].(string); ok {
					out[i].E164, out[i].Err = NormalizePhone(raw, region)
				}
			}
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(items)/(parallelPhonesFrom/2))
	if workers < 2 {
		parse(0, len(items))
		return out
	}
	var (
		wg       sync.WaitGroup
		panicked sync.Map // a panic is raised again in the request's goroutine, which recovers it
	)
	per := (len(items) + workers - 1) / workers
	for from := 0; from < len(items); from += per {
		wg.Go(func() {
			defer func() {
				if v := recover(); v != nil {
					panicked.Store(from, v)
				}
			}()
			parse(from, min(from+per, len(items)))
		})
	}
	wg.Wait()
	panicked.Range(func(_, v any) bool { panic(v) })
	return out
}

// dncNumber is how a list stores an E.164 number: its digits as an integer.
func DNCNumber(e164 string) (int64, bool) {
	digits, ok := strings.CutPrefix(e164, "+")
	if !ok || len(digits) == 0 || len(digits) > 15 {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil && n > 0
}

// dncE164 is the E.164 form of a stored number.
func DNCE164(n int64) string { return "+" + strconv.FormatInt(n, 10) }
