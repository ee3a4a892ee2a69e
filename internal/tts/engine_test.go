package tts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dialbox/internal/audio"
	"dialbox/internal/testtool"
)

// The command engine's tests run this test binary as the TTS command: with
// helperEnv set, TestMain acts as the program instead of running tests.
const (
	helperEnv      = "DIALBOX_TTS_TEST_HELPER" // what to do: wav, fail, garbage, flood, silent, hang
	helperArgsEnv  = "DIALBOX_TTS_TEST_ARGS"   // where to write the arguments it got, as JSON
	helperStdinEnv = "DIALBOX_TTS_TEST_STDIN"  // where to write what it read on stdin
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(mode))
	}
	os.Exit(m.Run())
}

func helperMain(mode string) int {
	if path := os.Getenv(helperArgsEnv); path != "" {
		b, _ := json.Marshal(os.Args[1:])
		if err := os.WriteFile(path, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	if path := os.Getenv(helperStdinEnv); path != "" {
		b, _ := io.ReadAll(os.Stdin)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	switch mode {
	case "wav":
		if err := audio.EncodeWAV(os.Stdout, toneBuffer(22050, 1)); err != nil {
			return 2
		}
	case "fail":
		fmt.Fprintln(os.Stderr, "synthesiser exploded: no voice \"xx\"")
		return 3
	case "garbage":
		fmt.Print("<html>nope</html>")
	case "flood": // a streamed WAV that never ends
		var hdr bytes.Buffer
		audio.EncodeWAV(&hdr, audio.Buffer{Rate: 8000})
		copy(hdr.Bytes()[40:], "\x00\xf0\xff\x7f") // espeak-ng's placeholder data size
		os.Stdout.Write(hdr.Bytes())
		chunk := make([]byte, 1<<20)
		for {
			if _, err := os.Stdout.Write(chunk); err != nil {
				return 0
			}
		}
	case "silent":
	case "hang":
		select {}
	}
	return 0
}

// toneBuffer is seconds of a 440 Hz tone at rate, standing in for speech.
func toneBuffer(rate int, seconds float64) audio.Buffer {
	s := make([]int16, int(float64(rate)*seconds))
	for i := range s {
		s[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(i)/float64(rate)))
	}
	return audio.Buffer{Rate: rate, Samples: s}
}

// expectPhoneAudio checks b is telephone-rate audio of about the given
// length, with sound in it.
func expectPhoneAudio(t *testing.T, b audio.Buffer, min, max time.Duration) {
	t.Helper()
	if b.Rate != audio.PhoneRate {
		t.Errorf("rate %d Hz, want %d", b.Rate, audio.PhoneRate)
	}
	if d := b.Duration(); d < min || d > max {
		t.Errorf("duration %v, want between %v and %v", d, min, max)
	}
	if rms := audio.RMS(b.Samples); rms < 300 {
		t.Errorf("RMS %.0f: silence", rms)
	}
}

func helperCommand(t *testing.T, mode string, args ...string) (*Command, string) {
	t.Helper()
	t.Setenv(helperEnv, mode)
	argsFile := filepath.Join(t.TempDir(), "args.json")
	t.Setenv(helperArgsEnv, argsFile)
	c, err := NewCommand(append([]string{os.Args[0]}, args...))
	if err != nil {
		t.Fatal(err)
	}
	return c, argsFile
}

func TestCommandSubstitutesEachArgumentWithoutAShell(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "marker")
	text := `Xin chào; touch ` + marker + ` && echo $(touch ` + marker + `) | cat "{voice}" 'x' * > ` + marker + "\n--help"
	c, argsFile := helperCommand(t, "wav", "--text={text}", "{voice}", "{x} {TEXT} literal", "--", "{text}|{voice}")
	b, err := c.Synthesize(context.Background(), text, "vi -v")
	if err != nil {
		t.Fatal(err)
	}
	expectPhoneAudio(t, b, 990*time.Millisecond, 1010*time.Millisecond)

	raw, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := []string{"--text=" + text, "vi -v", "{x} {TEXT} literal", "--", text + "|vi -v"}
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("the command got\n%q\nwant\n%q", got, want)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a shell ran the text: %s exists (%v)", marker, err)
	}
}

