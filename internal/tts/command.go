package tts

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"dialbox/internal/audio"
)

// Command speaks by running a program that writes a WAV to standard output,
// such as piper or a site's own wrapper script.
type Command struct {
	argv []string
}

// NewCommand returns an engine running argv, where "{text}" and "{voice}" in
// any argument but the program are replaced by the text and the voice. Each
// argument is substituted on its own and the program is run directly, never
// through a shell, so whatever the text holds reaches it as plain data.
func NewCommand(argv []string) (*Command, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("tts command: no program to run")
	}
	if strings.Contains(argv[0], "{text}") || strings.Contains(argv[0], "{voice}") {
		return nil, fmt.Errorf("tts command: the program %q must not depend on the text or voice", argv[0])
	}
	return &Command{argv: append([]string(nil), argv...)}, nil
}

// Name is "command" and the quoted argv template.
func (c *Command) Name() string {
	var b strings.Builder
	b.WriteString("command")
	for _, a := range c.argv {
		b.WriteByte(' ')
		b.WriteString(strconv.Quote(a))
	}
	return b.String()
}

// Synthesize runs the command for text and voice; its standard input is
// empty.
func (c *Command) Synthesize(ctx context.Context, text, voice string) (audio.Buffer, error) {
	// One pass over each argument: a "{voice}" inside the text stays text.
	r := strings.NewReplacer("{text}", text, "{voice}", voice)
	argv := make([]string, len(c.argv))
	argv[0] = c.argv[0]
	for i, a := range c.argv[1:] {
		argv[i+1] = r.Replace(a)
	}
	return runWAV(ctx, argv, "")
}
