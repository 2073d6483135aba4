package main

import (
	"runtime"
	"strings"
	"testing"

	"github.com/kv0/kv0/core/version"
)

// TestVersion checks kv0 version and kv0 --version print the one version
// of core/version with the Go version and platform, and that the command
// takes no argument.
func TestVersion(t *testing.T) {
	want := "kv0 " + version.Version + " (" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")\n"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errOut := runCLI(args...)
		if code != 0 || out != want || errOut != "" {
			t.Errorf("kv0 %s: exit %d, %q, %q; want %q", strings.Join(args, " "), code, out, errOut, want)
		}
	}
	if code, _, errOut := runCLI("version", "extra"); code != 2 || !strings.Contains(errOut, "usage: kv0 version") {
		t.Errorf("kv0 version extra: exit %d: %s", code, errOut)
	}
}
