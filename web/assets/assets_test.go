package assets

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

// TestDirs checks both folders as file systems (fstest.TestFS: listing,
// stat, reads, seeks) and that each file reads decompressed under its
// name and as stored under NAME.gz.
func TestDirs(t *testing.T) {
	for _, c := range []struct {
		name  string
		dir   *Dir
		files []string
	}{
		{"web", Web(), []string{"index.html"}},
		{"wasm", Wasm(), []string{"kv0.mjs", "kv0.wasm", "wasm_exec.js"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := fstest.TestFS(c.dir, c.files...); err != nil {
				t.Fatal(err)
			}
			for _, name := range c.files {
				raw, err := fs.ReadFile(c.dir, name)
				if err != nil {
					t.Fatal(err)
				}
				gz, err := fs.ReadFile(c.dir, name+".gz")
				if err != nil {
					t.Fatal(err)
				}
				stored, err := dist.ReadFile("dist/" + c.name + "/" + name + ".gz")
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(gz, stored) {
					t.Errorf("%s.gz is not the stored bytes", name)
				}
				if un, err := gunzip(gz); err != nil || !bytes.Equal(un, raw) {
					t.Errorf("%s is not %s.gz decompressed (%v)", name, name, err)
				}
				if st, err := fs.Stat(c.dir, name); err != nil || st.Size() != int64(len(raw)) {
					t.Errorf("stat %s: %v, want %d bytes", name, st, len(raw))
				}
			}
			for _, bad := range []string{"nope.js", "index.html.gz.gz", "../assets.json", "/index.html", "kv0.wasm.br"} {
				if _, err := c.dir.Open(bad); err == nil {
					t.Errorf("Open(%q) succeeded", bad)
				} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrInvalid) {
					t.Errorf("Open(%q): %v, want not found or invalid", bad, err)
				}
			}
		})
	}
}

// TestPageFiles checks that the page loads its scripts and styles by
// hashed names that the web folder holds, that exactly those are
// immutable, and that ETags differ between a file's two forms and between
// files.
func TestPageFiles(t *testing.T) {
	web := Web()
	page, err := fs.ReadFile(web, "index.html")
	if err != nil {
		t.Fatal(err)
	}
	m, err := readManifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.Go == "" || len(m.Immutable) == 0 {
		t.Fatalf("manifest %+v names no Go version or no immutable file", m)
	}
	seen := map[string]bool{}
	for _, key := range m.Immutable {
		name, ok := strings.CutPrefix(key, "web/")
		if !ok || !hashedName.MatchString(name) {
			t.Errorf("immutable %q is not a hashed name of the web folder", key)
		}
		if !bytes.Contains(page, []byte(`"`+name+`"`)) {
			t.Errorf("index.html does not load %s", name)
		}
		etag, immutable, ok := web.Static(name)
		if !ok || !immutable {
			t.Errorf("Static(%q) = %q, %v, %v; want an immutable file", name, etag, immutable, ok)
		}
		gzTag, gzImmutable, ok := web.Static(name + ".gz")
		if !ok || !gzImmutable || gzTag == etag {
			t.Errorf("Static(%q.gz) = %q, %v, %v; want immutable with its own ETag (plain: %q)", name, gzTag, gzImmutable, ok, etag)
		}
		for _, tag := range []string{etag, gzTag} {
			if seen[tag] {
				t.Errorf("ETag %s given twice", tag)
			}
			seen[tag] = true
		}
	}
	for _, c := range []struct {
		dir  *Dir
		name string
	}{{web, "index.html"}, {Wasm(), "kv0.wasm"}, {Wasm(), "kv0.mjs"}} {
		etag, immutable, ok := c.dir.Static(c.name)
		if !ok || immutable || !strings.HasPrefix(etag, `"`) || !strings.HasSuffix(etag, `"`) || seen[etag] {
			t.Errorf("Static(%q) = %q, %v, %v; want a mutable file with an ETag of its own", c.name, etag, immutable, ok)
		}
		seen[etag] = true
	}
	if _, _, ok := web.Static("nope.js"); ok {
		t.Error("Static of a missing file is ok")
	}
}

// TestSeek checks the files' Seek and ReadAt, which http.ServeContent
// uses for sizes and ranges.
func TestSeek(t *testing.T) {
	f, err := Wasm().Open("kv0.mjs")
	if err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	rs := f.(io.ReadSeeker)
	if n, err := rs.Seek(0, io.SeekEnd); err != nil || n != int64(len(all)) {
		t.Fatalf("Seek end: %d, %v; want %d", n, err, len(all))
	}
	if _, err := rs.Seek(-1, io.SeekStart); err == nil {
		t.Fatal("Seek before the start succeeded")
	}
	if _, err := rs.Seek(10, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(rs, buf); err != nil || !bytes.Equal(buf, all[10:15]) {
		t.Fatalf("read at 10: %q, %v", buf, err)
	}
	if n, err := f.(io.ReaderAt).ReadAt(buf, int64(len(all)-2)); n != 2 || err != io.EOF {
		t.Fatalf("ReadAt past the end: %d, %v", n, err)
	}
}
