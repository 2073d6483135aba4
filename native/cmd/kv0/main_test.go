package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseArgsFlagPlacement(t *testing.T) {
	for _, args := range [][]string{
		{"PATH", "--version", "3", "--limit", "7"},
		{"--version", "3", "PATH", "--limit", "7"},
		{"--version=3", "--limit", "7", "PATH"},
		{"--limit", "7", "--", "PATH"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			fs := newFlagSet("cat")
			var vf versionFlags
			vf.register(fs)
			limit := fs.Int64("limit", -1, "")
			pos, err := parseArgs(fs, args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(pos) != "[PATH]" || *limit != 7 {
				t.Errorf("pos %v limit %d", pos, *limit)
			}
			if args[0] != "--limit" && vf.version != 3 {
				t.Errorf("version %d, want 3", vf.version)
			}
		})
	}
}

func TestParseArgsErrors(t *testing.T) {
	fs := newFlagSet("cat")
	fs.Bool("json", false, "")
	_, err := parseArgs(fs, []string{"PATH", "--nope"}, io.Discard)
	var ue *usageError
	if !errors.As(err, &ue) {
		t.Errorf("unknown flag: got %v, want a usage error", err)
	}
	var help bytes.Buffer
	_, err = parseArgs(newFlagSet("cat"), []string{"-h"}, &help)
	if !errors.Is(err, flag.ErrHelp) || !strings.HasPrefix(help.String(), "usage: kv0 lance cat PATH") {
		t.Errorf("-h: got %v and %q", err, help.String())
	}
}

func TestOpenLocation(t *testing.T) {
	if _, _, err := openLocation("gs://bucket/t.lance"); err == nil || !strings.Contains(err.Error(), "gs") {
		t.Errorf("gs URI: got %v, want an unsupported-scheme error", err)
	}
	if _, _, err := openLocation(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing folder: no error")
	}
	dir := t.TempDir()
	st, root, err := openLocation(dir)
	if err != nil || root != "" || st == nil {
		t.Errorf("existing folder: %v %q %v", st, root, err)
	}
}

