package main

import (
	"os"
	"path/filepath"
	"regexp"
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

// TestReadmeInstallVersion checks that the file names and the go install
// version README.md's Install section gives are those of core/version, so
// that a release that changes the version there is told to change them too.
func TestReadmeInstallVersion(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile(`kv0(?:-wasm)?-(\d+\.\d+\.\d+[^-\s]*)-|kv0-wasm-(\d+\.\d+\.\d+)\.tgz|/kv0@v([0-9A-Za-z.+-]+)`)
	found := 0
	for _, m := range named.FindAllStringSubmatch(string(b), -1) {
		v := m[1] + m[2] + m[3]
		found++
		if v != version.Version {
			t.Errorf("README.md names %q: version %s, want %s (core/version)", m[0], v, version.Version)
		}
	}
	if found < 4 {
		t.Errorf("README.md names the release files and go install's version %d times, want the binary, go install, the wheel and the npm package", found)
	}
}
