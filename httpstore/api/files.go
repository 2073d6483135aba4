package api

import (
	"errors"
	"io"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/kv0/kv0/core/store"
)

// Objects of a Lance dataset that never change once written: data files,
// deletion files, transactions and manifests (created with PutIfAbsent,
// under names never reused). Everything else (the latest-version hint,
// tags) may be overwritten in place. A cleanup or purge may still remove
// them, so they are not immutable either: an ETag of key and size, and
// max-age LatestMaxAge (Handler.maxAge).
func immutableObject(key string) bool {
	for _, dir := range []string{"data/", "_deletions/", "_transactions/"} {
		if strings.HasPrefix(key, dir) || strings.Contains(key, "/"+dir) {
			return true
		}
	}
	return strings.HasSuffix(key, ".manifest") && (strings.HasPrefix(key, "_versions/") || strings.Contains(key, "/_versions/"))
}

// smallObject is the size up to which a mutable object is read whole to
// compute its ETag from its content.
const smallObject = 1 << 20

// fileChunk is the size of the ranged reads that stream a file's body.
const fileChunk = 1 << 20

// getFile serves one object of the root: Range (one range; "bytes=a-b",
// "bytes=a-", "bytes=-n"), If-Range, If-None-Match, ETag, no listing.
func (h *Handler) getFile(w http.ResponseWriter, r *http.Request, key string) error {
	if _, err := parseQuery(r.URL.RawQuery, nil, nil); err != nil {
		return err
	}
	ctx := r.Context()
	full := h.key(key)
	info, err := h.st.Stat(ctx, full)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return notFound("no object %q", key)
		}
		return err
	}
	size := info.Size
	// The buffer the object is read through (or its whole content)
	// comes from the memory budget, so that many readers at once are
	// bounded too.
	mem := h.mem.reserve(ctx)
	defer mem.release()
	if err := mem.grow(min(size, fileChunk)); err != nil {
		return err
	}
	hd := w.Header()
	var whole []byte // the content, when it was read for the ETag
	var etag string
	if immutableObject(key) {
		etag = makeETag("file", key, strconv.FormatInt(size, 10))
		hd.Set("Cache-Control", h.maxAge())
	} else {
		if size <= smallObject {
			whole = make([]byte, size)
			if err := h.st.ReadAt(ctx, full, whole, 0); err != nil {
				return err
			}
			etag = makeETag("file", key, string(whole))
		} else {
			etag = makeETag("file", key, strconv.FormatInt(size, 10))
		}
		hd.Set("Cache-Control", "no-cache")
	}
	hd.Set("ETag", etag)
	hd.Set("Accept-Ranges", "bytes")
	if h.opts.Token != "" {
		hd.Add("Vary", "Authorization")
	}
	if ifNoneMatch(r, etag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	ctype := "application/octet-stream"
	if strings.HasSuffix(key, ".json") {
		ctype = "application/json"
	}
	hd.Set("Content-Type", ctype)
	hd.Set("X-Content-Type-Options", "nosniff")
	start, end, status := int64(0), size, http.StatusOK
	if rng := r.Header.Get("Range"); rng != "" && (r.Header.Get("If-Range") == "" || r.Header.Get("If-Range") == etag) {
		a, b, ok, satisfiable := parseRange(rng, size)
		switch {
		case ok && !satisfiable:
			hd.Del("ETag")
			hd.Set("Content-Range", "bytes */"+strconv.FormatInt(size, 10))
			return &apiError{status: http.StatusRequestedRangeNotSatisfiable, code: CodeRangeNotSatisfiable,
				msg: "Range: " + rng + " is past the end of " + key + " (" + strconv.FormatInt(size, 10) + " bytes)"}
		case ok:
			start, end, status = a, b, http.StatusPartialContent
			hd.Set("Content-Range", "bytes "+strconv.FormatInt(a, 10)+"-"+strconv.FormatInt(b-1, 10)+"/"+strconv.FormatInt(size, 10))
		}
	}
	hd.Set("Content-Length", strconv.FormatInt(end-start, 10))
	if whole != nil {
		w.WriteHeader(status)
		if r.Method != http.MethodHead {
			_, _ = w.Write(whole[start:end])
		}
		return nil
	}
	// Read the first chunk before answering, so a failing store still
	// gets its status.
	first := make([]byte, min(end-start, fileChunk))
	if err := h.st.ReadAt(ctx, full, first, start); err != nil {
		hd.Del("Content-Range")
		hd.Del("Content-Length")
		return err
	}
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return nil
	}
	buf := first
	for off := start; off < end; {
		n := min(end-off, fileChunk)
		if off != start {
			buf = buf[:n]
			if err := h.st.ReadAt(ctx, full, buf, off); err != nil {
				h.abort(w, nil, r, err)
			}
		}
		if _, err := w.Write(buf[:n]); err != nil {
			h.abort(w, nil, r, err)
		}
		off += n
	}
	return nil
}

func (h *Handler) scope() string {
	if h.opts.Token != "" {
		return "private"
	}
	return "public"
}