// hostileTexts are a tenant's field values that a program would obey as
// options, were they passed as its arguments.
var hostileTexts = []string{"-f/etc/passwd", "--version", " -f/etc/passwd", "xin chào\n-f/etc/passwd\n--help", "-"}

// TestCommandTextNeverAnOption: the text reaches the program after "--", as
// the value of a "--name=" option, or on standard input, never where it
// could be read as an option; a template that would put it there is
// refused.
func TestCommandTextNeverAnOption(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		argv     func(text string) []string
		stdinHas bool
	}{
		{"after --", []string{"--stdout", "-v", "{voice}", "--", "{text}"},
			func(text string) []string { return []string{"--stdout", "-v", "vi", "--", text} }, false},
		{"as an option's value", []string{"--text={text}", "-v", "{voice}"},
			func(text string) []string { return []string{"--text=" + text, "-v", "vi"} }, false},
		{"on stdin", []string{"--stdout", "-v", "{voice}"},
			func(string) []string { return []string{"--stdout", "-v", "vi"} }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, argsFile := helperCommand(t, "wav", tc.args...)
			stdinFile := filepath.Join(t.TempDir(), "stdin")
			t.Setenv(helperStdinEnv, stdinFile)
			for _, text := range hostileTexts {
				if _, err := c.Synthesize(context.Background(), text, "vi"); err != nil {
					t.Fatalf("%q: %v", text, err)
				}
				raw, err := os.ReadFile(argsFile)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				if err := json.Unmarshal(raw, &got); err != nil {
					t.Fatal(err)
				}
				if want := tc.argv(text); strings.Join(got, "\x00") != strings.Join(want, "\x00") {
					t.Errorf("%q: the command got %q, want %q", text, got, want)
				}
				stdin, err := os.ReadFile(stdinFile)
				if err != nil {
					t.Fatal(err)
				}
				if tc.stdinHas && string(stdin) != text {
					t.Errorf("%q: stdin held %q, want the text", text, stdin)
				}
			}
		})
	}
	// Anywhere else the text could begin an argument, or finish an option
	// whose letters it chooses: refused before anything runs.
	for _, args := range [][]string{
		{"{text}"}, {"-v", "{voice}", "{text}"}, {"{text}", "--"}, {"{text}|{voice}"}, {"-{text}"},
		{"-t{text}"}, {"--{text}"}, {"-w", "out.wav", "{voice}{text}"}, {"--text", "{text}"},
	} {
		if _, err := NewCommand(append([]string{"say"}, args...)); err == nil {
			t.Errorf("NewCommand(say %q) accepted a template that can pass the text as an option", args)
		}
	}
}

