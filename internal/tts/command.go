package tts

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"dialbox/internal/audio"
	"dialbox/internal/program"
)

// Command speaks by running a program that writes a WAV to standard output,
// such as piper or a site's own wrapper script.
type Command struct {
	argv []string
	// textOnStdin: no argument holds "{text}", so the text goes on
	// standard input.
	textOnStdin bool
}

// longOptionValue is an argument's literal start that makes what follows
// it the value of one long option ("--text="), never an option itself.
var longOptionValue = regexp.MustCompile(`^--[A-Za-z0-9][A-Za-z0-9_.-]*=`)

// NewCommand returns an engine running argv, where "{text}" and "{voice}" in
// any argument but the program are replaced by the text and the voice. Each
// argument is substituted on its own and the program is run directly, never
// through a shell, so whatever the text holds reaches it as plain data.
//
// The text is a tenant's (a contact's fields) and must never be read as an
// option (docs/sip.md#text-to-speech): "{text}" may only stand after a "--"
// argument, or as the value of a long option ("--text={text}"); a template
// without it gets the text on standard input. Any other place is refused.
func NewCommand(argv []string) (*Command, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("tts command: no program to run")
	}
	if strings.Contains(argv[0], "{text}") || strings.Contains(argv[0], "{voice}") {
		return nil, fmt.Errorf("tts command: the program %q must not depend on the text or voice", argv[0])
	}
	c := &Command{argv: append([]string(nil), argv...), textOnStdin: true}
	endOfOptions := false
	for _, a := range argv[1:] {
		if a == "--" {
			endOfOptions = true
			continue
		}
		if !strings.Contains(a, "{text}") {
			continue
		}
		c.textOnStdin = false
		// The literal start, up to the first placeholder: {voice} may be
		// empty, so it does not count as a prefix.
		literal := a[:placeholder.FindStringIndex(a)[0]]
		if !endOfOptions && !longOptionValue.MatchString(literal) {
			return nil, fmt.Errorf(`tts command: the argument %q could pass the text as an option: put {text} after a "--" argument, `+
				`or as a long option's value ("--text={text}"), or leave it out to get the text on standard input`, a)
		}
	}
	return c, nil
}

// placeholder finds the first "{text}" or "{voice}".
var placeholder = regexp.MustCompile(`\{text\}|\{voice\}`)

// Name is "command" and the quoted argv template.
func (c *Command) Name() string { return program.Name(c.argv) }

// Synthesize runs the command for text and voice; the text is on its
// standard input when no argument holds it, which is empty otherwise.
func (c *Command) Synthesize(ctx context.Context, text, voice string) (audio.Buffer, error) {
	// One pass over each argument: a "{voice}" inside the text stays text.
	r := strings.NewReplacer("{text}", text, "{voice}", voice)
	argv := make([]string, len(c.argv))
	argv[0] = c.argv[0]
	for i, a := range c.argv[1:] {
		argv[i+1] = r.Replace(a)
	}
	stdin := ""
	if c.textOnStdin {
		stdin = text
	}
	return runWAV(ctx, argv, stdin)
}
