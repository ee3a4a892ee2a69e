package destinations

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name           string
		global, tenant Rules
		number         string
		want           Reason
	}{
		{name: "home mobile", number: "+84912345678", want: Allowed},
		{name: "home simulator test number", number: "+84900000001", want: Allowed},
		{name: "home fixed line", number: "+842873000001", want: Allowed},
		{name: "home premium rate 1900 (8 digits)", number: "+8419001234", want: Premium},
		{name: "home premium rate 1900 (10 digits)", number: "+841900123456", want: Premium},
		{name: "home toll-free 1800", number: "+841800123456", want: Special},
		{name: "home VoIP", number: "+84672123456", want: Special},
		{name: "US premium rate 900", number: "+19002345678", want: Foreign},
		{name: "UK premium rate 09", number: "+449098790000", want: Foreign},
		{name: "satellite Iridium +881", number: "+881612345678", want: Foreign},
		{name: "satellite Inmarsat +870", number: "+870773111632", want: Foreign},
		{name: "another country's mobile", number: "+6591234567", want: Foreign},
		{name: "not a number", number: "+84", want: Special},
		{name: "empty", number: "", want: Special},

		{name: "country allowed: its mobiles", global: Rules{Allow: []string{"+65"}}, number: "+6591234567", want: Allowed},
		{name: "country allowed by the tenant", tenant: Rules{Allow: []string{"+65"}}, number: "+6591234567", want: Allowed},
		{name: "a country code opens no premium rate", global: Rules{Allow: []string{"+1"}}, number: "+19002345678", want: Premium},
		{name: "a country code opens no special number", tenant: Rules{Allow: []string{"+84"}}, number: "+841800123456", want: Special},
		{name: "a longer prefix opens premium rate", tenant: Rules{Allow: []string{"+1900"}}, number: "+19002345678", want: Allowed},
		{name: "one premium number allowed", global: Rules{Allow: []string{"+8419001234"}}, number: "+8419001234", want: Allowed},
		{name: "the allowed number only", global: Rules{Allow: []string{"+8419001234"}}, number: "+8419001235", want: Premium},
		{name: "toll-free range allowed", global: Rules{Allow: []string{"+841800"}}, number: "+841800123456", want: Allowed},

		{name: "global deny on home mobiles", global: Rules{Deny: []string{"+8491"}}, number: "+84912345678", want: Denied},
		{name: "tenant deny", tenant: Rules{Deny: []string{"+84912345678"}}, number: "+84912345678", want: Denied},
		{name: "deny beats a tenant's allow", global: Rules{Deny: []string{"+8419"}}, tenant: Rules{Allow: []string{"+841900"}}, number: "+841900123456", want: Denied},
		{name: "deny beats an allow in the same rules", tenant: Rules{Allow: []string{"+65"}, Deny: []string{"+659"}}, number: "+6591234567", want: Denied},
		{name: "deny of another number", global: Rules{Deny: []string{"+84912345679"}}, number: "+84912345678", want: Allowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New("VN", tc.global)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Check(tc.number, tc.tenant); got != tc.want {
				t.Errorf("Check(%q) = %q, want %q", tc.number, got, tc.want)
			}
		})
	}
}

func TestCheckAnotherHome(t *testing.T) {
	p, err := New("GB", Rules{})
	if err != nil {
		t.Fatal(err)
	}
	for number, want := range map[string]Reason{
		"+447400123456": Allowed, // a UK mobile
		"+449098790000": Premium, // UK 09
		"+84912345678":  Foreign,
	} {
		if got := p.Check(number, Rules{}); got != want {
			t.Errorf("home GB: Check(%q) = %q, want %q", number, got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		rules Rules
		field string // "" for valid
	}{
		{Rules{}, ""},
		{Rules{Allow: []string{"+65", "+8419001234"}, Deny: []string{"+1"}}, ""},
		{Rules{Allow: []string{"65"}}, "allow"},
		{Rules{Allow: []string{"+"}}, "allow"},
		{Rules{Deny: []string{"+84 91"}}, "deny"},
		{Rules{Deny: []string{"+84-91"}}, "deny"},
		{Rules{Deny: []string{"+1234567890123456"}}, "deny"},
		{Rules{Deny: []string{"-x"}}, "deny"},
		{Rules{Allow: make([]string, MaxPrefixes+1)}, "allow"},
	} {
		fe := tc.rules.Validate()
		switch {
		case tc.field == "" && fe != nil:
			t.Errorf("%v: %v", tc.rules, fe)
		case tc.field != "" && fe == nil:
			t.Errorf("%v: no error", tc.rules)
		case tc.field != "" && (fe.Field != tc.field || !strings.Contains(fe.Message, "+")):
			t.Errorf("%v: %v, want an error on %s naming the form", tc.rules, fe, tc.field)
		}
	}
}

func TestNewRefusesBadInput(t *testing.T) {
	if _, err := New("XX", Rules{}); err == nil {
		t.Error("an unknown home region was taken")
	}
	if _, err := New("VN", Rules{Deny: []string{"84"}}); err == nil {
		t.Error("a prefix without + was taken")
	}
}
