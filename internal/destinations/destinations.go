// Package destinations owns the destination policy against toll fraud
// (docs/compliance.md#destinations): which numbers dialbox may dial at all.
// By default only the ordinary numbers (fixed lines and mobiles) of the
// home region; premium-rate, shared-cost, toll-free, VoIP and other
// special numbers and every other country are held, unless an allow prefix
// opens them, and a deny prefix holds a number whatever else says. It only
// decides: the engine applies it and records what it held.
package destinations

import (
	"fmt"
	"strings"

	"github.com/nyaruka/phonenumbers"
)

// Reason is why a number may not be dialled: call_blocks.reason and the
// reason label of dialbox_calls_blocked_total; Allowed when it may.
type Reason string

const (
	Allowed Reason = ""
	// Denied: a deny prefix, the operator's or the tenant's, covers it.
	Denied Reason = "destination_denied"
	// Foreign: a number of another region (satellite networks included),
	// which no allow prefix opens.
	Foreign Reason = "destination_foreign"
	// Premium: a premium-rate or shared-cost number, whose caller pays
	// the callee: the numbers toll fraud dials.
	Premium Reason = "destination_premium"
	// Special: any other number that is not a fixed line or a mobile
	// (toll-free, VoIP, personal, pager, voicemail, universal access), or
	// one the phone library does not know.
	Special Reason = "destination_special"
)

// MaxPrefixes bounds each list of prefixes, so a tenant's rules stay a
// few bytes to read and check on every dial.
const MaxPrefixes = 1000

// maxPrefixDigits is E.164's longest number.
const maxPrefixDigits = 15

// Rules are prefixes of E.164 numbers ("+" and 1 to 15 digits) to open or
// to hold: the operator's (config) or one tenant's (its application).
type Rules struct {
	Allow []string `json:"allow" toml:"allow"`
	Deny  []string `json:"deny" toml:"deny"`
}

// FieldError names the list of Rules with a bad prefix.
type FieldError struct {
	Field   string // "allow" or "deny"
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Validate checks every prefix's form and the size of each list.
func (r Rules) Validate() *FieldError {
	for _, l := range []struct {
		field    string
		prefixes []string
	}{{"allow", r.Allow}, {"deny", r.Deny}} {
		if len(l.prefixes) > MaxPrefixes {
			return &FieldError{l.field, fmt.Sprintf("at most %d prefixes, each \"+\" and 1 to %d digits", MaxPrefixes, maxPrefixDigits)}
		}
		for _, p := range l.prefixes {
			if !validPrefix(p) {
				return &FieldError{l.field, fmt.Sprintf("%q is not a number prefix: \"+\" and 1 to %d digits, like \"+8491\"", truncate(p), maxPrefixDigits)}
			}
		}
	}
	return nil
}

func validPrefix(p string) bool {
	digits, ok := strings.CutPrefix(p, "+")
	if !ok || len(digits) == 0 || len(digits) > maxPrefixDigits {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

// truncate keeps an error message short whatever was sent.
func truncate(s string) string {
	if len(s) > 20 {
		return s[:20] + "..."
	}
	return s
}

// Policy is the operator's policy: the home region and the global rules.
type Policy struct {
	home   string
	global Rules
}

// New makes the policy of home (phone.default_region) and the global
// rules.
func New(home string, global Rules) (*Policy, error) {
	if phonenumbers.GetCountryCodeForRegion(home) == 0 {
		return nil, fmt.Errorf("%q is not a known region code", home)
	}
	if fe := global.Validate(); fe != nil {
		return nil, fe
	}
	return &Policy{home: home, global: global}, nil
}

// Check says whether number (E.164) may be dialled under the global rules
// and tenant's, and if not why. In order:
//
//  1. a deny prefix, global or the tenant's, holds it: nothing overrides
//     the operator's deny, and a tenant's holds only that tenant;
//  2. an allow prefix longer than a country calling code opens every
//     number under it, premium rate included: one chosen number or range;
//  3. an allow prefix that is a whole country calling code ("+65") opens
//     that country's ordinary numbers only, as the home region's are;
//  4. otherwise the number must be a fixed line or a mobile of the home
//     region.
func (p *Policy) Check(number string, tenant Rules) Reason {
	if matches(number, p.global.Deny) || matches(number, tenant.Deny) {
		return Denied
	}
	country := false
	for _, allow := range [][]string{p.global.Allow, tenant.Allow} {
		for _, prefix := range allow {
			if !strings.HasPrefix(number, prefix) {
				continue
			}
			if !isCountryCode(prefix) {
				return Allowed
			}
			country = true
		}
	}
	num, err := phonenumbers.Parse(number, p.home)
	if err != nil {
		return Special
	}
	if !country && phonenumbers.GetRegionCodeForNumber(num) != p.home {
		return Foreign
	}
	switch phonenumbers.GetNumberType(num) {
	case phonenumbers.FIXED_LINE, phonenumbers.MOBILE, phonenumbers.FIXED_LINE_OR_MOBILE:
		return Allowed
	case phonenumbers.PREMIUM_RATE, phonenumbers.SHARED_COST:
		return Premium
	default:
		return Special
	}
}

func matches(number string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(number, p) {
			return true
		}
	}
	return false
}

// isCountryCode reports whether prefix is "+" and exactly a country
// calling code, such as "+1" or "+65".
func isCountryCode(prefix string) bool {
	digits := prefix[1:]
	if len(digits) > 3 || digits[0] == '0' {
		return false
	}
	cc := 0
	for i := 0; i < len(digits); i++ {
		cc = cc*10 + int(digits[i]-'0')
	}
	return phonenumbers.GetRegionCodeForCountryCode(cc) != "ZZ"
}
