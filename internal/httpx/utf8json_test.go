package httpx

import "testing"

func TestInvalidUTF8Field(t *testing.T) {
	for _, c := range []struct{ body, field, reason string }{
		{"{\"campaign_id\":\"a\xffb\",\"contacts\":[]}", "campaign_id", "must be valid UTF-8"},
		{"{\"contacts\":[{\"phone_number\":\"0912345678\"},{\"ho_ten\":\"Nguy\xe1n\"}]}", "contacts[1].ho_ten", "must be valid UTF-8"},
		{"{\"contacts\":[{\"phone_number\":\"09\\\"12,]}\",\"x\":{\"y\":[\"ok\",\"\xc0\"]}}]}", "contacts[0].x.y[1]", "must be valid UTF-8"},
		{"{\"contacts\":[{\"ho_\xfften\":\"A\"}]}", "contacts[0]", "has a key that is not valid UTF-8"},
		{"{\"\xff\":1}", "body", "has a key that is not valid UTF-8"},
		{"{\"a\\u00e9\\\"b\":\"\xed\xa0\x80\"}", "a\u00e9\"b", "must be valid UTF-8"},
		{"[\"ok\",\"\xff\"]", "body[1]", "must be valid UTF-8"},
		{"\"\xff\"", "body", "must be valid UTF-8"},
		{"{\"a\":\"x\",\"b\":\"y\xff", "b", "must be valid UTF-8"},
	} {
		fe := invalidUTF8Field([]byte(c.body))
		if fe == nil || fe.Field != c.field || fe.Reason != c.reason {
			t.Errorf("%q: %+v, want %s %s", c.body, fe, c.field, c.reason)
		}
	}
	for _, body := range []string{`{"ho_ten":"Nguyễn Văn A"}`, "{\"a\":1}\xff", "{\"a\":\xff}"} {
		if fe := invalidUTF8Field([]byte(body)); fe != nil {
			t.Errorf("%q: %+v, want none (bad bytes outside strings are syntax errors)", body, fe)
		}
	}
}
