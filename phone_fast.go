package main

import (
	"regexp/syntax"
	"strconv"
	"strings"
	"sync"

	"github.com/nyaruka/phonenumbers"
)

// fastPhones reads the plain digit strings of a large do-not-call list
// ("0912345678", "84912345678", "+84912345678") at a fraction of the phone
// library's cost (about 20 µs a number, most of it regular expressions),
// with exactly normalizePhone's answers: FuzzFastPhones checks it.
//
// It remembers, for a string's leading digits (all but the last
// fastPhonesTail) and its length, what normalizePhone made of the first
// such string: the E.164 prefix its last digits follow, or its error. That
// is exact when nothing the library decides looks at those last digits: it
// strips or adds only leading digits (national prefix, country code,
// international prefix), and every pattern it judges a number's validity
// by ends in at least fastPhonesTail unconstrained digits. tailSafe checks
// the latter, from the library's own metadata, for the default region and
// for the number's country; where it does not hold (or the country code is
// shared by several regions, chosen by leading-digit patterns), numbers are
// parsed in full. An error is remembered only for a string read wholly by
// the default region's rules (no "+", no international prefix).
//
// It is safe for concurrent use: the workers of one file share what they
// learn.
type fastPhones struct {
	region string
	idd    string // the default region's international prefix
	safe   bool   // the default region's parsing passes tailSafe
	mu     sync.RWMutex
	memo   map[string]fastResult
}

type fastResult struct {
	prefix string // E.164 up to the last fastPhonesTail digits
	err    error
}

// fastPhonesTail is how many last digits are left out of the memo's key: a
// register's numbers share their leading digits in blocks of 10,000.
const fastPhonesTail = 4

func newFastPhones(region string) *fastPhones {
	md := phoneMetadata()[region]
	safe := md != nil && plainDigits(md.GetNationalPrefixForParsing()) && md.GetNationalPrefixTransformRule() == "" &&
		md.GetInternationalPrefix() != "" && plainDigits(md.GetInternationalPrefix()) && tailSafe(md)
	return &fastPhones{region: region, idd: md.GetInternationalPrefix(), safe: safe, memo: map[string]fastResult{}}
}

// normalize is normalizePhone(raw, region).
func (f *fastPhones) normalize(raw string) (string, error) {
	digits := strings.TrimPrefix(raw, "+")
	if !f.safe || len(digits) < 8 || len(digits) > 15 || !plainDigits(digits) {
		return normalizePhone(raw, f.region)
	}
	key, tail := raw[:len(raw)-fastPhonesTail], raw[len(raw)-fastPhonesTail:]
	f.mu.RLock()
	r, ok := f.memo[key]
	f.mu.RUnlock()
	if ok {
		if r.err != nil {
			return "", r.err
		}
		return r.prefix + tail, nil
	}
	e164, err := normalizePhone(raw, f.region)
	domestic := len(digits) == len(raw) && !strings.HasPrefix(raw, f.idd)
	switch {
	case err != nil && domestic:
		r = fastResult{err: err}
	case err == nil && strings.HasSuffix(e164, tail) && countryTailSafe(e164):
		r = fastResult{prefix: e164[:len(e164)-fastPhonesTail]}
	default:
		return e164, err
	}
	f.mu.Lock()
	f.memo[key] = r
	f.mu.Unlock()
	return e164, err
}

func plainDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

var (
	phoneMetaOnce sync.Once
	phoneMeta     map[string]*phonenumbers.PhoneMetadata
	countrySafe   sync.Map // country code -> bool
)

// phoneMetadata is the library's metadata by region code.
func phoneMetadata() map[string]*phonenumbers.PhoneMetadata {
	phoneMetaOnce.Do(func() {
		phoneMeta = map[string]*phonenumbers.PhoneMetadata{}
		if col, err := phonenumbers.MetadataCollection(); err == nil {
			for _, md := range col.GetMetadata() {
				phoneMeta[md.GetId()] = md
			}
		}
	})
	return phoneMeta
}