// TestRunOnFixture runs the commands in-process on a lance-written sample.
func TestRunOnFixture(t *testing.T) {
	ds := fixture(t, "default")
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"lance", "cat", ds, "--version", "1", "--limit", "2", "--columns", "seq,op"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	want := "{\"seq\":0,\"op\":1}\n{\"seq\":1,\"op\":1}\n"
	if out.String() != want {
		t.Errorf("cat: got %q, want %q", out.String(), want)
	}
	out.Reset()
	if code := run(context.Background(), []string{"lance", "info", "--json", "--tag", "nope", ds}, &out, &errOut); code != 1 || out.Len() != 0 {
		t.Errorf("unknown tag: exit %d, stdout %q", code, out.String())
	}
	// --limit 0 prints nothing, yet checks the dataset, its columns and
	// the filter as any other limit does.
	if code, stdout, _ := runCLI("lance", "cat", ds, "--limit", "0", "--columns", "seq"); code != 0 || stdout != "" {
		t.Errorf("--limit 0: exit %d, stdout %q", code, stdout)
	}
	for _, args := range [][]string{{"--columns", "nope"}, {"--where", "seq >"}} {
		if code, stdout, stderr := runCLI(append([]string{"lance", "cat", ds, "--limit", "0"}, args...)...); code != 2 || stdout != "" || stderr == "" {
			t.Errorf("--limit 0 %v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	if code, _, _ := runCLI("lance", "cat", filepath.Join(t.TempDir(), "none.lance"), "--limit", "0"); code != 1 {
		t.Errorf("--limit 0 of no dataset: exit %d, want 1", code)
	}
}

// runCLI runs one command line in-process.
func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestHelp checks that kv0 --help lists every command of the dispatch
// table, that each group's and each command's help exits 0 with the
// command's synopsis and flags, and that a usage error prints the usage
// of its command only.
func TestHelp(t *testing.T) {
	code, top, _ := runCLI("--help")
	if code != 0 {
		t.Fatalf("kv0 --help: exit %d", code)
	}
	// The commands users reach for must be there, whatever the table says.
	for _, name := range []string{"lance info", "lance cat", "kv get", "kv scan", "runs", "metrics", "track", "sign-server", "delete-runs"} {
		if !strings.Contains(top, "kv0 "+name+" ") {
			t.Errorf("kv0 --help does not list %q", name)
		}
	}
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(top, "kv0 "+c.name+" "+c.positional()) {
				t.Errorf("kv0 --help does not list %q", c.name)
			}
			for _, h := range []string{"--help", "-h"} {
				args := append(strings.Fields(c.name), h)
				code, out, errOut := runCLI(args...)
				if code != 0 || !strings.HasPrefix(out, c.usageLine()+"\n") || errOut != "" {
					t.Errorf("kv0 %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, out, errOut)
				}
			}
			code, out, _ := runCLI(append([]string{"help"}, strings.Fields(c.name)...)...)
			if code != 0 || !strings.HasPrefix(out, c.usageLine()) {
				t.Errorf("kv0 help %s: exit %d, %q", c.name, code, out)
			}
		})
	}
	for _, g := range []string{"lance", "kv"} {
		code, out, _ := runCLI(g, "--help")
		if code != 0 || !strings.Contains(out, "kv0 "+g+" cat") && !strings.Contains(out, "kv0 "+g+" get") || strings.Contains(out, "kv0 runs") {
			t.Errorf("kv0 %s --help: exit %d, %q", g, code, out)
		}
	}
	if code, _, _ := runCLI("lance", "tag", "create", "--help"); code != 0 {
		t.Errorf("kv0 lance tag create --help: exit %d", code)
	}
	code, out, errOut := runCLI("lance", "cat", "--version", "3")
	if code != 2 || out != "" || !strings.Contains(errOut, "usage: kv0 lance cat PATH") || strings.Contains(errOut, "kv0 runs") ||
		strings.Contains(errOut, "kv0 lance info") {
		t.Errorf("usage error: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runCLI("metrics", "repo")
	if code != 2 || !strings.Contains(errOut, "usage: kv0 metrics REPO RUN NAME...") || strings.Contains(errOut, "kv0 lance") {
		t.Errorf("metrics usage error: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runCLI("kv", "nope")
	if code != 2 || !strings.Contains(errOut, "kv0 kv get") || strings.Contains(errOut, "kv0 lance") {
		t.Errorf("unknown kv subcommand: exit %d, stderr %q", code, errOut)
	}
}

// TestMissingArgumentsNamed: a command given no arguments names what its
// synopsis wants (runs: REPO, not PATH), and no message repeats the
// "kv0 NAME:" prefix that the usage line after it gives.
func TestMissingArgumentsNamed(t *testing.T) {
	for _, c := range commands {
		want := c.positional()
		if want == "" || c.name == "lance tag" {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), strings.Fields(c.name), &out, &errOut)
			first, _, _ := strings.Cut(errOut.String(), "\n")
			if code != 2 || first != "kv0: missing "+want {
				t.Errorf("exit %d, first line %q, want %q", code, first, "kv0: missing "+want)
			}
		})
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"metrics", "r"}, "kv0: want REPO RUN NAME..., got 1 argument"},
		{[]string{"run", "r", "a", "b"}, "kv0: want REPO RUN, got 3 arguments"},
		{[]string{"runs", "r", "s"}, "kv0: want REPO, got 2 arguments"},
		{[]string{"kv", "get", "p"}, "kv0: want PATH KEY, got 1 argument"},
		{[]string{"delete-runs", "r"}, "kv0: want REPO RUN..., got 1 argument"},
		{[]string{"track", "r"}, "kv0: --run NAME or --resume RUN is required"},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), tc.args, &out, &errOut)
		first, _, _ := strings.Cut(errOut.String(), "\n")
		if code != 2 || first != tc.want {
			t.Errorf("%v: exit %d, first line %q, want %q", tc.args, code, first, tc.want)
		}
	}
}