// parseRange reads a single byte range of an object of size bytes into
// [start, end). ok is false when the header is not one range of bytes
// (the answer is then the whole object, as RFC 9110 allows); satisfiable
// is false when the range starts past the end.
func parseRange(v string, size int64) (start, end int64, ok, satisfiable bool) {
	spec, found := strings.CutPrefix(v, "bytes=")
	if !found || strings.Contains(spec, ",") {
		return 0, 0, false, false
	}
	a, b, found := strings.Cut(strings.TrimSpace(spec), "-")
	if !found {
		return 0, 0, false, false
	}
	if a == "" { // the last b bytes
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 0 {
			return 0, 0, false, false
		}
		if n == 0 || size == 0 {
			return 0, 0, true, false
		}
		return max(0, size-n), size, true, true
	}
	s, err := strconv.ParseInt(a, 10, 64)
	if err != nil || s < 0 {
		return 0, 0, false, false
	}
	e := size - 1
	if b != "" {
		if e, err = strconv.ParseInt(b, 10, 64); err != nil || e < s {
			return 0, 0, false, false
		}
	}
	if s >= size {
		return 0, 0, true, false
	}
	return s, min(e, size-1) + 1, true, true
}

// StaticFS is a static folder (Options.Web, Options.Wasm) that knows each
// of its files' ETag and which of them never change under their names,
// such as the dashboard and wasm module built into kv0 (web/assets): its
// answers carry the ETag (a matching If-None-Match gets 304), and the
// immutable files may be kept by browsers for a year.
type StaticFS interface {
	fs.FS
	// Static is told the name of the file served (NAME.gz when its gzip
	// form is) and returns its ETag (quoted; one per file and form) and
	// whether it is immutable; ok is false for a file it does not know.
	Static(name string) (etag string, immutable bool, ok bool)
}

// staticImmutable is the max-age of a StaticFS's immutable files: a year.
const staticImmutable = 365 * 24 * 3600

// serveStatic serves a file of a static folder (the dashboard, the
// WebAssembly module): index.html for a folder, a precompressed .br or .gz
// sibling when the client accepts it (Vary: Accept-Encoding whenever there
// is one), no listing. scope is Cache-Control's public or private.
func serveStatic(w http.ResponseWriter, r *http.Request, fsys fs.FS, raw, what, scope string) error {
	if fsys == nil {
		return notFound("this server serves no %s", what)
	}
	name := "index.html"
	if raw != "" && !strings.HasSuffix(raw, "/") {
		var err error
		if name, err = cleanPath("path", raw); err != nil {
			return err
		}
	} else if raw != "" {
		dir, err := cleanPath("path", strings.TrimSuffix(raw, "/"))
		if err != nil {
			return err
		}
		name = dir + "/index.html"
	}
	if st, err := fs.Stat(fsys, name); err == nil && st.IsDir() {
		name += "/index.html"
	}
	hd := w.Header()
	hd.Set("Cache-Control", "no-cache")
	ctypeName := name
	accept := r.Header.Get("Accept-Encoding")
	encoded := ""
	for _, enc := range []struct{ suffix, name string }{{".br", "br"}, {".gz", "gzip"}} {
		if st, err := fs.Stat(fsys, name+enc.suffix); err != nil || !st.Mode().IsRegular() {
			continue
		}
		if hd.Get("Vary") == "" {
			hd.Add("Vary", "Accept-Encoding") // the answer depends on it, whichever form goes
		}
		if encoded == "" && strings.Contains(accept, enc.name) {
			hd.Set("Content-Encoding", enc.name)
			encoded = enc.suffix
		}
	}
	name += encoded
	f, err := fsys.Open(name)
	if err != nil {
		hd.Del("Content-Encoding")
		if errors.Is(err, fs.ErrNotExist) {
			return notFound("no file %q in %s", raw, what)
		}
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		// A folder, or a FIFO, socket or device, which a host's fs.FS
		// should refuse to open (kv0 serve's does: fsstore.Store.FS).
		hd.Del("Content-Encoding")
		return notFound("no file %q in %s", raw, what)
	}
	rs, ok := f.(io.ReadSeeker)
	if !ok {
		b, err := io.ReadAll(f)
		if err != nil {
			return err
		}
		rs = strings.NewReader(string(b))
	}
	if ct := contentTypeOf(ctypeName); ct != "" {
		hd.Set("Content-Type", ct)
	}
	if sf, ok := fsys.(StaticFS); ok {
		if etag, immutable, ok := sf.Static(name); ok {
			// http.ServeContent answers If-None-Match against it.
			hd.Set("ETag", etag)
			if immutable {
				hd.Set("Cache-Control", scope+", max-age="+strconv.Itoa(staticImmutable)+", immutable")
			}
		}
	}
	http.ServeContent(w, r, ctypeName, modTime(st), rs)
	return nil
}

func modTime(st fs.FileInfo) time.Time { return st.ModTime() }

// contentTypeOf names the types a browser needs exactly (module scripts
// and streaming WebAssembly compilation check them); others are left to
// http.ServeContent.
func contentTypeOf(name string) string {
	switch path.Ext(name) {
	case ".wasm":
		return "application/wasm"
	case ".mjs", ".js":
		return "text/javascript; charset=utf-8"
	case ".html":
		return "text/html; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".json", ".map":
		return "application/json"
	case ".ts":
		return "text/plain; charset=utf-8"
	}
	return ""
}
