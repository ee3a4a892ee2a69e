package tts

import "strings"

// Render replaces each {{field}} of content, spaces inside the braces
// allowed ({{ ho_ten }}), by fields[field], or by nothing when the contact
// has no such field. Anything else, including unmatched or empty braces, is
// left as it is: content is what a person typed, and a stray brace must
// still be spoken rather than fail the call.
func Render(content string, fields map[string]string) string {
	var b strings.Builder
	for {
		start := strings.Index(content, "{{")
		if start < 0 {
			break
		}
		end := strings.Index(content[start+2:], "}}")
		if end < 0 {
			break
		}
		name := strings.TrimSpace(content[start+2 : start+2+end])
		if name == "" || strings.ContainsAny(name, "{}") {
			// Not a placeholder: keep one brace and look again after it, so
			// that "{{{x}}}" still finds "{{x}}".
			b.WriteString(content[:start+1])
			content = content[start+1:]
			continue
		}
		b.WriteString(content[:start])
		b.WriteString(fields[name])
		content = content[start+2+end+2:]
	}
	b.WriteString(content)
	return b.String()
}
