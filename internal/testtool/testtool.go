// Package testtool is what dialbox's tests share across packages: how they
// find the Debian tools some of them need (espeak-ng, sipp, baresip,
// chromium: a test without its tool skips with the reason, unless
// DIALBOX_REQUIRE_TOOLS=1, what .ci/run sets after installing them, makes
// the absence a failure, so CI never skips silently), the one way they wait
// for a condition, the one buffer goroutines write logs to, and a free
// address for baresip.
package testtool

import (
	"os"
	"os/exec"
	"testing"
)

// Require returns the path of the command name, from the Debian package
// pkg; without it the test skips, or fails under DIALBOX_REQUIRE_TOOLS=1.
func Require(t testing.TB, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("DIALBOX_REQUIRE_TOOLS") == "1" {
		t.Fatalf("%s is required (DIALBOX_REQUIRE_TOOLS=1) but not on PATH: %v", name, err)
	}
	t.Skipf("%s is not on PATH (apt-get install %s to run this test; DIALBOX_REQUIRE_TOOLS=1 makes its absence a failure)", name, pkg)
	return ""
}

// RequireBrowser returns the path of Debian's chromium (for the console's
// browser tests); without it the test skips, or fails under
// DIALBOX_REQUIRE_BROWSER=1 (what .ci/run sets after installing it).
func RequireBrowser(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("DIALBOX_REQUIRE_BROWSER") == "1" {
		t.Fatal("chromium is required (DIALBOX_REQUIRE_BROWSER=1) but not on PATH")
	}
	t.Skip("chromium is not on PATH (apt-get install chromium to run the console's browser tests; DIALBOX_REQUIRE_BROWSER=1 makes its absence a failure)")
	return ""
}
