package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
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
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(help.String(), "usage of kv0 lance cat") {
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

// TestRunOnFixture runs the commands in-process on the shared smoke fixture
// when it is present beside the repository.
func TestRunOnFixture(t *testing.T) {
	ds := filepath.Join("..", "..", "..", "..", "shared", "fixtures", "lance-samples", "default", "kv.lance")
	if _, err := os.Stat(ds); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but the shared fixtures are missing: %v", err)
		}
		t.Skip("shared fixtures not found")
	}
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
}
