// Package program runs the programs an operator configures for speech (the
// TTS and recognizer `command` engines, docs/voicebot.md#recognizers):
// never through a shell, within the caller's context, the standard output
// bounded and the end of the standard error kept to say why one failed.
//
// It imports no dialbox package.
package program

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Run runs argv with stdin (nil for none) and returns its standard output,
// at most max bytes: a program writing more is stopped and fails.
func Run(ctx context.Context, argv []string, stdin io.Reader, max int) ([]byte, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = stdin
	stdout := capped{max: max}
	var stderr tail
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A grandchild holding the pipes open must not keep Wait from
	// returning once the context is done.
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	switch msg := stderr.String(); {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%s: %w", argv[0], ctx.Err())
	case stdout.over:
		return nil, fmt.Errorf("%s: wrote more than %d bytes", argv[0], max)
	case err != nil && msg != "":
		return nil, fmt.Errorf("%s: %w: %s", argv[0], err, msg)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", argv[0], err)
	}
	return stdout.buf.Bytes(), nil
}

// Name is "command" and the quoted argv template, as an engine names itself.
func Name(argv []string) string {
	var b strings.Builder
	b.WriteString("command")
	for _, a := range argv {
		b.WriteByte(' ')
		b.WriteString(strconv.Quote(a))
	}
	return b.String()
}

// capped is a buffer that stops growing at max bytes; a write past it fails,
// which closes the pipe, so the program's next write fails and it stops. It
// holds its bytes.Buffer in a field, not embedded: an embedded one's ReadFrom
// would let exec's copy bypass Write and the cap.
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if c.buf.Len()+len(p) > c.max {
		c.over = true
		return 0, errors.New("output too large")
	}
	return c.buf.Write(p)
}

// tail keeps the last KB written: enough of a program's stderr to say why
// it failed, not a flood.
type tail struct{ b []byte }

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 1024 {
		t.b = append(t.b[:0], t.b[len(t.b)-1024:]...)
	}
	return len(p), nil
}

func (t *tail) String() string { return strings.TrimSpace(string(t.b)) }
