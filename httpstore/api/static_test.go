package api

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/kv0/kv0/web/assets"
)

// TestStaticEmbedded serves the dashboard and wasm module built into kv0
// (web/assets, a StaticFS): the stored gzip bytes to a client that accepts
// gzip and the decompressed file to one that does not, an ETag per form
// answered with 304, the page's hashed files immutable (private behind a
// token), the others revalidated.
func TestStaticEmbedded(t *testing.T) {
	f := newFixture(t)
	web, wasm := assets.Web(), assets.Wasm()
	page, err := fs.ReadFile(web, "index.html")
	if err != nil {
		t.Fatal(err)
	}
	hashed := regexp.MustCompile(`src="(app-[A-Z0-9]{8}\.js)"`).FindSubmatch(page)
	if hashed == nil {
		t.Fatalf("index.html loads no app-HASH.js:\n%s", page)
	}
	appJS := string(hashed[1])
	for _, c := range []struct {
		token, scope string
	}{{"", "public"}, {"s3cret", "private"}} {
		h := New(f.st, "", Options{Web: web, Wasm: wasm, Token: c.token})
		auth := []string{}
		if c.token != "" {
			auth = []string{"Authorization", "Bearer " + c.token}
		}
		for _, file := range []struct {
			target, name, ctype string
			fsys                *assets.Dir
			immutable           bool
		}{
			{"/", "index.html", "text/html; charset=utf-8", web, false},
			{"/" + appJS, appJS, "text/javascript; charset=utf-8", web, true},
			{"/wasm/kv0.wasm", "kv0.wasm", "application/wasm", wasm, false},
			{"/wasm/kv0.mjs", "kv0.mjs", "text/javascript; charset=utf-8", wasm, false},
		} {
			raw, err := fs.ReadFile(file.fsys, file.name)
			if err != nil {
				t.Fatal(err)
			}
			cache := "no-cache"
			if file.immutable {
				cache = c.scope + ", max-age=31536000, immutable"
			}
			gz := get(t, h, file.target, append([]string{"Accept-Encoding", "gzip, deflate, br"}, auth...)...)
			if gz.Code != 200 || gz.Header().Get("Content-Encoding") != "gzip" || gz.Header().Get("Content-Type") != file.ctype ||
				gz.Header().Get("Cache-Control") != cache || gz.Header().Get("Vary") != "Accept-Encoding" {
				t.Fatalf("%s (gzip): %d %v", file.target, gz.Code, gz.Header())
			}
			zr, err := gzip.NewReader(bytes.NewReader(gz.Body.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			if un, err := io.ReadAll(zr); err != nil || !bytes.Equal(un, raw) {
				t.Fatalf("%s: the gzip answer is not the file (%v)", file.target, err)
			}
			plain := get(t, h, file.target, auth...)
			if plain.Code != 200 || plain.Header().Get("Content-Encoding") != "" || !bytes.Equal(plain.Body.Bytes(), raw) ||
				plain.Header().Get("Cache-Control") != cache || plain.Header().Get("Vary") != "Accept-Encoding" {
				t.Fatalf("%s (plain): %d %v, %d bytes", file.target, plain.Code, plain.Header(), plain.Body.Len())
			}
			gzTag, plainTag := gz.Header().Get("ETag"), plain.Header().Get("ETag")
			if !strings.HasPrefix(gzTag, `"`) || !strings.HasPrefix(plainTag, `"`) || gzTag == plainTag {
				t.Fatalf("%s: ETags %q (gzip) and %q (plain)", file.target, gzTag, plainTag)
			}
			for _, tc := range []struct{ accept, etag string }{{"gzip", gzTag}, {"", plainTag}} {
				w := get(t, h, file.target, append([]string{"Accept-Encoding", tc.accept, "If-None-Match", tc.etag}, auth...)...)
				if w.Code != 304 || w.Body.Len() != 0 || w.Header().Get("ETag") != tc.etag {
					t.Fatalf("%s If-None-Match %s: %d %v", file.target, tc.etag, w.Code, w.Header())
				}
			}
			// The other form's ETag does not match.
			if w := get(t, h, file.target, append([]string{"Accept-Encoding", "gzip", "If-None-Match", plainTag}, auth...)...); w.Code != 200 {
				t.Fatalf("%s with the plain form's ETag: %d", file.target, w.Code)
			}
		}
		if c.token != "" {
			if w := get(t, h, "/"+appJS); w.Code != 401 {
				t.Fatalf("%s without the token: %d", appJS, w.Code)
			}
		}
		for _, target := range []string{"/app.js", "/wasm/kv0.wasm.br", "/wasm/", "/index.html.gz.gz"} {
			if w := get(t, h, target, append([]string{"Accept-Encoding", "gzip"}, auth...)...); w.Code != 404 {
				t.Fatalf("%s: %d", target, w.Code)
			}
		}
	}
}

// TestStaticVary checks that a folder's file with a precompressed sibling
// answers Vary: Accept-Encoding in both forms (a cache must not give the
// brotli bytes to a client that did not ask for them), and one without
// none.
func TestStaticVary(t *testing.T) {
	f := newFixture(t)
	h := New(f.st, "", Options{Wasm: fstest.MapFS{
		"kv0.wasm":    {Data: []byte("\x00asm raw")},
		"kv0.wasm.br": {Data: []byte("brotli bytes")},
		"kv0.mjs":     {Data: []byte("export {}")},
	}})
	for _, accept := range []string{"", "br"} {
		if w := get(t, h, "/wasm/kv0.wasm", "Accept-Encoding", accept); w.Code != 200 || w.Header().Get("Vary") != "Accept-Encoding" {
			t.Errorf("kv0.wasm (Accept-Encoding %q): %d %v", accept, w.Code, w.Header())
		}
	}
	if w := get(t, h, "/wasm/kv0.mjs", "Accept-Encoding", "br"); w.Code != 200 || w.Header().Get("Vary") != "" || w.Header().Get("ETag") != "" {
		t.Errorf("kv0.mjs: %d %v", w.Code, w.Header())
	}
}