// TestCommandEspeakHostileFields: espeak-ng behind the command engine, in
// the two ways docs/sip.md shows, speaks a hostile field value rather than
// obeying it: "-f FILE" would read a file aloud (a long prompt), "--version"
// would print no WAV.
func TestCommandEspeakHostileFields(t *testing.T) {
	path := testtool.Require(t, "espeak-ng", "espeak-ng")
	book := filepath.Join(t.TempDir(), "book.txt")
	if err := os.WriteFile(book, bytes.Repeat([]byte("một hai ba bốn năm sáu bảy tám chín mười. "), 40), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{
		{path, "--stdout", "-v", "{voice}", "--", "{text}"},
		{path, "--stdout", "-v", "{voice}"},
	} {
		c, err := NewCommand(argv)
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range append(hostileTexts, "-f"+book, "-f "+book) {
			b, err := c.Synthesize(context.Background(), text, "vi")
			if err != nil {
				t.Errorf("%q with %q: %v", argv, text, err)
				continue
			}
			// The book read aloud lasts minutes; the texts themselves a few
			// seconds at most ("-" alone is a moment of silence).
			if text == "-" {
				if b.Duration() > time.Second {
					t.Errorf("%q with %q: %v of audio", argv, text, b.Duration())
				}
				continue
			}
			expectPhoneAudio(t, b, 100*time.Millisecond, 15*time.Second)
		}
	}
}

func TestCommandErrors(t *testing.T) {
	for _, c := range []struct{ mode, says string }{
		{"fail", `exit status 3: synthesiser exploded: no voice "xx"`},
		{"garbage", "not a WAV file"},
		{"silent", "wrote no audio to stdout"},
		{"flood", "wrote more than 67108864 bytes"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			e, _ := helperCommand(t, c.mode, "--", "{text}")
			_, err := e.Synthesize(context.Background(), "xin chào", "xx")
			if err == nil || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("error %v, want one saying %q", err, c.says)
			}
		})
	}
	t.Run("hang", func(t *testing.T) {
		e, _ := helperCommand(t, "hang")
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if _, err := e.Synthesize(ctx, "xin chào", "vi"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("error %v, want the context's deadline", err)
		}
	})
	t.Run("missing program", func(t *testing.T) {
		e, err := NewCommand([]string{filepath.Join(t.TempDir(), "no-such-tts")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Synthesize(context.Background(), "x", "vi"); err == nil || !strings.Contains(err.Error(), "no such file") {
			t.Fatalf("error %v", err)
		}
	})
	for _, argv := range [][]string{nil, {""}, {"{text}"}, {"/usr/bin/tts-{voice}", "x"}} {
		if _, err := NewCommand(argv); err == nil {
			t.Errorf("NewCommand(%q) accepted", argv)
		}
	}
}

func TestEngineNames(t *testing.T) {
	a, _ := NewCommand([]string{"piper", "--model", "vi.onnx"})
	b, _ := NewCommand([]string{"piper", "--model vi.onnx"})
	h, _ := NewHTTP("http://tts:5500/api/tts?text={text}", 0)
	names := []string{a.Name(), b.Name(), h.Name(), NewEspeak("").Name()}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("two engines are both named %q", n)
		}
		seen[n] = true
	}
}

// The real thing: espeak-ng speaking Vietnamese. It skips where espeak-ng is
// not installed, unless DIALBOX_REQUIRE_TOOLS=1 says it must run.
func TestEspeakVietnamese(t *testing.T) {
	path := testtool.Require(t, "espeak-ng", "espeak-ng")
	e := NewEspeak(path)
	text := Render("Xin chào {{danh_xung}} {{ ho_ten }}, đây là cuộc gọi nhắc lịch hẹn.", map[string]string{
		"danh_xung": "anh", "ho_ten": "Nguyễn Văn An",
	})
	b, err := e.Synthesize(context.Background(), text, "vi")
	if err != nil {
		t.Fatal(err)
	}
	expectPhoneAudio(t, b, 500*time.Millisecond, 20*time.Second)
	t.Logf("%q: %v at %d Hz, RMS %.0f", text, b.Duration(), b.Rate, audio.RMS(b.Samples))

	// Text that looks like options is spoken, not obeyed: were "--help"
	// taken as an option, espeak-ng would print its usage, not a WAV.
	b, err = e.Synthesize(context.Background(), "--help -v en", "vi")
	if err != nil {
		t.Fatalf("text starting with a dash: %v", err)
	}
	expectPhoneAudio(t, b, 300*time.Millisecond, 10*time.Second)

	if _, err := e.Synthesize(context.Background(), "xin chào", "nosuchvoice"); err == nil || !strings.Contains(err.Error(), "voice") {
		t.Errorf("unknown voice: error %v, want espeak-ng's reason", err)
	}
}
