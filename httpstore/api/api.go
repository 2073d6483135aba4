// Package api serves kv0's HTTP read API: one http.Handler over a
// store.Store root (a tracking repository, or any folder of Lance
// datasets) that `kv0 serve` runs on a host and the edge worker runs in a
// Cloudflare Worker. Every answer is built by the code the CLI prints
// through (core/inspect, core/tracking, core/jsonl), so the faces cannot
// drift apart. The package builds for js/wasm: it touches no operating
// system, only the store.
//
// Routes (GET; docs/http-api.md has the details):
//
//	/healthz
//	/api/v1/datasets/{path}/rows?version=&tag=&columns=&limit=&where=&format=jsonl|arrow
//	/api/v1/datasets/{path}/info?version=&tag=
//	/api/v1/datasets/{path}/log
//	/api/v1/runs?experiment=&status=&tag=&archived=&param=
//	/api/v1/runs/{id}, /api/v1/runs/{id}/params, /api/v1/runs/{id}/series
//	/api/v1/series?runs=|newest=      the series lists of several runs at once
//	/api/v1/series/points?ids=&max_points=&from_step=&to_step=&from_time=&to_time=&fields=
//	/api/v1/stats?ids=
//	/api/v1/versions
//	/api/v1/records, /api/v1/records/{table}?run=
//	/files/{key}          the root's objects by key, with Range (Options.Files)
//	/wasm/...             Options.Wasm
//	/...                  Options.Web (the dashboard)
//
// Errors answer {"error": {"code": "...", "message": "..."}} with the
// status of their kind (see Error codes in docs/http-api.md).
package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/tracking"
	"github.com/kv0/kv0/httpstore"
)

// Options configure a Handler. The zero value serves the API with CORS
// open to every origin, no token, no files and no static folders.
type Options struct {
	// AllowOrigin is the Access-Control-Allow-Origin of every answer
	// (default "*", fit for a read-only server). "-" sends none.
	AllowOrigin string
	// Token, when not empty, is the bearer token every route but /healthz
	// (and CORS preflights) requires: "Authorization: Bearer <Token>".
	Token string
	// Files serves the root's objects at /files/{key} (ranged reads, no
	// listing), so the WebAssembly reader's static mode can read the root
	// as it would a static host.
	Files bool
	// Web is the dashboard, served at / (index.html for /); nil answers
	// 404 there.
	Web fs.FS
	// Wasm is the WebAssembly module's folder, served at /wasm/; nil
	// answers 404 there.
	Wasm fs.FS
	// LatestMaxAge is the max-age of answers about the latest versions
	// (default 1 s; they also carry an ETag built from the versions read).
	LatestMaxAge time.Duration
	// Logf receives recovered panics and failed streams (default: none).
	Logf func(format string, args ...any)
	// AnswerCache is how many bytes of encoded answers of points and
	// statistics the handler keeps, by route, query and the tables'
	// versions, so that a repeated request for unchanged data is answered
	// without reading it again; a new version of any table makes new
	// keys. 0 means DefaultAnswerCache; a negative value keeps none.
	AnswerCache int64
	// VersionTTL, when positive, is how long a table's latest version, once
	// confirmed, is taken as still the latest without asking the store
	// again: answers about the latest versions may then be that much older
	// than the newest commit (they already carry max-age LatestMaxAge).
	// 0 (the default, kv0 serve's) confirms the versions on every request;
	// the edge worker sets it to LatestMaxAge, because each confirmation
	// costs it a dozen requests across the JavaScript boundary. It also
	// bounds how long an opened version found still stored is used without
	// checking its manifest again (a purge may remove it).
	VersionTTL time.Duration
	// MaxOpenFiles bounds the opened data files kept across requests
	// (their footers and column metadata; default 512).
	MaxOpenFiles int
	// MaxVersions bounds the opened dataset versions (manifests) kept
	// across requests (default 128).
	MaxVersions int
	// RequestMemory bounds the memory one request's answer holds at once:
	// the points it decodes and keeps, the answer it encodes (default
	// DefaultRequestMemory; negative: no bound). A larger answer is
	// streamed in parts that fit when its form allows (JSON points, the
	// series lists of many runs), else refused with 413 TooLarge. See
	// budget.go.
	RequestMemory int64
	// ServerMemory bounds what all the requests' answers hold at once
	// (default DefaultServerMemory; negative: no bound): a request that
	// finds no room waits a moment, then is refused with 503 Busy and
	// Retry-After.
	ServerMemory int64
}

