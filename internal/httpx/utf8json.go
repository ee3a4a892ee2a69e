package httpx

import (
	"dialbox/internal/domain"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// invalidUTF8Field finds the first string of the JSON text body that is not
// valid UTF-8, which encoding/json would silently turn into U+FFFD, and
// names it as a 400's details do: a value by its path ("campaign_id",
// "contacts[0].ho_ten"), a key by the object holding it ("contacts[0]", or
// "body" for the top level). It returns nil when every string is valid;
// bytes outside strings are left to the decoder's syntax errors. Callers
// pay for it only when utf8.Valid(body) is false.
func invalidUTF8Field(body []byte) *domain.FieldError {
	type level struct {
		array   bool
		index   int    // arrays: the element being read
		key     string // objects: the member being read
		wantKey bool   // objects: the next string is a key
	}
	var stack []level
	// path names the value being read, or with member false the container
	// holding it.
	path := func(member bool) string {
		var b strings.Builder
		n := len(stack)
		if !member {
			n--
		}
		for _, l := range stack[:max(n, 0)] {
			if l.array {
				b.WriteString("[" + strconv.Itoa(l.index) + "]")
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(l.key)
		}
		if b.Len() == 0 || b.String()[0] == '[' {
			return "body" + b.String()
		}
		return b.String()
	}
	for i := 0; i < len(body); i++ {
		var top *level
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		switch body[i] {
		case '{':
			stack = append(stack, level{wantKey: true})
		case '[':
			stack = append(stack, level{array: true})
		case '}', ']':
			if top != nil {
				stack = stack[:len(stack)-1]
			}
		case ',':
			if top != nil && top.array {
				top.index++
			} else if top != nil {
				top.wantKey = true
			}
		case '"':
			end := i + 1
			for end < len(body) && body[end] != '"' {
				if body[end] == '\\' {
					end++
				}
				end++
			}
			end = min(end, len(body))
			isKey := top != nil && !top.array && top.wantKey
			if !utf8.Valid(body[i+1 : end]) {
				if isKey {
					return &domain.FieldError{Field: path(false), Reason: "has a key that is not valid UTF-8"}
				}
				return &domain.FieldError{Field: path(true), Reason: "must be valid UTF-8"}
			}
			if isKey {
				top.wantKey = false
				if json.Unmarshal(body[i:min(end+1, len(body))], &top.key) != nil {
					top.key = string(body[i+1 : end])
				}
			}
			i = end
		}
	}
	return nil
}