// countryTailSafe: the country code of an E.164 number belongs to one
// region, whose patterns pass tailSafe.
func countryTailSafe(e164 string) bool {
	for n := 1; n <= 3 && n < len(e164); n++ { // country codes are prefix-free
		cc, err := strconv.Atoi(e164[1 : 1+n])
		if err != nil {
			return false
		}
		regions := phonenumbers.GetRegionCodesForCountryCode(cc)
		if len(regions) == 0 {
			continue
		}
		if v, ok := countrySafe.Load(cc); ok {
			return v.(bool)
		}
		md := phoneMetadata()[regions[0]]
		safe := len(regions) == 1 && md != nil && tailSafe(md)
		countrySafe.Store(cc, safe)
		return safe
	}
	return false
}

// tailSafe reports whether every number pattern of a region (the general
// one and each type's) ends, on every way it can match, in at least
// fastPhonesTail digits that may each be any digit. Patterns that match no
// digit string ("NA") do not count.
func tailSafe(md *phonenumbers.PhoneMetadata) bool {
	for _, d := range []*phonenumbers.PhoneNumberDesc{md.GetGeneralDesc(), md.GetFixedLine(), md.GetMobile(),
		md.GetTollFree(), md.GetPremiumRate(), md.GetSharedCost(), md.GetVoip(), md.GetPersonalNumber(),
		md.GetPager(), md.GetUan(), md.GetVoicemail(), md.GetNoInternationalDialling()} {
		p := d.GetNationalNumberPattern()
		if p == "" || p == "NA" {
			continue
		}
		re, err := syntax.Parse(p, syntax.Perl)
		if err != nil || anyDigitTail(re.Simplify()) < fastPhonesTail {
			return false
		}
	}
	return true
}

// anyDigits reports whether re matches only strings of digits each of which
// may be any digit, and the least length it matches.
func anyDigits(re *syntax.Regexp) (bool, int) {
	switch re.Op {
	case syntax.OpCharClass:
		// The input is digits only: what else the class takes never matters.
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i] <= '0' && re.Rune[i+1] >= '9' {
				return true, 1
			}
		}
		return false, 0
	case syntax.OpEmptyMatch:
		return true, 0
	case syntax.OpCapture:
		return anyDigits(re.Sub[0])
	case syntax.OpRepeat, syntax.OpQuest, syntax.OpStar, syntax.OpPlus:
		ok, n := anyDigits(re.Sub[0])
		least := 0
		if re.Op == syntax.OpRepeat {
			least = re.Min
		} else if re.Op == syntax.OpPlus {
			least = 1
		}
		return ok, n * least
	case syntax.OpConcat, syntax.OpAlternate:
		total, least := 0, -1
		for _, s := range re.Sub {
			ok, n := anyDigits(s)
			if !ok {
				return false, 0
			}
			total += n
			if least < 0 || n < least {
				least = n
			}
		}
		if re.Op == syntax.OpAlternate {
			return true, least
		}
		return true, total
	}
	return false, 0
}

// anyDigitTail is the least number of any-digit positions every match of
// re ends with.
func anyDigitTail(re *syntax.Regexp) int {
	if ok, n := anyDigits(re); ok {
		return n
	}
	switch re.Op {
	case syntax.OpCapture:
		return anyDigitTail(re.Sub[0])
	case syntax.OpConcat:
		run := 0
		for i := len(re.Sub) - 1; i >= 0; i-- {
			ok, n := anyDigits(re.Sub[i])
			if !ok {
				return run + anyDigitTail(re.Sub[i])
			}
			run += n
		}
		return run
	case syntax.OpAlternate:
		least := -1
		for _, s := range re.Sub {
			if t := anyDigitTail(s); least < 0 || t < least {
				least = t
			}
		}
		return max(least, 0)
	case syntax.OpRepeat, syntax.OpPlus:
		if re.Op == syntax.OpPlus || re.Min >= 1 {
			return anyDigitTail(re.Sub[0])
		}
	}
	return 0
}
