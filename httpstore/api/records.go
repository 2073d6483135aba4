package api

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/kv0/kv0/core/inspect"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/tracking"
)

// The records routes:
//
//	/api/v1/records               the records tables' names
//	/api/v1/records/{table}?run=  the live records of a table (of one run)
//
// Their answers depend on tables the other tracking routes' ETags do not
// cover (the listing of records/, the table's own versions), so they carry
// their own: the names listed for the first, the table's and the runs
// table's latest versions (deleted runs hide their records) for the second.

// getRecordsRoute dispatches a path under /api/v1/records.
func (h *Handler) getRecordsRoute(w http.ResponseWriter, r *http.Request, raw string) error {
	if raw == "/api/v1/records" {
		return h.getRecordTables(w, r)
	}
	seg := strings.TrimPrefix(raw, "/api/v1/records/")
	if strings.Contains(seg, "/") {
		return notFound("no such route %s (want /api/v1/records or /api/v1/records/{table})", raw)
	}
	table, err := url.PathUnescape(seg)
	if err != nil {
		return argErr("table", "%q is not a valid escaped path segment", seg)
	}
	if err := tracking.CheckRecordTable(table); err != nil {
		return argErr("table", "%q is not a records table name (1 to 200 letters, digits, _ and -)", table)
	}
	return h.getRecords(w, r, table)
}

// noListing explains a store that cannot list (an http(s) origin).
func noListing(err error) error {
	if errors.Is(err, store.ErrNotSupported) {
		return &apiError{status: http.StatusNotImplemented, code: CodeUnsupported,
			msg: "this store cannot list objects, so the records tables cannot be found (ask for /api/v1/records/{table} by name): " + err.Error()}
	}
	return err
}

func (h *Handler) getRecordTables(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r.URL.RawQuery, nil, nil)
	if err != nil {
		return err
	}
	ctx := r.Context()
	repo, err := h.openRepo(ctx)
	if err != nil {
		return err
	}
	names, err := inspect.RecordTables(ctx, repo)
	if err != nil {
		return noListing(err)
	}
	if h.setCaching(w, r, validator{etag: "W/" + makeETag(append([]string{"records", q.v.Encode()}, names...)...)}) {
		return nil
	}
	writeJSONValue(w, r, http.StatusOK, names, false)
	return nil
}

func (h *Handler) getRecords(w http.ResponseWriter, r *http.Request, table string) error {
	q, err := parseQuery(r.URL.RawQuery, []string{"run"}, nil)
	if err != nil {
		return err
	}
	run, err := q.nonEmpty("run")
	if err != nil {
		return err
	}
	ctx := r.Context()
	repo, err := h.openRepo(ctx)
	if err != nil {
		return err
	}
	td, err := h.latestDataset(ctx, h.key(tracking.RecordsDir+"/"+table+".lance"))
	if err != nil {
		if isNotFound(err) {
			return notFound("no records table %q", table)
		}
		return err
	}
	rd, err := h.latestDataset(ctx, h.key(tracking.RunsTable))
	if err != nil {
		return err
	}
	// Weak, as the other tracking answers: the versions are read before
	// the records, so the answer may be newer than its ETag says.
	etag := "W/" + makeETag("records", table, q.v.Encode(), strconv.FormatUint(td.Version(), 10), td.ManifestID(),
		strconv.FormatUint(rd.Version(), 10), rd.ManifestID())
	if h.setCaching(w, r, validator{etag: etag}) {
		return nil
	}
	recs, err := inspect.Records(ctx, repo, table, run)
	if err != nil {
		return err
	}
	writeJSONValue(w, r, http.StatusOK, recs, true)
	return nil
}
