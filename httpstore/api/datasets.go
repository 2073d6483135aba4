package api

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/kv0/kv0/core/arrowstream"
	"github.com/kv0/kv0/core/inspect"
	"github.com/kv0/kv0/core/jsonl"
	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
)

// dataset opens the version of the dataset at path that o names (an
// explicit version, a tag, or the latest) and sets the answer's caching
// headers: an ETag of the route, the path, the version's number and
// manifest (lance.Dataset.ManifestID) and canon, max-age LatestMaxAge, never
// immutable (see validator). Every version it answers from was confirmed
// still stored by this request. It reports true when the request was
// answered with 304.
func (h *Handler) dataset(w http.ResponseWriter, r *http.Request, route, path string, o lance.OpenOptions, canon string) (*lance.Dataset, bool, error) {
	ctx := r.Context()
	key := h.key(path)
	var (
		d   *lance.Dataset
		err error
	)
	switch {
	case o.Version != 0:
		d, err = h.openVersion(ctx, key, o.Version)
	case o.Tag != "":
		// Tags move and are deleted: read every time, never kept.
		if d, err = lance.Open(ctx, h.st, key, lance.OpenOptions{Tag: o.Tag, Files: h.files}); err == nil {
			noteRead(ctx, d)
		}
	default:
		d, err = h.latestOf(ctx, path)
	}
	if err != nil {
		return nil, false, err
	}
	if h.setCaching(w, r, validator{etag: makeETag(route, path, strconv.FormatUint(d.Version(), 10), d.ManifestID(), canon)}) {
		return nil, true, nil
	}
	return d, false, nil
}

// latestOf is the newest version of the dataset at path; a path holding
// no dataset is a NotFound answer.
func (h *Handler) latestOf(ctx context.Context, path string) (*lance.Dataset, error) {
	d, err := h.latestDataset(ctx, h.key(path))
	if errors.Is(err, lance.ErrNotFound) || errors.Is(err, store.ErrNotFound) {
		return nil, notFound("no dataset at %q", path)
	}
	return d, err
}

func (h *Handler) getInfo(w http.ResponseWriter, r *http.Request, path string) error {
	q, err := parseQuery(r.URL.RawQuery, []string{"version", "tag"}, nil)
	if err != nil {
		return err
	}
	o, err := q.openOptions()
	if err != nil {
		return err
	}
	d, done, err := h.dataset(w, r, "info", path, o, "")
	if err != nil || done {
		return err
	}
	info, err := inspect.DatasetInfo(r.Context(), d, path)
	if err != nil {
		return err
	}
	writeJSONValue(w, r, http.StatusOK, info, false)
	return nil
}

func (h *Handler) getLog(w http.ResponseWriter, r *http.Request, path string) error {
	if _, err := parseQuery(r.URL.RawQuery, nil, nil); err != nil {
		return err
	}
	ctx := r.Context()
	key := h.key(path)
	d, err := h.latestOf(ctx, path)
	if err != nil {
		return err
	}
	// The log changes without a new version: a cleanup removes versions,
	// tags move. The versions listed and the tags (read: a tag moved to a
	// version of as many digits keeps its size) are part of the ETag when
	// the store lists, and the newest manifest's identity always is (a
	// dataset written again may have as many versions as before).
	parts := []string{"log", path, strconv.FormatUint(d.Version(), 10), d.ManifestID()}
	if objs, err := h.st.List(ctx, store.ListOptions{Prefix: store.Join(key, "_versions") + "/"}); err == nil {
		for _, o := range objs {
			parts = append(parts, o.Key, strconv.FormatInt(o.Size, 10))
		}
		tags, err := lance.ListTags(ctx, h.st, key)
		if err != nil {
			return err
		}
		for _, t := range tags {
			parts = append(parts, "tag", t.Name, strconv.FormatUint(t.Version, 10))
		}
	} else if !errors.Is(err, store.ErrNotSupported) {
		return err
	}
	if h.setCaching(w, r, validator{etag: makeETag(parts...)}) {
		return nil
	}
	log, err := inspect.DatasetLog(ctx, h.st, key)
	if err != nil {
		return err
	}
	writeJSONValue(w, r, http.StatusOK, log, false)
	return nil
}

// Content types of the rows route.
const (
	contentJSONL = "application/x-ndjson"
	contentArrow = "application/vnd.apache.arrow.stream"
)

func (h *Handler) getRows(w http.ResponseWriter, r *http.Request, path string) error {
	q, err := parseQuery(r.URL.RawQuery, []string{"version", "tag", "columns", "limit", "where", "format"}, nil)
	if err != nil {
		return err
	}
	o, err := q.openOptions()
	if err != nil {
		return err
	}
	var cols []string
	if q.has("columns") {
		for _, c := range strings.Split(q.str("columns"), ",") {
			if c = strings.TrimSpace(c); c == "" {
				return argErr("columns", "empty column name")
			}
			cols = append(cols, c)
		}
	}
	limit, err := q.int64In("limit", -1, 0, 1<<62)
	if err != nil {
		return err
	}
	format := "jsonl"
	if q.has("format") {
		format = q.str("format")
	}
	if format != "jsonl" && format != "arrow" {
		return argErr("format", "%q is not a format of rows (want jsonl or arrow)", format)
	}
	where := q.str("where")
	if q.has("where") && strings.TrimSpace(where) == "" {
		return argErr("where", "empty filter")
	}
	d, done, err := h.dataset(w, r, "rows", path, o, q.v.Encode())
	if err != nil || done {
		return err
	}
	ctx := r.Context()
	rows, err := inspect.ScanRows(ctx, d, inspect.RowsOptions{Columns: cols, Limit: limit, Where: where})
	if err != nil {
		return err
	}
	defer rows.Close()
	// The first batch is read before the answer starts, so that a dataset
	// failing at once still gets its status.
	more := rows.Next()
	if !more {
		if err := rows.Err(); err != nil {
			return err
		}
	}
	hd := w.Header()
	hd.Set("X-Content-Type-Options", "nosniff")
	if format == "arrow" {
		hd.Set("Content-Type", contentArrow)
	} else {
		hd.Set("Content-Type", contentJSONL)
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	var write func() error
	finish := func() error { return nil }
	if format == "arrow" {
		iw := arrowstream.NewWriter(bw, rows.Schema())
		write = func() error { return iw.Write(rows.Record()) }
		finish = iw.Close
	} else {
		jw := jsonl.NewWriter(bw)
		write = func() error { return jw.Write(rows.Record()) }
	}
	for ; more; more = rows.Next() {
		if err := write(); err != nil {
			h.abort(w, bw, r, err)
		}
	}
	if err := rows.Err(); err != nil {
		h.abort(w, bw, r, err)
	}
	if err := finish(); err != nil {
		h.abort(w, bw, r, err)
	}
	if err := bw.Flush(); err != nil {
		h.abort(w, bw, r, err)
	}
	return nil
}

// abort ends a streamed answer that failed half-way: what was encoded is
// sent and the connection is broken (no final chunk), so the client sees a
// truncated body, never one that looks complete.
func (h *Handler) abort(w http.ResponseWriter, bw *bufio.Writer, r *http.Request, err error) {
	h.logf("kv0 api: %s: stream cut: %v", r.URL.Path, err)
	if bw != nil {
		_ = bw.Flush()
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	panic(http.ErrAbortHandler)
}
