package assets

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
)

// This file is also the generator of dist/: `make assets` runs
// TestAssetsMatchBuild with -update after `make web wasm`.

var update = flag.Bool("update", false, "write dist/ from $KV0_WEB_OUT and $KV0_WASM_OUT instead of comparing (make assets)")

// wasmFiles are the wasm module's files kv0 serve serves at /wasm/ (the
// npm package's typings and README are not needed there).
var wasmFiles = []string{"kv0.mjs", "kv0.wasm", "wasm_exec.js"}

// pageRef is a file index.html loads: src="NAME" or href="NAME".
var pageRef = regexp.MustCompile(`(?:src|href)="([^"]*)"`)

// hashedName is the form of esbuild's [name]-[hash] file names.
var hashedName = regexp.MustCompile(`^[A-Za-z0-9_]+-[A-Z0-9]{8}\.[a-z]+$`)

// pack is dist/ as `make web wasm` output in webDir (out/web) and wasmDir
// (out/wasm) makes it: path -> bytes. Every file is gzip -9 compressed by
// Go's compress/gzip with an empty header (no name, no time), so the same
// inputs and Go version give the same bytes.
func pack(webDir, wasmDir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	add := func(key, src string) error {
		raw, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		if err != nil {
			return err
		}
		if _, err := zw.Write(raw); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		out[key+".gz"] = buf.Bytes()
		return nil
	}
	page, err := os.ReadFile(filepath.Join(webDir, "index.html"))
	if err != nil {
		return nil, fmt.Errorf("%w (run make web)", err)
	}
	if err := add("web/index.html", filepath.Join(webDir, "index.html")); err != nil {
		return nil, err
	}
	m := Manifest{Go: runtime.Version(), Immutable: []string{}}
	for _, sm := range pageRef.FindAllSubmatch(page, -1) {
		ref := string(sm[1])
		if ref == "" || strings.Contains(ref, ":") || strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, "#") {
			continue // another origin, a data: URL, the server's root
		}
		if !hashedName.MatchString(ref) {
			return nil, fmt.Errorf("%s/index.html loads %s, whose name carries no content hash (web/build.mjs names the page's files [name]-[hash])", webDir, ref)
		}
		if err := add("web/"+ref, filepath.Join(webDir, ref)); err != nil {
			return nil, err
		}
		m.Immutable = append(m.Immutable, "web/"+ref)
	}
	if len(m.Immutable) == 0 {
		return nil, fmt.Errorf("%s/index.html loads no file", webDir)
	}
	sort.Strings(m.Immutable)
	for _, name := range wasmFiles {
		if err := add("wasm/"+name, filepath.Join(wasmDir, name)); err != nil {
			return nil, fmt.Errorf("%w (run make wasm)", err)
		}
	}
	mb, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	out["assets.json"] = append(mb, '\n')
	return out, nil
}

// readDist is dist/ as committed: path -> bytes.
func readDist(t *testing.T) map[string][]byte {
	t.Helper()
	have := map[string][]byte{}
	err := fs.WalkDir(dist, "dist", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := dist.ReadFile(p)
		have[strings.TrimPrefix(p, "dist/")] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return have
}

// TestAssetsMatchBuild checks that the embedded dashboard and wasm module
// (dist/) are exactly what `make web wasm` builds from the sources of this
// commit: `make test-assets` builds them and runs it with KV0_WEB_OUT and
// KV0_WASM_OUT set; without them it skips.
func TestAssetsMatchBuild(t *testing.T) {
	webDir, wasmDir := os.Getenv("KV0_WEB_OUT"), os.Getenv("KV0_WASM_OUT")
	if webDir == "" || wasmDir == "" {
		t.Skip("KV0_WEB_OUT and KV0_WASM_OUT name the outputs of make web wasm (make test-assets sets them)")
	}
	want, err := pack(webDir, wasmDir)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.RemoveAll("dist"); err != nil {
			t.Fatal(err)
		}
		for key, b := range want {
			p := filepath.Join("dist", filepath.FromSlash(key))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("wrote web/assets/dist from %s and %s", webDir, wasmDir)
		return
	}
	if diff := distDiff(readDist(t), want); diff != "" {
		t.Fatalf("web/assets/dist is not what make web wasm builds from these sources with %s:\n%s\n"+
			"run `make assets` and commit web/assets/dist", runtime.Version(), diff)
	}
}

// distDiff says which files of have (committed) differ from want (built):
// missing, extra or changed ones, one a line; "" when they are equal.
func distDiff(have, want map[string][]byte) string {
	var keys []string
	for k := range have {
		keys = append(keys, k)
	}
	for k := range want {
		if _, ok := have[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var lines []string
	for _, k := range keys {
		h, inHave := have[k]
		w, inWant := want[k]
		switch {
		case !inWant:
			lines = append(lines, "  "+k+": committed, but no longer built")
		case !inHave:
			lines = append(lines, "  "+k+": built, but not committed")
		case !bytes.Equal(h, w):
			what := fmt.Sprintf("  %s: differs (%d bytes committed, %d built)", k, len(h), len(w))
			if k == "assets.json" {
				what += ":\n" + string(h) + "  built:\n" + string(w)
			}
			lines = append(lines, what)
		}
	}
	return strings.Join(lines, "\n")
}