// Handler is kv0's HTTP read API over one store root. It is safe for
// concurrent use and keeps caches (opened data files, manifests, the
// tracking repository's derived views) across requests, each version
// checked still stored, byte for byte, before a request answers from it: a
// cleanup, a purge or a dataset written again is never answered from
// memory.
type Handler struct {
	st   store.Store
	root string
	opts Options

	files    *lance.FileCache
	datasets datasetCache
	answers  *answerCache
	mem      *memBudget

	followMu sync.Mutex
	follow   map[string]followed // dataset key -> newest version seen

	repoMu   sync.Mutex
	repo     *tracking.Repo
	repoOpts tracking.RepoOptions // how the repository is opened (tests set a clock)
	now      func() time.Time     // nil: time.Now (tests set a clock)
}

func (h *Handler) clock() time.Time {
	if h.now != nil {
		return h.now()
	}
	return time.Now()
}

// New returns the handler of the API over the datasets and repository
// under root in st.
func New(st store.Store, root string, opts Options) *Handler {
	if opts.AllowOrigin == "" {
		opts.AllowOrigin = "*"
	}
	if opts.LatestMaxAge <= 0 {
		opts.LatestMaxAge = time.Second
	}
	if opts.AnswerCache == 0 {
		opts.AnswerCache = DefaultAnswerCache
	}
	if opts.MaxOpenFiles <= 0 {
		opts.MaxOpenFiles = 512
	}
	if opts.MaxVersions <= 0 {
		opts.MaxVersions = 128
	}
	return &Handler{st: st, root: root, opts: opts, files: lance.NewFileCache(opts.MaxOpenFiles),
		datasets: newDatasetCache(opts.MaxVersions), answers: newAnswerCache(max(opts.AnswerCache, 0)),
		mem:    newMemBudget(memOption(opts.ServerMemory, DefaultServerMemory), memOption(opts.RequestMemory, DefaultRequestMemory)),
		follow: map[string]followed{}}
}

// memOption is a memory bound of Options: def for 0, none for a negative.
func memOption(v, def int64) int64 {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 1 << 62
	}
	return v
}

// Close releases the tracking repository handle, if one was opened.
func (h *Handler) Close() error {
	h.repoMu.Lock()
	defer h.repoMu.Unlock()
	if h.repo == nil {
		return nil
	}
	err := h.repo.Close()
	h.repo = nil
	return err
}

func (h *Handler) logf(format string, args ...any) {
	if h.opts.Logf != nil {
		h.opts.Logf(format, args...)
	}
}

