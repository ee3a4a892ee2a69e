package httpx

import (
	"encoding/json"
)

// ContactsBody is operation A's body. DecodeJSON reads the usual shape of
// it, an object holding only "contacts", an array of flat objects whose
// values are strings, numbers or null, without encoding/json's reflection
// (most of what decoding a one-contact request cost); anything else goes
// through encoding/json, which also words every error. FuzzContactsBody
// holds the two to the same contacts.
type ContactsBody struct {
	Contacts []any `json:"contacts"`
}

// readContacts reads body, valid UTF-8, when it has the usual shape; ok is
// false otherwise, and then nothing is said about body. Strings share one
// copy of body.
func readContacts(body []byte) (contacts []any, ok bool) {
	p := contactsParser{s: string(body)}
	if !p.skip('{') || !p.key("contacts") || !p.skip(':') || !p.skip('[') {
		return nil, false
	}
	contacts = []any{}
	if p.skip(']') {
		return contacts, p.skip('}') && p.end()
	}
	for {
		c, ok := p.contact()
		if !ok {
			return nil, false
		}
		contacts = append(contacts, c)
		if p.skip(']') {
			return contacts, p.skip('}') && p.end()
		}
		if !p.skip(',') {
			return nil, false
		}
	}
}

type contactsParser struct {
	s string
	i int
}

// ws moves past JSON's whitespace.
func (p *contactsParser) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// skip moves past c, after whitespace, if it is next.
func (p *contactsParser) skip(c byte) bool {
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// end says whether only whitespace is left.
func (p *contactsParser) end() bool {
	p.ws()
	return p.i == len(p.s)
}

// key moves past the member name want, if it is next.
func (p *contactsParser) key(want string) bool {
	s, ok := p.str()
	return ok && s == want
}

// contact reads one flat object.
func (p *contactsParser) contact() (map[string]any, bool) {
	if !p.skip('{') {
		return nil, false
	}
	m := make(map[string]any, 4)
	if p.skip('}') {
		return m, true
	}
	for {
		k, ok := p.str()
		if !ok || !p.skip(':') {
			return nil, false
		}
		p.ws()
		if p.i == len(p.s) {
			return nil, false
		}
		switch c := p.s[p.i]; {
		case c == '"':
			v, ok := p.str()
			if !ok {
				return nil, false
			}
			m[k] = v
		case c == 'n':
			if len(p.s)-p.i < 4 || p.s[p.i:p.i+4] != "null" {
				return nil, false
			}
			p.i += 4
			m[k] = nil
		case c == '-' || c >= '0' && c <= '9':
			v, ok := p.number()
			if !ok {
				return nil, false
			}
			m[k] = v
		default: // true, false, an object, an array: left to encoding/json
			return nil, false
		}
		if p.skip('}') {
			return m, true
		}
		if !p.skip(',') {
			return nil, false
		}
	}
}

// str reads a string, after whitespace. One with escapes is unquoted by
// encoding/json, so its rules (lone surrogates among them) are the ones
// applied.
func (p *contactsParser) str() (string, bool) {
	if !p.skip('"') {
		return "", false
	}
	start, escaped := p.i, false
	for ; p.i < len(p.s); p.i++ {
		switch c := p.s[p.i]; {
		case c == '"':
			p.i++
			if !escaped {
				return p.s[start : p.i-1], true
			}
			var s string
			if json.Unmarshal([]byte(p.s[start-1:p.i]), &s) != nil {
				return "", false
			}
			return s, true
		case c == '\\':
			escaped = true
			p.i++ // the escaped byte cannot end the string
		case c < ' ':
			return "", false
		}
	}
	return "", false
}

// number reads a JSON number as it is written, as UseNumber keeps it.
func (p *contactsParser) number() (json.Number, bool) {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.s) && p.s[p.i] == '0':
		p.i++
	case p.digits() == 0:
		return "", false
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if p.digits() == 0 {
			return "", false
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if p.digits() == 0 {
			return "", false
		}
	}
	return json.Number(p.s[start:p.i]), true
}

// digits moves past decimal digits and says how many.
func (p *contactsParser) digits() int {
	start := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	return p.i - start
}
