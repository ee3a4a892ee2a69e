package httpx

import (
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// viaEncodingJSON is ContactsBody under another name, which DecodeJSON
// reads with encoding/json alone.
type viaEncodingJSON struct {
	Contacts []any `json:"contacts"`
}

var publicRules = BodyRules{Max: 1 << 20, Whole: true, Numbers: true}

// FuzzContactsBody: DecodeJSON answers operation A's body, read by hand
// when it has the usual shape, exactly as encoding/json would: the same
// contacts, or the same error.
func FuzzContactsBody(f *testing.F) {
	for _, seed := range []string{
		`{"contacts":[{"phone_number":"0912345678","danh_xung":"Anh","ho_ten":"Nguyễn Văn A"}]}`,
		` { "contacts" : [ { "phone_number" : "0912345678" , "n" : 12.5e-3 } , {"a":null,"b":-0,"c":""} ] } ` + "\n",
		`{"contacts":[]}`, `{"contacts":[{}]}`, `{"contacts":null}`, `{"contacts":{}}`, `{"contacts":"x"}`,
		`{"Contacts":[{"a":"b"}]}`, `{"contact\u0073":[{"a":"b"}]}`, `{"contacts":[{"a":"b"}],"other":1}`,
		`{"contacts":[{"a":"b"}],"contacts":[{"c":"d"}]}`, `{"contacts":[{"a":"1","a":"2"}]}`,
		`{"contacts":[{"a":"tab\there \"q\" \u00e9 \ud83d\ude00 \ud800 \/"}]}`, `{"contacts":[{"\u0061":"b"}]}`,
		`{"contacts":[{"a":01}]}`, `{"contacts":[{"a":1.}]}`, `{"contacts":[{"a":-}]}`, `{"contacts":[{"a":1e}]}`,
		`{"contacts":[{"a":1E+5}]}`, `{"contacts":[{"a":nul}]}`, `{"contacts":[{"a":true}]}`, `{"contacts":[{"a":{"b":1}}]}`,
		`{"contacts":[{"a":["b"]}]}`, `{"contacts":["0912345678", 5, null]}`, `{"contacts":[{"a":"b"},]}`,
		`{"contacts":[{"a":"b",}]}`, `{"contacts":[{"a":"b"}]} x`, `{"contacts":[{"a":"b"}]}{}`, `{"contacts":[{"a":"b"}]`,
		`{"contacts":[{"a":"line` + "\n" + `"}]}`, `[]`, `"x"`, ``, `{}`, "{\"contacts\":[{\"a\":\"\xff\"}]}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var fast ContactsBody
		var slow viaEncodingJSON
		fastErr := DecodeJSON(httptest.NewRequest("POST", "/", strings.NewReader(body)), &fast, publicRules)
		slowErr := DecodeJSON(httptest.NewRequest("POST", "/", strings.NewReader(body)), &slow, publicRules)
		if !reflect.DeepEqual(fastErr, slowErr) {
			t.Fatalf("%q: error %v, encoding/json's %v", body, fastErr, slowErr)
		}
		if !reflect.DeepEqual(fast.Contacts, slow.Contacts) {
			t.Fatalf("%q: contacts %#v, encoding/json's %#v", body, fast.Contacts, slow.Contacts)
		}
	})
}

// TestContactsReadByHand: the usual body never reaches encoding/json, so
// the fuzz target compares two readers, not one with itself.
func TestContactsReadByHand(t *testing.T) {
	for _, body := range []string{
		`{"contacts":[{"phone_number":"0912345678","danh_xung":"Anh","ho_ten":"Nguyễn Văn A","tuoi":42,"x":null}]}`,
		`{"contacts":[{"a":"\u00e9"}, {}]}`, `{"contacts":[]}`,
	} {
		if _, ok := readContacts([]byte(body)); !ok {
			t.Errorf("%s: not read by hand", body)
		}
	}
	for _, body := range []string{`{"contacts":[{"a":true}]}`, `{"Contacts":[]}`, `{"contacts":[]} x`} {
		if _, ok := readContacts([]byte(body)); ok {
			t.Errorf("%s: read by hand, where encoding/json must judge it", body)
		}
	}
}