// ServeHTTP answers one request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rw := &respWriter{ResponseWriter: w}
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v) // a stream cut on purpose: the connection must break
			}
			h.logf("kv0 api: panic serving %s %s: %v\n%s", r.Method, r.URL.Path, v, debug.Stack())
			if rw.wrote {
				panic(http.ErrAbortHandler) // too late for a status: break the body
			}
			writeError(rw, &apiError{status: http.StatusInternalServerError, code: CodeInternal, msg: "internal error"})
		}
	}()
	h.cors(rw.Header())
	if r.Method == http.MethodOptions {
		rw.Header().Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
		rw.Header().Set("Access-Control-Allow-Headers", "Authorization, Range, If-None-Match, If-Range")
		rw.Header().Set("Access-Control-Max-Age", "86400")
		rw.WriteHeader(http.StatusNoContent)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		rw.Header().Set("Allow", "GET, HEAD, OPTIONS")
		writeError(rw, &apiError{status: http.StatusMethodNotAllowed, code: CodeMethodNotAllowed,
			msg: fmt.Sprintf("method %s: the API is read-only (GET)", r.Method)})
		return
	}
	raw := r.URL.EscapedPath()
	if raw == "/healthz" {
		writeJSONValue(rw, r, http.StatusOK, map[string]string{"status": "ok"}, false)
		return
	}
	if !h.authorized(r) {
		rw.Header().Set("WWW-Authenticate", `Bearer realm="kv0"`)
		writeError(rw, &apiError{status: http.StatusUnauthorized, code: CodeUnauthorized, msg: "missing or wrong bearer token (Authorization: Bearer <token>)"})
		return
	}
	var err error
	if strings.HasPrefix(raw, "/api/") {
		err = h.routeAgain(rw, r, raw) // answered again when a version is removed under the read (retry.go)
	} else {
		err = h.route(rw, r, raw)
	}
	if err != nil {
		writeError(rw, err)
	}
}

// respWriter remembers whether the answer has started.
type respWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *respWriter) WriteHeader(code int) {
	w.wrote = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *respWriter) Write(p []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(p)
}

// Flush sends what is buffered.
func (w *respWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *respWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (h *Handler) cors(hd http.Header) {
	if h.opts.AllowOrigin == "-" {
		return
	}
	hd.Set("Access-Control-Allow-Origin", h.opts.AllowOrigin)
	if h.opts.AllowOrigin != "*" {
		hd.Add("Vary", "Origin")
	}
	hd.Set("Access-Control-Expose-Headers", "ETag, Content-Range, Content-Length, Accept-Ranges, Retry-After")
}

func (h *Handler) authorized(r *http.Request) bool {
	if h.opts.Token == "" {
		return true
	}
	got, ok := httpstore.BearerToken(r.Header.Get("Authorization"))
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(h.opts.Token)) == 1
}

// route dispatches on the escaped path, so that encoded slashes and dots
// are seen as sent.
func (h *Handler) route(w http.ResponseWriter, r *http.Request, raw string) error {
	switch {
	case raw == "/api/v1/runs":
		return h.getRuns(w, r)
	case strings.HasPrefix(raw, "/api/v1/runs/"):
		segs := strings.Split(strings.TrimPrefix(raw, "/api/v1/runs/"), "/")
		id, err := url.PathUnescape(segs[0])
		if err != nil || id == "" || strings.ContainsRune(id, 0) {
			return argErr("id", "the run id %q is empty or malformed", segs[0])
		}
		switch {
		case len(segs) == 1:
			return h.getRun(w, r, id)
		case len(segs) == 2 && segs[1] == "params":
			return h.getParams(w, r, id)
		case len(segs) == 2 && segs[1] == "series":
			return h.getSeries(w, r, id)
		}
	case raw == "/api/v1/series":
		return h.getSeriesOfRuns(w, r)
	case raw == "/api/v1/series/points":
		return h.getPoints(w, r)
	case raw == "/api/v1/stats":
		return h.getStats(w, r)
	case raw == "/api/v1/versions":
		return h.getVersions(w, r)
	case strings.HasPrefix(raw, "/api/v1/datasets/"):
		rest := strings.TrimPrefix(raw, "/api/v1/datasets/")
		i := strings.LastIndexByte(rest, '/')
		if i < 0 {
			return notFound("no such route %s (want /api/v1/datasets/{path}/rows, /info or /log)", raw)
		}
		op := rest[i+1:]
		if op != "rows" && op != "info" && op != "log" {
			return notFound("no such route %s (want /api/v1/datasets/{path}/rows, /info or /log)", raw)
		}
		path, err := cleanPath("path", rest[:i])
		if err != nil {
			return err
		}
		switch op {
		case "rows":
			return h.getRows(w, r, path)
		case "info":
			return h.getInfo(w, r, path)
		default:
			return h.getLog(w, r, path)
		}
	case raw == "/api/v1/records" || strings.HasPrefix(raw, "/api/v1/records/"):
		return h.getRecordsRoute(w, r, raw)
	case strings.HasPrefix(raw, "/api/"):
	case strings.HasPrefix(raw, "/files/") || raw == "/files":
		if !h.opts.Files {
			return notFound("this server does not serve files (/files/)")
		}
		key, err := cleanPath("key", strings.TrimPrefix(raw, "/files/"))
		if err != nil {
			return err
		}
		return h.getFile(w, r, key)
	case strings.HasPrefix(raw, "/wasm/") || raw == "/wasm":
		return serveStatic(w, r, h.opts.Wasm, strings.TrimPrefix(strings.TrimPrefix(raw, "/wasm"), "/"), "WebAssembly module at /wasm/: build it (make wasm) or give kv0 serve --wasm DIR", h.scope())
	default:
		return serveStatic(w, r, h.opts.Web, strings.TrimPrefix(raw, "/"), "dashboard at /: build it (make web) or give kv0 serve --web DIR", h.scope())
	}
	return notFound("no such route %s", raw)
}

