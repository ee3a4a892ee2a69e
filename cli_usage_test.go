package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestUsageOutput pins, byte for byte, what the commands that touch no
// database print: `dialbox help`, `dialbox version`, and the usage errors
// of a command or subcommand that does not exist (testdata/usage.txt is
// the help text).
func TestUsageOutput(t *testing.T) {
	want, err := os.ReadFile("testdata/usage.txt")
	if err != nil {
		t.Fatal(err)
	}
	usageText := string(want)
	cliText := usageText[strings.Index(usageText, "  dialbox app create"):strings.Index(usageText, "  dialbox dnc import")]
	dncText := usageText[strings.Index(usageText, "  dialbox dnc import"):]
	runOut := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(context.Background(), args, &out, nil)
		return out.String(), err
	}
	if out, err := runOut("help"); err != nil || out != usageText {
		t.Errorf("dialbox help: %v\n%s", err, out)
	}
	if out, err := runOut("version"); err != nil || !regexp.MustCompile(`^dialbox \S+\n$`).MatchString(out) {
		t.Errorf("dialbox version: %v %q", err, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"nonsense"}, "unknown command \"nonsense\"\n" + usageText},
		{[]string{"serve", "extra"}, "unexpected argument \"extra\"\n" + usageText},
		{[]string{"app"}, "app: which subcommand?\n" + cliText},
		{[]string{"wallet", "--app", "x"}, "wallet: which subcommand?\n" + cliText},
		{[]string{"app", "frob"}, "unknown command \"app frob\"\n" + cliText},
		{[]string{"app", "create"}, "app create: --name NAME is required\n" + cliText},
		{[]string{"dnc"}, "dnc: import, add, remove, check or count\n" + dncText},
		{[]string{"dnc", "frob"}, "dnc: unknown command \"frob\"\n" + dncText},
		{[]string{"dnc", "add"}, "dnc add: wrong arguments\n" + dncText},
		{[]string{"dnc", "count", "--force"}, "dnc count: --force goes with import --replace only\n" + dncText},
		{[]string{"token"}, "token: --app API_KEY is required"},
		{[]string{"import", "a.csv", "b.csv"}, "import: give one contacts.csv file\n" + usageText},
		{[]string{"import", "a.csv"}, "import: --scenario ID or --campaign ID is required"},
		{[]string{"backup"}, "backup: give one PATH to write the copy to\n" + usageText},
		{[]string{"restore"}, "restore: give the BACKUP file to restore\n" + usageText},
		{[]string{"migrate-to"}, "migrate-to: give one postgres:// URL to copy into\n" +
			"usage: dialbox migrate-to postgres://USER:PASSWORD@HOST:PORT/DATABASE [--replace | --verify-only] [--config FILE] [--database FILE]"},
	} {
		out, err := runOut(c.args...)
		if err == nil || err.Error() != c.want || out != "" {
			t.Errorf("dialbox %s: printed %q, error\n%v\nwant error\n%s", strings.Join(c.args, " "), out, err, c.want)
		}
	}
}
