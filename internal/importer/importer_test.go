package importer

import (
	"bytes"
	"dialbox/internal/domain"
	"encoding/json"
	"testing"
)

// decodeContacts reads a contacts array as operations A and C do (numbers
// kept as json.Number).
func decodeContacts(t *testing.T, contacts string) []any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(contacts)))
	dec.UseNumber()
	var items []any
	if err := dec.Decode(&items); err != nil {
		t.Fatal(err)
	}
	return items
}

// TestValidateContacts: every reason a contact is skipped, with its
// position and its input as sent; and what a valid contact echoes: its
// fields as strings, the scenario's personalized fields (empty when not
// sent), and so_dien_thoai in E.164 whatever the client put there.
func TestValidateContacts(t *testing.T) {
	items := decodeContacts(t, `[
		{"phone_number":"0912345678","danh_xung":"Anh","ho_ten":"Nguyen Van A"},
		"not an object",
		{"ho_ten":"B"},
		{"phone_number":912345678},
		{"phone_number":"12"},
		{"phone_number":"0912345679","tags":["a"]},
		{"phone_number":"0912345679","meta":{"a":1}},
		{"phone_number":"+84 912 345 678"},
		{"phone_number":"0912345680","ma_kh":12.50,"note":null,"so_dien_thoai":"x"},
		{"phone_number":"0912345681","ok":false},
		null,
		{"phone_number":"0912345679"}
	]`)
	sc := &domain.Scenario{ID: "sc", PersonalizedFields: []string{"danh_xung", "ho_ten"}}
	valid, skipped := ValidateContacts(items, sc, "VN")

	wantSkipped := []domain.SkippedContact{
		{Position: 1, Input: json.RawMessage(`"not an object"`), Reason: "contact is not a JSON object"},
		{Position: 2, Input: json.RawMessage(`{"ho_ten":"B"}`), Reason: "phone_number is required and must be a string"},
		{Position: 3, Input: json.RawMessage(`{"phone_number":912345678}`), Reason: "phone_number is required and must be a string"},
		{Position: 4, Input: json.RawMessage(`{"phone_number":"12"}`), Reason: "phone_number is not a valid phone number"},
		{Position: 5, Input: json.RawMessage(`{"phone_number":"0912345679","tags":["a"]}`), Reason: "tags must be a string or a number"},
		{Position: 6, Input: json.RawMessage(`{"meta":{"a":1},"phone_number":"0912345679"}`), Reason: "meta must be a string or a number"},
		{Position: 7, Input: json.RawMessage(`{"phone_number":"+84 912 345 678"}`), Reason: "phone_number repeats an earlier contact of this request"},
		{Position: 9, Input: json.RawMessage(`{"ok":false,"phone_number":"0912345681"}`), Reason: "ok must be a string or a number"},
		{Position: 10, Input: json.RawMessage(`null`), Reason: "contact is not a JSON object"},
	}
	if len(skipped) != len(wantSkipped) {
		t.Fatalf("%d skipped, want %d: %+v", len(skipped), len(wantSkipped), skipped)
	}
	for i, want := range wantSkipped {
		got := skipped[i]
		if got.Position != want.Position || string(got.Input) != string(want.Input) || got.Reason != want.Reason {
			t.Errorf("skipped[%d] = {%d %s %q}, want {%d %s %q}", i, got.Position, got.Input, got.Reason,
				want.Position, want.Input, want.Reason)
		}
	}

	wantValid := []struct {
		position int
		phone    string
		echo     map[string]string
	}{
		{0, "+84912345678", map[string]string{"danh_xung": "Anh", "ho_ten": "Nguyen Van A", "so_dien_thoai": "+84912345678"}},
		{8, "+84912345680", map[string]string{"danh_xung": "", "ho_ten": "", "ma_kh": "12.50", "note": "", "so_dien_thoai": "+84912345680"}},
		// A skipped contact is no earlier contact for the duplicate rule.
		{11, "+84912345679", map[string]string{"danh_xung": "", "ho_ten": "", "so_dien_thoai": "+84912345679"}},
	}
	if len(valid) != len(wantValid) {
		t.Fatalf("%d valid, want %d: %+v", len(valid), len(wantValid), valid)
	}
	ids := map[string]bool{}
	for i, want := range wantValid {
		got := valid[i]
		if wantEcho := domain.EchoJSON(want.echo, got.ID); got.Position != want.position || got.Phone != want.phone || !bytes.Equal(got.Echo, wantEcho) {
			t.Errorf("valid[%d] = {%d %s %s}, want {%d %s %s}", i, got.Position, got.Phone, got.Echo, want.position, want.phone, wantEcho)
		}
		if fields, _ := json.Marshal(want.echo); string(got.Fields) != string(fields) {
			t.Errorf("valid[%d] stores fields %s, want %s", i, got.Fields, fields)
		}
		if got.Input == nil || got.ID == "" || ids[got.ID] {
			t.Errorf("valid[%d] has input %v and id %q: want its input and an id of its own", i, got.Input, got.ID)
		}
		ids[got.ID] = true
	}
}

// TestValidateContactsDuplicatesAllowed: with allow_duplicate_phone the
// same number may come twice in one request.
func TestValidateContactsDuplicatesAllowed(t *testing.T) {
	items := decodeContacts(t, `[{"phone_number":"0912345678"},{"phone_number":"+84912345678"}]`)
	for _, allow := range []bool{false, true} {
		sc := &domain.Scenario{ID: "sc", CallConfig: domain.CallConfig{AllowDuplicatePhone: allow}}
		valid, skipped := ValidateContacts(items, sc, "VN")
		if want := map[bool]int{false: 1, true: 2}[allow]; len(valid) != want || len(valid)+len(skipped) != 2 {
			t.Errorf("allow_duplicate_phone %v: %d valid, %d skipped; want %d valid", allow, len(valid), len(skipped), want)
		}
	}
}

// A contact is measured as the JSON dialbox stores: jsonSize counts,
// without writing it, exactly what marshalJSON writes, escapes included.
func TestContactJSONSize(t *testing.T) {
	items := decodeContacts(t, `[
		{"phone_number":"0912345678","ho_ten":"Nguyễn Văn A","n":42,"x":null,"ok":true,"no":false},
		{"a\"b":"quote \" backslash \\ tab \t nl \n nul \u0000 esc \u001b","<&>":"<b>&amp;</b>"},
		{"sep":"\u2028\u2029","nested":{"k":[1,"two",{"three":3.5e10}],"e":{}},"list":[]},
		"a string contact", 12, null, [1, 2], {}
	]`)
	items = append(items, map[string]any{"bad": "\xff\xfe not UTF-8"})
	for i, item := range items {
		b, err := domain.MarshalJSON(item)
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonSize(item); got != len(b) {
			t.Errorf("item %d: jsonSize = %d, marshalJSON wrote %d bytes: %s", i, got, len(b), b)
		}
	}
}
