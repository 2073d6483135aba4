package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/lancefile"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/tracking"
)

// A read under way may lose its version: a cleanup or purge removes old
// versions (manifests first, then their files) and a dataset may be deleted
// and written again while a request reads it. The read then fails on a
// missing object, or on bytes that are not what the manifest said, which is
// not corruption: the request is answered again, once, from the newest
// version (or, for an explicit version, with the 404 of a version that is
// gone). When the second attempt loses its version too, the answer is 503
// with Retry-After: the data is being rewritten under the reader. A failure
// whose versions are all still stored is the error it is (a corrupt or
// missing file of a live version).

// readSet collects the dataset versions one attempt at a request answered
// from (opened, or confirmed the latest).
type readSet struct {
	mu sync.Mutex
	ds []*lance.Dataset
}

type readSetKey struct{}

// noteRead adds d to the read set of ctx, if it carries one.
func noteRead(ctx context.Context, d *lance.Dataset) {
	rs, _ := ctx.Value(readSetKey{}).(*readSet)
	if rs == nil || d == nil {
		return
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, x := range rs.ds {
		if x == d {
			return
		}
	}
	rs.ds = append(rs.ds, d)
}

// removed reports whether a version of rs is no longer stored (removed, or
// replaced by another manifest), dropping each such version from the
// handler's caches.
func (h *Handler) removed(ctx context.Context, rs *readSet) bool {
	rs.mu.Lock()
	ds := append([]*lance.Dataset(nil), rs.ds...)
	rs.mu.Unlock()
	gone := false
	for _, d := range ds {
		if ok, err := d.Stored(ctx); err == nil && !ok {
			h.forget(d)
			gone = true
		}
	}
	return gone
}

// lostVersion reports whether err may come from a version removed under
// the read: a missing object, or a file not as its manifest describes it.
// Answers the handler decided (a dataset or run that does not exist, a bad
// argument) are not.
func lostVersion(err error) bool {
	var ae *apiError
	if err == nil || errors.As(err, &ae) || errors.Is(err, tracking.ErrNotFound) {
		return false
	}
	return errors.Is(err, store.ErrNotFound) || errors.Is(err, lance.ErrNotFound) || errors.Is(err, store.ErrShortObject) ||
		errors.Is(err, lance.ErrCorrupt) || errors.Is(err, lancefile.ErrCorrupt) || errors.Is(err, tracking.ErrCorrupt)
}

// retryAfter is the Retry-After (seconds) of an answer whose data was
// rewritten under two attempts in a row.
const retryAfter = "1"

// routeAgain answers an API request through route, and once more when the
// first attempt failed on a version removed under it (see above). Nothing
// was written when an attempt returns an error, so the second starts from
// the headers the first started from.
func (h *Handler) routeAgain(w *respWriter, r *http.Request, raw string) error {
	hdr := w.Header().Clone()
	rs := &readSet{}
	err := h.route(w, r.WithContext(context.WithValue(r.Context(), readSetKey{}, rs)), raw)
	if w.wrote || !lostVersion(err) || r.Context().Err() != nil {
		return err
	}
	ctx := r.Context()
	// A dataset route knows what it read. The tracking routes read
	// through the repository, whose versions the handler does not see:
	// they answer again whenever the failure may be a lost version, and
	// the versions of their tables are what the second attempt is judged
	// by.
	dataset := strings.HasPrefix(raw, "/api/v1/datasets/")
	if !h.removed(ctx, rs) && dataset {
		return err
	}
	rs2 := &readSet{}
	ctx2 := context.WithValue(ctx, readSetKey{}, rs2)
	if !dataset {
		h.forgetTables()
		for _, t := range []string{tracking.RunsTable, tracking.ParamsTable, tracking.SeriesTable, tracking.MetricsTable} {
			_, _ = h.latestDataset(ctx2, h.key(t))
		}
	}
	replaceHeader(w.Header(), hdr)
	err2 := h.route(w, r.WithContext(ctx2), raw)
	if w.wrote || !lostVersion(err2) || ctx.Err() != nil {
		return err2
	}
	if h.removed(ctx, rs2) {
		w.Header().Set("Retry-After", retryAfter)
		return &apiError{status: http.StatusServiceUnavailable, code: CodeUnavailable,
			msg: "the data was rewritten while it was read (a version removed by a cleanup or purge, or the dataset written again); retry: " + err2.Error()}
	}
	return err2
}

// forgetTables drops the followed versions of the repository's tables, so
// that the next request confirms them from the store, and the repository
// handle's reads with them.
func (h *Handler) forgetTables() {
	h.followMu.Lock()
	defer h.followMu.Unlock()
	for _, t := range []string{tracking.RunsTable, tracking.ParamsTable, tracking.SeriesTable, tracking.MetricsTable} {
		delete(h.follow, h.key(t))
	}
}

// replaceHeader makes hd hold what saved holds, and nothing else.
func replaceHeader(hd, saved http.Header) {
	for k := range hd {
		if _, ok := saved[k]; !ok {
			delete(hd, k)
		}
	}
	for k, v := range saved {
		hd[k] = v
	}
}
