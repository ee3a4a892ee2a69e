package domain

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
// with exactly normalizePhone's answers, as the number a list stores
// (dncNumber): FuzzFastPhones checks it.
//
// It remembers, for a string's leading digits (all but the last
// fastPhonesTail) and its length, what normalizePhone made of the first
// such string: the E.164 number its last digits complete, or its error. That
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
// The memo is keyed and valued by integers: a 10-million-number register
// looks it up 10 million times, and a string key cost two cache misses and
// an allocation each (docs/compliance.md#loading-the-national-register).
//
// It is safe for concurrent use: the workers of one file share what they
// learn.
type FastPhones struct {
	region string
	idd    string // the default region's international prefix
	Safe   bool   // the default region's parsing passes tailSafe
	mu     sync.RWMutex
	// memo maps memoKey(leading digits) to the stored number's leading
	// digits (the number divided by fastPhonesScale), or to -1-i for the
	// error errs[i].
	Memo  map[uint64]int64
	errs  []error
	limit int // the most entries Memo takes; 0: no bound
}

// fastPhonesTail is how many last digits are left out of the memo's key: a
// register's numbers share their leading digits in blocks of 10,000.
const (
	FastPhonesTail  = 4
	fastPhonesScale = 10_000 // 10^fastPhonesTail
)

func NewFastPhones(region string) *FastPhones {
	md := phoneMetadata()[region]
	safe := md != nil && plainDigits(md.GetNationalPrefixForParsing()) && md.GetNationalPrefixTransformRule() == "" &&
		md.GetInternationalPrefix() != "" && plainDigits(md.GetInternationalPrefix()) && tailSafe(md)
	return &FastPhones{region: region, idd: md.GetInternationalPrefix(), Safe: safe, Memo: map[uint64]int64{}}
}

// apiPhones holds one FastPhones per region for NormalizePhone, shared by
// every request of the process. Unlike a register's, its memo is bounded
// (apiMemoLimit): what tenants send must not grow it without end.
var apiPhones sync.Map // region -> *FastPhones

// apiMemoLimit bounds apiPhones' memos: about 2 MB each, and enough for
// every block of 10,000 numbers of a country's carriers in the forms
// people write them.
const apiMemoLimit = 1 << 16

// fastPhone is NormalizePhone's fast path, for the forms nearly all input
// takes: an optional "+", then digits, alone or grouped by single spaces,
// dots or dashes, with spaces around; ok is false for anything else, left
// to the library. The separators are dropped first: the library ignores
// them between digits.
func fastPhone(raw, region string) (n int64, err error, ok bool) {
	var buf [24]byte
	plain, ok := plainPhone(raw, buf[:0])
	if !ok {
		return 0, nil, false
	}
	f, found := apiPhones.Load(region)
	if !found {
		fp := NewFastPhones(region)
		fp.limit = apiMemoLimit
		f, _ = apiPhones.LoadOrStore(region, fp)
	}
	fp := f.(*FastPhones)
	if !fp.fast(plain) {
		return 0, nil, false
	}
	n, err = fp.Number(plain)
	return n, err, true
}

// plainPhone is raw without the spaces around it and the single spaces,
// dots and dashes between its digits, appended to buf when it had any;
// ok is false when raw is not an optional "+" and such digits, or is too
// long for the fast path.
func plainPhone(raw string, buf []byte) (plain string, ok bool) {
	s := strings.Trim(raw, " ")
	if strings.HasPrefix(s, "+") {
		buf = append(buf, '+')
		s = s[1:]
	}
	if s == "" {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			if len(buf) == cap(buf) {
				return "", false
			}
			buf = append(buf, c)
		case (c == ' ' || c == '.' || c == '-') && i > 0 && i+1 < len(s) && isDigit(s[i-1]) && isDigit(s[i+1]):
			// dropped
		default:
			return "", false
		}
	}
	if len(buf) == len(raw) { // nothing dropped: no copy
		return raw, true
	}
	return string(buf), true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// memoKey is a string's leading part (an optional "+" then at most 12
// digits) as one integer: its digits' value, its length (which tells
// leading zeros apart) and whether it has the "+".
func MemoKey(head string) uint64 {
	var v uint64
	plus := uint64(0)
	for i := 0; i < len(head); i++ {
		if head[i] == '+' {
			plus = 1
			continue
		}
		v = v*10 + uint64(head[i]-'0')
	}
	return v<<6 | uint64(len(head))<<1 | plus
}

// number is normalizePhone(raw, region) as the number a list stores
// (dncNumber); an E.164 number a list cannot store is errInvalidPhone.
func (f *FastPhones) Number(raw string) (int64, error) {
	if !f.fast(raw) {
		return StoredNumber(parsePhone(raw, f.region))
	}
	digits := strings.TrimPrefix(raw, "+")
	head, tailDigits := raw[:len(raw)-FastPhonesTail], raw[len(raw)-FastPhonesTail:]
	tail := int64(0)
	for i := 0; i < len(tailDigits); i++ {
		tail = tail*10 + int64(tailDigits[i]-'0')
	}
	key := MemoKey(head)
	f.mu.RLock()
	v, ok := f.Memo[key]
	f.mu.RUnlock()
	if ok {
		if v < 0 {
			return 0, f.errs[-v-1]
		}
		return v*fastPhonesScale + tail, nil
	}
	e164, err := parsePhone(raw, f.region)
	n, nerr := StoredNumber(e164, err)
	domestic := len(digits) == len(raw) && !strings.HasPrefix(raw, f.idd)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.limit > 0 && len(f.Memo) >= f.limit:
	case err != nil && domestic:
		f.errs = append(f.errs, err)
		f.Memo[key] = int64(-len(f.errs))
	case nerr == nil && strings.HasSuffix(e164, tailDigits) && countryTailSafe(e164):
		f.Memo[key] = n / fastPhonesScale
	}
	return n, nerr
}

// fast reports whether Number reads raw through the memo: an optional "+"
// and 8 to 15 digits, of a region whose rules allow it.
func (f *FastPhones) fast(raw string) bool {
	digits := strings.TrimPrefix(raw, "+")
	return f.Safe && len(digits) >= 8 && len(digits) <= 15 && len(raw)-FastPhonesTail <= 12 && plainDigits(digits)
}

// storedNumber is normalizePhone's answer as a list stores it.
func StoredNumber(e164 string, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	n, ok := DNCNumber(e164)
	if !ok {
		return 0, ErrInvalidPhone
	}
	return n, nil
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
		if err != nil || AnyDigitTail(re.Simplify()) < FastPhonesTail {
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
func AnyDigitTail(re *syntax.Regexp) int {
	if ok, n := anyDigits(re); ok {
		return n
	}
	switch re.Op {
	case syntax.OpCapture:
		return AnyDigitTail(re.Sub[0])
	case syntax.OpConcat:
		run := 0
		for i := len(re.Sub) - 1; i >= 0; i-- {
			ok, n := anyDigits(re.Sub[i])
			if !ok {
				return run + AnyDigitTail(re.Sub[i])
			}
			run += n
		}
		return run
	case syntax.OpAlternate:
		least := -1
		for _, s := range re.Sub {
			if t := AnyDigitTail(s); least < 0 || t < least {
				least = t
			}
		}
		return max(least, 0)
	case syntax.OpRepeat, syntax.OpPlus:
		if re.Op == syntax.OpPlus || re.Min >= 1 {
			return AnyDigitTail(re.Sub[0])
		}
	}
	return 0
}