// cleanPath decodes a slash-separated path of the URL (its escaped form)
// into a store key relative to the root. It refuses, before any store is
// touched, every spelling of a way out of the root: "." and ".." segments
// (also percent-encoded), empty segments (an absolute path, "//"), encoded
// slashes, backslashes, NUL and other control bytes, and drive letters.
func cleanPath(arg, raw string) (string, error) {
	if raw == "" {
		return "", argErr(arg, "empty %s", arg)
	}
	segs := strings.Split(raw, "/")
	for i, s := range segs {
		d, err := url.PathUnescape(s)
		if err != nil {
			return "", argErr(arg, "%s %q is not a valid escaped path", arg, raw)
		}
		switch {
		case d == "":
			return "", argErr(arg, "%s %q has an empty segment (absolute paths and // are refused)", arg, raw)
		case d == "." || d == "..":
			return "", argErr(arg, "%s %q has a %q segment", arg, raw, d)
		case strings.ContainsAny(d, "/\\"):
			return "", argErr(arg, "%s %q has an encoded slash or a backslash", arg, raw)
		case strings.IndexFunc(d, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
			return "", argErr(arg, "%s %q has a NUL or control character", arg, raw)
		case i == 0 && len(d) == 2 && d[1] == ':':
			return "", argErr(arg, "%s %q starts with a drive letter", arg, raw)
		}
		segs[i] = d
	}
	key := strings.Join(segs, "/")
	if err := store.ValidateKey(key); err != nil {
		return "", argErr(arg, "%s %q: %v", arg, raw, err)
	}
	return key, nil
}

// key is the store key of a path under the root.
func (h *Handler) key(path string) string { return store.Join(h.root, path) }

// openedRepo returns the repository handle when it is open already.
func (h *Handler) openedRepo() *tracking.Repo {
	h.repoMu.Lock()
	defer h.repoMu.Unlock()
	return h.repo
}

// openRepo returns the repository handle, opening it on first use (and
// again after a failed open, so a repository created later is found).
func (h *Handler) openRepo(ctx context.Context) (*tracking.Repo, error) {
	h.repoMu.Lock()
	defer h.repoMu.Unlock()
	if h.repo != nil {
		return h.repo, nil
	}
	opts := h.repoOpts
	opts.ReadOnly = true
	r, err := tracking.OpenRepo(ctx, h.st, h.root, opts)
	if err != nil {
		if errors.Is(err, tracking.ErrNotFound) || errors.Is(err, lance.ErrNotFound) {
			return nil, notFound("the root holds no tracking repository")
		}
		return nil, err
	}
	h.repo = r
	return r, nil
}
