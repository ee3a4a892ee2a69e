package domain

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// dialbox writes every JSON it answers, stores or sends (public and admin
// answers, stored fields, webhook payloads) with one rule: characters as
// they came, <, > and & included (encoding/json's default escapes them as
// \u003c, \u003e, \u0026, which the spec's samples and other stacks'
// encoders do not), except control characters, which JSON requires
// escaped, and U+2028 and U+2029, written \u2028 and \u2029 as
// encoding/json always writes them (still the same characters to any JSON
// parser, and safe to paste into JavaScript). marshalJSON and
// appendJSONString both follow it, so every path writes the same bytes.

// marshalJSON is json.Marshal without HTML escaping.
func MarshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}

// jsonStringSize is the length of appendJSONString's output for s, less
// its two quotes, counted without writing it.
func JSONStringSize(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			switch {
			case c >= ' ' && c != '"' && c != '\\':
				n++
			case c == '"', c == '\\', c == '\b', c == '\f', c == '\n', c == '\r', c == '\t':
				n += 2
			default:
				n += len(`\u0000`)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1, r == '\u2028', r == '\u2029':
			n += len(`\ufffd`)
		default:
			n += size
		}
		i += size
	}
	return n
}

// appendJSONString appends s as a JSON string exactly as marshalJSON writes
// it: control characters escaped, invalid UTF-8 replaced by U+FFFD, U+2028
// and U+2029 escaped, everything else as it is.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= ' ' && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
