package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"iter"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/kv0/kv0/core/inspect"
	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/tracking"
)

// Versions is the answer of /api/v1/versions: the latest version of each
// table of the repository (0 for a table that does not exist yet).
type Versions struct {
	Runs    uint64 `json:"runs"`
	Params  uint64 `json:"params"`
	Series  uint64 `json:"series"`
	Metrics uint64 `json:"metrics"`

	// ids are the versions' manifest identities (lance.Dataset.ManifestID),
	// in the order of the fields, for ETags and kept answers: a table
	// deleted and written again has versions of the same numbers.
	ids [4]string
}

// manifests is the part of an ETag that names the manifests of the tables v
// names (a version 0 was not read).
func (v Versions) manifests() string {
	return strings.Join(v.ids[:], "/")
}

// versions reads the tables' latest versions, concurrently (lance's cheap
// probes, or a listing once a second; see Handler.latest).
func (h *Handler) versions(ctx context.Context) (Versions, error) {
	return h.versionsOf(ctx, allTables)
}

// tableSet names tables of the repository, one bit each.
type tableSet uint8

const (
	runsBit tableSet = 1 << iota
	paramsBit
	seriesBit
	metricsBit

	// allTables are the four tables /api/v1/versions reports.
	allTables = runsBit | paramsBit | seriesBit | metricsBit
	// dataTables are those a series' points and statistics follow from:
	// the series table names the series, the runs table says whether its
	// run still lives, the metrics table holds the points. Parameters
	// play no part in them, so those answers neither read nor name the
	// params table's version (a cold read probes three tables, not four).
	dataTables = runsBit | seriesBit | metricsBit
)

// tableField is one table of the repository and its field of a Versions.
type tableField struct {
	bit  tableSet
	name string
	dst  *uint64
	id   *string // the version's ManifestID
}

// tablesOf lists the tables of set with their fields of v.
func tablesOf(set tableSet, v *Versions) []tableField {
	var out []tableField
	for _, t := range []tableField{{runsBit, tracking.RunsTable, &v.Runs, &v.ids[0]}, {paramsBit, tracking.ParamsTable, &v.Params, &v.ids[1]},
		{seriesBit, tracking.SeriesTable, &v.Series, &v.ids[2]}, {metricsBit, tracking.MetricsTable, &v.Metrics, &v.ids[3]}} {
		if set&t.bit != 0 {
			out = append(out, t)
		}
	}
	return out
}

// versionsOf reads the latest versions of the tables of set, concurrently;
// the others are left 0. The runs table is always among them (it proves
// the repository exists).
func (h *Handler) versionsOf(ctx context.Context, set tableSet) (Versions, error) {
	var v Versions
	tables := tablesOf(set|runsBit, &v)
	errs := make([]error, len(tables))
	var wg sync.WaitGroup
	for i, t := range tables {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := h.latestDataset(ctx, store.Join(h.root, t.name))
			if err != nil && !isNotFound(err) {
				errs[i] = err
			}
			if d != nil {
				*t.dst, *t.id = d.Version(), d.ManifestID()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return v, err
		}
	}
	if v.Runs == 0 {
		return v, notFound("the root holds no tracking repository")
	}
	return v, nil
}

func isNotFound(err error) bool {
	return classify(err).status == http.StatusNotFound
}

// answer answers a request about the repository: it reads the versions of
// the tables the answer follows from (dataTables), sets the caching headers from them (answering 304 when the
// client's copy is current), and writes the answer kept for those
// versions, or builds it, keeping it (when keep is set) if the versions
// did not change meanwhile. build encodes the answer (a JSON document)
// from the open repository; q has been checked. Only answers that follow
// from those tables alone may be kept: points and statistics, not runs,
// whose status also follows the clock (a running run whose heartbeat is
// old enough reads as crashed); answers not kept are built for every
// request and tagged by their content instead of the versions.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, route string, q query, keep bool,
	build func(ctx context.Context, b *building) (body, error)) error {
	// The request's reads agree on each table's latest version and find
	// it once (a lance scope); a speculative scope takes the hinted
	// versions before their successors are known to be missing, and the
	// answer waits for that confirmation before it is sent. When a
	// confirmation fails (a commit landed), lance.Speculate answers the
	// request again without speculation; an error built on a refuted
	// version is no answer either. Nothing was written by then.
	first := true
	sent := false
	return lance.Speculate(r.Context(), func(ctx context.Context) error {
		if sent {
			return nil // streamed after its versions were confirmed: never twice
		}
		if !first {
			// The versions followed were taken from the failed
			// speculation: find them again.
			h.followMu.Lock()
			clear(h.follow)
			h.followMu.Unlock()
		}
		first = false
		return h.answerIn(w, r, ctx, route, q, keep, build, &sent)
	})
}

// building is what an answer's build is given.
type building struct {
	repo *tracking.Repo
	// mem is the request's share of the memory budget: a build tells it
	// of what it is about to hold (budget.go). What it holds when the
	// answer has been written is given back then.
	mem *reservation
	// start, on the routes whose answers may be streamed (keep), begins
	// an answer written as it is made, once its first part is ready: it
	// confirms the versions read, writes the status and headers (ctype,
	// no Content-Length) and returns where the body goes (nil for HEAD:
	// nothing more to write). A build that called it returns an empty
	// body; an error it returns afterwards cuts the stream.
	start   func(ctype string) (io.Writer, error)
	started bool
}

// body is the answer a build made: its bytes, or (whole nil) the
// concatenation of parts, a part possibly repeated with its memory shared.
type body struct {
	whole []byte
	parts [][]byte
}

// wholeBody is the body of an answer built whole.
func wholeBody(b []byte, err error) (body, error) { return body{whole: b}, err }

// size is the body's length in bytes.
func (b body) size() int {
	if b.whole != nil {
		return len(b.whole)
	}
	n := 0
	for _, p := range b.parts {
		n += len(p)
	}
	return n
}

// write writes the body (with Content-Length) as writeBytes does.
func (b body) write(w http.ResponseWriter, r *http.Request, status int, ctype string) {
	if b.whole != nil || len(b.parts) == 0 {
		writeBytes(w, r, status, ctype, b.whole)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", ctype)
	hd.Set("Content-Length", strconv.Itoa(b.size()))
	hd.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	for _, p := range b.parts {
		if _, err := w.Write(p); err != nil {
			return // the client went away
		}
	}
}

// etag is the strong tag of the body's content under the parts before
// it: makeETag(append(before, content)...).
func (b body) etag(before ...string) string {
	if b.whole != nil || len(b.parts) == 0 {
		return makeETag(append(before, string(b.whole))...)
	}
	hs := sha256.New()
	hs.Write([]byte(apiVersion))
	for _, p := range before {
		hs.Write([]byte{0})
		hs.Write([]byte(p))
	}
	hs.Write([]byte{0})
	for _, p := range b.parts {
		hs.Write(p)
	}
	return `"` + hex.EncodeToString(hs.Sum(nil)[:16]) + `"`
}

// errRefuted is answerIn's error when its speculative scope took a version
// that was not the latest: nothing was written, and lance.Speculate
// answers again.
var errRefuted = errors.New("api: a version taken for the latest was not")

// answerIn is answer in the scope of ctx. It writes nothing when it returns
// an error, errRefuted among them; it sets *sent once it streamed.
func (h *Handler) answerIn(w http.ResponseWriter, r *http.Request, ctx context.Context, route string, q query, keep bool,
	build func(ctx context.Context, b *building) (body, error), sent *bool) error {
	start := h.clock()
	confirmed := func() error {
		ok, err := lance.ConfirmScope(ctx)
		if err == nil && !ok {
			return errRefuted
		}
		return err
	}
	// No probe outlives the request, even one that fails: the worker ties
	// every read to the request that made it.
	defer func() { _, _ = lance.ConfirmScope(ctx) }()
	mem := h.mem.reserve(ctx)
	defer mem.release() // once the answer is written
	if !keep {
		// The answer also follows the clock (a running run whose heartbeat
		// grew old reads as crashed at the same versions), so its tag
		// covers what it says, and the versions are not read for it: a
		// client revalidating a stale copy gets the new answer, not a 304.
		repo, err := h.openRepo(ctx)
		if err != nil {
			return err
		}
		b, err := build(ctx, &building{repo: repo, mem: mem})
		if err != nil {
			return err
		}
		if err := confirmed(); err != nil {
			return err
		}
		if h.setCaching(w, r, validator{etag: "W/" + b.etag(route, q.v.Encode())}) {
			return nil
		}
		b.write(w, r, http.StatusOK, "application/json")
		return nil
	}
	// The repository handle (opened on first use) is prepared while the
	// versions are read: it reads manifests, not the answer's data, and
	// confirms the versions again when it reads.
	repo := h.openedRepo()
	var (
		repoErr error
		opened  chan struct{}
	)
	if repo == nil {
		opened = make(chan struct{})
		go func() {
			defer close(opened)
			repo, repoErr = h.openRepo(ctx)
		}()
	}
	v, err := h.versionsOf(ctx, dataTables)
	if opened != nil {
		<-opened
	}
	if err != nil {
		return err
	}
	// Weak: the versions are read before the answer, which a commit
	// landing in between makes newer than the ETag says (never older).
	etag := "W/" + makeETag(route, q.v.Encode(), strconv.FormatUint(v.Runs, 10),
		strconv.FormatUint(v.Series, 10), strconv.FormatUint(v.Metrics, 10), v.manifests())
	kept := h.answers.get(etag)
	if kept != nil || r.Header.Get("If-None-Match") != "" {
		// Nothing to read before the answer: the versions must be
		// confirmed now.
		if err := confirmed(); err != nil {
			return err
		}
		h.confirmFollowed(v, start)
	}
	if h.setCaching(w, r, validator{etag: etag}) {
		return nil
	}
	if kept != nil {
		writeBytes(w, r, http.StatusOK, q.answerType(), kept)
		return nil
	}
	if repoErr != nil {
		return repoErr
	}
	bd := &building{repo: repo, mem: mem}
	bd.start = func(ctype string) (io.Writer, error) {
		if err := confirmed(); err != nil {
			return nil, err
		}
		h.confirmFollowed(v, start)
		hd := w.Header()
		hd.Set("Content-Type", ctype)
		hd.Set("X-Content-Type-Options", "nosniff")
		bd.started, *sent = true, true
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodHead {
			return nil, nil
		}
		return w, nil
	}
	b, err := build(ctx, bd)
	if bd.started {
		if err != nil {
			h.abort(w, nil, r, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if err := confirmed(); err != nil {
		return err
	}
	h.confirmFollowed(v, start)
	b.write(w, r, http.StatusOK, q.answerType())
	// Kept only as the answer of exactly these versions: a commit that
	// landed while it was built may show in it. The versions are read
	// again (outside the request's scope) once the answer is sent, so the
	// client does not wait for them.
	if h.answers.max > 0 && b.whole != nil {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		if after, err := h.versionsOf(r.Context(), dataTables); err == nil && after == v {
			h.answers.put(etag, b.whole)
		}
	}
	return nil
}

// answerType is the Content-Type of a kept answer to q: JSON, or the
// binary form of points that format=f64 asks for.
func (q query) answerType() string {
	if q.str("format") == "f64" {
		return PointsF64Type
	}
	return "application/json"
}

func (h *Handler) getVersions(w http.ResponseWriter, r *http.Request) error {
	if _, err := parseQuery(r.URL.RawQuery, nil, nil); err != nil {
		return err
	}
	v, err := h.versions(r.Context())
	if err != nil {
		return err
	}
	w.Header().Set("ETag", makeETag("versions", strconv.FormatUint(v.Runs, 10), strconv.FormatUint(v.Params, 10),
		strconv.FormatUint(v.Series, 10), strconv.FormatUint(v.Metrics, 10), v.manifests()))
	w.Header().Set("Cache-Control", "no-cache") // the change detector: always revalidated
	if ifNoneMatch(r, w.Header().Get("ETag")) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	writeJSONValue(w, r, http.StatusOK, v, false)
	return nil
}

// maxFilters is the most tag and param filters each of one request of
// /api/v1/runs.
const maxFilters = 100

func (h *Handler) getRuns(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r.URL.RawQuery, []string{"experiment", "status", "archived"}, []string{"tag", "param"})
	if err != nil {
		return err
	}
	var f tracking.RunFilter
	if f.Experiment, err = q.nonEmpty("experiment"); err != nil {
		return err
	}
	if f.Status, err = q.nonEmpty("status"); err != nil {
		return err
	}
	if tracking.CheckStatusFilter(f.Status) != nil {
		return argErr("status", "%q is none of running, finished, failed, aborted, crashed", f.Status)
	}
	// Each filter is checked against every run: their number is bounded
	// (a long URL of them would cost the CPU what a long list of ids
	// costs memory elsewhere).
	for _, k := range []string{"tag", "param"} {
		if n := len(q.v[k]); n > maxFilters {
			return argErr(k, "given %d times; at most %d per request", n, maxFilters)
		}
	}
	for _, t := range q.v["tag"] {
		if t == "" {
			return argErr("tag", "empty value")
		}
		f.Tags = append(f.Tags, t)
	}
	if q.has("archived") {
		switch a := q.str("archived"); a {
		case "true", "false":
			b := a == "true"
			f.Archived = &b
		default:
			return argErr("archived", "want true or false, got %q", a)
		}
	}
	for _, p := range q.v["param"] {
		pf, err := tracking.ParseParamFilter(p)
		if err != nil {
			return argErr("param", "%v", err)
		}
		f.Params = append(f.Params, pf)
	}
	return h.answer(w, r, "runs", q, false, func(ctx context.Context, b *building) (body, error) {
		runs, err := b.repo.Runs(ctx, f)
		if err != nil {
			return body{}, err
		}
		return wholeBody(encodeJSON(runs, true))
	})
}

// runRoute answers a route about one run: build encodes the answer
// from the run's record.
func (h *Handler) runRoute(w http.ResponseWriter, r *http.Request, route, id string,
	build func(ctx context.Context, repo *tracking.Repo, in tracking.RunInfo) ([]byte, error)) error {
	q, err := parseQuery(r.URL.RawQuery, nil, nil)
	if err != nil {
		return err
	}
	return h.answer(w, r, route+"\x00"+id, q, false, func(ctx context.Context, b *building) (body, error) {
		in, err := inspect.ResolveRun(ctx, b.repo, id)
		if err != nil {
			return body{}, err
		}
		return wholeBody(build(ctx, b.repo, in))
	})
}

func (h *Handler) getRun(w http.ResponseWriter, r *http.Request, id string) error {
	return h.runRoute(w, r, "run", id, func(_ context.Context, _ *tracking.Repo, in tracking.RunInfo) ([]byte, error) {
		return encodeJSON(in, true)
	})
}

func (h *Handler) getParams(w http.ResponseWriter, r *http.Request, id string) error {
	return h.runRoute(w, r, "params", id, func(ctx context.Context, repo *tracking.Repo, in tracking.RunInfo) ([]byte, error) {
		ps, err := inspect.RunParams(ctx, repo, in.ID)
		if err != nil {
			return nil, err
		}
		return encodeJSON(ps, true)
	})
}

func (h *Handler) getSeries(w http.ResponseWriter, r *http.Request, id string) error {
	return h.runRoute(w, r, "series", id, func(ctx context.Context, repo *tracking.Repo, in tracking.RunInfo) ([]byte, error) {
		series, err := inspect.RunSeries(ctx, repo, in.ID)
		if err != nil {
			return nil, err
		}
		return encodeJSON(inspect.WebSeriesOf(series), true)
	})
}

// maxPointsLimit bounds max_points.
const maxPointsLimit = 10_000_000

func (h *Handler) getPoints(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r.URL.RawQuery, []string{"ids", "max_points", "from_step", "to_step", "from_time", "to_time", "fields", "format"}, nil)
	if err != nil {
		return err
	}
	binaryForm := false
	switch f := q.str("format"); f {
	case "", "json":
	case "f64":
		binaryForm = true
	default:
		return argErr("format", "want json or f64, got %q", f)
	}
	ids, err := q.seriesIDs()
	if err != nil {
		return err
	}
	fields, err := q.pointFields()
	if err != nil {
		return err
	}
	mp, err := q.int64In("max_points", 1000, 0, maxPointsLimit)
	if err != nil {
		return err
	}
	if mp == 2 || mp == 3 {
		return argErr("max_points", "%d leaves no room for a bucket's min and max: want 0 (every point), 1 (the last) or at least 4", mp)
	}
	opts := inspect.PointsOptions{MaxPoints: int(mp)}
	if q.has("from_step") || q.has("to_step") {
		from, err := q.int64In("from_step", -1<<63, -1<<63, 1<<63-1)
		if err != nil {
			return err
		}
		to, err := q.int64In("to_step", 1<<63-1, -1<<63, 1<<63-1)
		if err != nil {
			return err
		}
		if to < from {
			return argErr("to_step", "%d is before from_step %d", to, from)
		}
		opts.Steps = &tracking.StepRange{From: from, To: to}
	}
	from, hasFrom, err := q.timeParam("from_time")
	if err != nil {
		return err
	}
	to, hasTo, err := q.timeParam("to_time")
	if err != nil {
		return err
	}
	if hasFrom || hasTo {
		tr := &tracking.TimeRange{From: from, To: to}
		if !hasFrom {
			tr.From = minTime
		}
		if !hasTo {
			tr.To = maxTime
		}
		if tr.To.Before(tr.From) {
			return argErr("to_time", "%s is before from_time %s", q.str("to_time"), q.str("from_time"))
		}
		opts.Time = tr
	}
	// An id given twice is answered once: its points are the same.
	ids = distinctIDs(ids)
	return h.answer(w, r, "points", q, true, func(ctx context.Context, b *building) (body, error) {
		o := opts
		o.Reserve = b.mem.grow
		pts, err := inspect.SeriesPoints(ctx, b.repo, ids, o)
		if err == nil {
			enc, err := encodePoints(b.mem, pts, fields, binaryForm)
			if !isTooLarge(err) || len(ids) == 1 {
				return wholeBody(enc, err)
			}
		} else if !isTooLarge(err) || len(ids) == 1 {
			return body{}, err
		}
		// The answer does not fit the request's memory: it is read in
		// parts that do, and sent as they are read.
		b.mem.release()
		if binaryForm {
			return body{}, streamPointsF64(ctx, b, ids, opts, fields)
		}
		return body{}, streamPointsJSON(ctx, b, ids, opts, fields)
	})
}

// distinctIDs is ids without repeats, in the order of their first place.
func distinctIDs(ids []tracking.SeriesID) []tracking.SeriesID {
	seen := make(map[tracking.SeriesID]bool, len(ids))
	out := ids[:0:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// encodePoints encodes a whole points answer, telling mem of its bytes
// before it makes them.
func encodePoints(mem *reservation, pts []inspect.Points, fields pointFields, binaryForm bool) ([]byte, error) {
	if binaryForm {
		heads := pointsF64Heads(pts, fields)
		if err := mem.grow(int64(pointsF64Size(heads))); err != nil {
			return nil, err
		}
		return appendPointsF64(nil, pts, heads)
	}
	size := 4
	for i := range pts {
		size += pts[i].JSONSize()
	}
	if err := mem.grow(int64(size)); err != nil {
		return nil, err
	}
	b := make([]byte, 0, size)
	b = append(b, '[')
	for i := range pts {
		if i > 0 {
			b = append(b, ',')
		}
		fields.drop(&pts[i])
		start := len(b)
		b = fields.cut(pts[i].AppendJSON(b), start)
	}
	return append(b, "]\n"...), nil
}

// readFitting reads the points of ids in parts whose reads fit the
// request's memory, in order, handing each part's points to use, which
// returns how many of the bytes the request holds it keeps (what it does
// not keep is given back). A part that does not fit is read again as two
// halves; a single series that does not fit is TooLarge.
func readFitting(ctx context.Context, b *building, ids []tracking.SeriesID, opts inspect.PointsOptions,
	use func([]inspect.Points) (keep int64, err error)) error {
	kept := b.mem.size()
	opts.Reserve = b.mem.grow
	pts, err := inspect.SeriesPoints(ctx, b.repo, ids, opts)
	if err == nil {
		keep, err := use(pts)
		b.mem.shrinkTo(keep)
		return err
	}
	b.mem.shrinkTo(kept)
	if !isTooLarge(err) || len(ids) == 1 {
		return err
	}
	mid := len(ids) / 2
	if err := readFitting(ctx, b, ids[:mid], opts, use); err != nil {
		return err
	}
	return readFitting(ctx, b, ids[mid:], opts, use)
}

// errHeadDone ends a streamed answer to a HEAD request once its headers
// are written.
var errHeadDone = errors.New("api: HEAD answered")

// streamPointsJSON streams the JSON answer of ids that does not fit the
// request's memory whole: the series of each part that fits are encoded
// and written, then given back. The answer starts once the first part is
// read, so a failure before it still gets its status.
func streamPointsJSON(ctx context.Context, b *building, ids []tracking.SeriesID, opts inspect.PointsOptions, fields pointFields) error {
	var out io.Writer
	n := 0
	use := func(pts []inspect.Points) (int64, error) {
		if out == nil {
			w, err := b.start("application/json")
			if err != nil {
				return 0, err
			}
			if w == nil {
				return 0, errHeadDone
			}
			out = w
		}
		for i := range pts {
			size := pts[i].JSONSize() + 1
			if err := b.mem.grow(int64(size)); err != nil {
				return 0, err
			}
			buf := make([]byte, 1, size)
			buf[0] = ','
			if n == 0 {
				buf[0] = '['
			}
			fields.drop(&pts[i])
			buf = fields.cut(pts[i].AppendJSON(buf), 1)
			pts[i] = inspect.Points{}
			if _, err := out.Write(buf); err != nil {
				return 0, err
			}
			n++
		}
		return 0, nil
	}
	mid := len(ids) / 2
	err := readFitting(ctx, b, ids[:mid], opts, use)
	if err == nil {
		err = readFitting(ctx, b, ids[mid:], opts, use)
	}
	if errors.Is(err, errHeadDone) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = out.Write([]byte("]\n"))
	return err
}

// streamPointsF64 streams the binary answer of ids that does not fit the
// request's memory whole. Its header, which comes first, gives each
// series' length, so every part is read (and its points kept, within the
// request's memory) before anything is written; the arrays are then
// written a piece at a time rather than encoded whole.
func streamPointsF64(ctx context.Context, b *building, ids []tracking.SeriesID, opts inspect.PointsOptions, fields pointFields) error {
	var (
		pts   []inspect.Points
		heads []PointsF64Header
	)
	use := func(part []inspect.Points) (int64, error) {
		for i := range part {
			h := pointsF64Head(&part[i], fields)
			keepF64Arrays(&part[i], h.Fields)
			heads = append(heads, h)
		}
		pts = append(pts, part...)
		var kept int64
		for i := range pts {
			kept += int64(8 * heads[i].N * len(heads[i].Fields))
		}
		return kept, nil
	}
	mid := len(ids) / 2
	if err := readFitting(ctx, b, ids[:mid], opts, use); err != nil {
		return err
	}
	if err := readFitting(ctx, b, ids[mid:], opts, use); err != nil {
		return err
	}
	start, err := pointsF64Start(heads)
	if err != nil {
		return err
	}
	if err := b.mem.grow(int64(len(start) + f64Piece)); err != nil {
		return err
	}
	w, err := b.start(PointsF64Type)
	if err != nil || w == nil {
		return err
	}
	if _, err := w.Write(start); err != nil {
		return err
	}
	buf := make([]byte, 0, f64Piece)
	for i := range pts {
		for _, f := range heads[i].Fields {
			for k := 0; k < heads[i].N; {
				n := min(heads[i].N-k, f64Piece/8)
				buf = appendF64Field(buf[:0], &pts[i], f, k, k+n)
				if _, err := w.Write(buf); err != nil {
					return err
				}
				k += n
			}
		}
		pts[i] = inspect.Points{}
	}
	return nil
}

func (h *Handler) getStats(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r.URL.RawQuery, []string{"ids"}, nil)
	if err != nil {
		return err
	}
	ids, err := q.seriesIDs()
	if err != nil {
		return err
	}
	return h.answer(w, r, "stats", q, true, func(ctx context.Context, b *building) (body, error) {
		stats, err := inspect.SeriesStatsList(ctx, b.repo, ids)
		if err != nil {
			return body{}, err
		}
		return wholeBody(encodeJSON(stats, false))
	})
}

// maxRuns is the most runs one request of /api/v1/series may name.
const maxRuns = 1000

// runArgs reads runs=ID,ID,... (run ids, or names only one run has).
func (q query) runArgs() ([]string, error) {
	if !q.has("runs") {
		return nil, argErr("runs", "missing (give runs=ID,ID,...: run ids)")
	}
	s := q.v.Get("runs")
	if s == "" {
		return nil, argErr("runs", "empty list")
	}
	parts := strings.Split(s, ",")
	if len(parts) > maxRuns {
		return nil, argErr("runs", "%d runs; at most %d per request", len(parts), maxRuns)
	}
	for _, p := range parts {
		if p == "" {
			return nil, argErr("runs", "an empty run id in %q", s)
		}
		if strings.IndexFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
			return nil, argErr("runs", "the run id %q has a NUL or control character", p)
		}
	}
	return parts, nil
}

// RunSeriesList is one element of the answer of /api/v1/series: the run as
// the request named it and either its series (what /api/v1/runs/{id}/series
// answers for it) or, for a run that does not exist or a name several runs
// share, the error that route would answer (and a null series).
type RunSeriesList struct {
	Run    string              `json:"run"`
	Series []inspect.WebSeries `json:"series"`
	Error  *ErrorDetail        `json:"error,omitempty"`
}

// ErrorDetail is the code and message of an error, as in ErrorBody.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// seriesWorkers bounds the runs of one /api/v1/series request read at once.
const seriesWorkers = 8

// getSeriesOfRuns answers /api/v1/series?runs=ID,ID: the series lists of
// several runs in one answer, in the order asked, so a page showing many
// runs needs one round trip, not one per run; or ?newest=N: those of the N
// most recently created runs, newest first, so a page that shows the
// newest runs can ask for their series before it has listed the runs.
func (h *Handler) getSeriesOfRuns(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r.URL.RawQuery, []string{"runs", "newest"}, nil)
	if err != nil {
		return err
	}
	var args []string
	newest := 0
	switch {
	case q.has("runs") && q.has("newest"):
		return argErr("newest", "runs and newest exclude each other")
	case q.has("newest"):
		n, err := q.int64In("newest", 0, 1, maxRuns)
		if err != nil {
			return err
		}
		newest = int(n)
	default:
		if args, err = q.runArgs(); err != nil {
			return err
		}
	}
	return h.answer(w, r, "series-of-runs", q, false, func(ctx context.Context, b *building) (body, error) {
		list := args // a read answered again starts from the request's list
		if newest > 0 {
			runs, err := b.repo.Runs(ctx, tracking.RunFilter{})
			if err != nil {
				return body{}, err
			}
			// Newest first; runs created at the same time in the order listed.
			slices.SortStableFunc(runs, func(a, b tracking.RunInfo) int { return b.CreatedAt.Compare(a.CreatedAt) })
			list = nil
			for _, in := range runs[:min(newest, len(runs))] {
				list = append(list, in.ID)
			}
		}
		// A run named twice is read and encoded once; its element is
		// repeated in the answer.
		at := make(map[string]int, len(list))
		var uniq []string
		for _, a := range list {
			if _, ok := at[a]; !ok {
				at[a] = len(uniq)
				uniq = append(uniq, a)
			}
		}
		out := make([]RunSeriesList, len(uniq))
		errs := make([]error, len(uniq))
		next := make(chan int)
		var wg sync.WaitGroup
		for range min(seriesWorkers, len(uniq)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					out[i], errs[i] = runSeriesList(ctx, b.repo, uniq[i])
				}
			}()
		}
		for i := range uniq {
			next <- i
		}
		close(next)
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return body{}, err
			}
		}
		return encodeElements(b.mem, out, func(yield func(int) bool) {
			for _, a := range list {
				if !yield(at[a]) {
					return
				}
			}
		})
	})
}

// encodeElements encodes a JSON array, on one line, of els in the order
// the indexes of order give (an element may come many times): each
// element is encoded once, and the answer is their concatenation, made
// whole when it is small (written at once) and left in parts otherwise,
// so a repeated element costs no memory again. It tells mem of the bytes.
func encodeElements[T any](mem *reservation, els []T, order iter.Seq[int]) (body, error) {
	enc := make([][]byte, len(els))
	for i := range els {
		b, err := encodeJSON(els[i], false)
		if err != nil {
			return body{}, err
		}
		if err := mem.grow(int64(len(b))); err != nil {
			return body{}, err
		}
		enc[i] = b[:len(b)-1] // without the encoder's newline
	}
	open, comma, end := []byte("["), []byte(","), []byte("]\n")
	parts := [][]byte{open}
	for i := range order {
		if len(parts) > 1 {
			parts = append(parts, comma)
		}
		parts = append(parts, enc[i])
	}
	parts = append(parts, end)
	b := body{parts: parts}
	if n := b.size(); n <= holdLimit {
		switch err := mem.grow(int64(n)); {
		case err == nil:
			return body{whole: bytes.Join(parts, nil)}, nil
		case !isTooLarge(err):
			return body{}, err
		}
	}
	return b, nil
}

// runSeriesList reads one run's series list as /api/v1/runs/{id}/series
// does. A run that is not found, or a name several runs share, is
// answered in the element; any other failure fails the request.
func runSeriesList(ctx context.Context, repo *tracking.Repo, arg string) (RunSeriesList, error) {
	el := RunSeriesList{Run: arg}
	in, err := inspect.ResolveRun(ctx, repo, arg)
	if err == nil {
		var series []inspect.Series
		if series, err = inspect.RunSeries(ctx, repo, in.ID); err == nil {
			el.Series = inspect.WebSeriesOf(series)
			if el.Series == nil {
				el.Series = []inspect.WebSeries{}
			}
			return el, nil
		}
	}
	if e := classify(err); e.status == http.StatusNotFound || e.status == http.StatusBadRequest {
		el.Error = &ErrorDetail{Code: e.code, Message: e.msg}
		return el, nil
	}
	return el, err
}

// pointArrays are the arrays of a points answer, in the order written.
var pointArrays = []string{"steps", "values", "timestamps", "epochs", "mins", "maxs"}

// pointFields is the set of arrays a points request answers (fields=);
// nil answers every array.
type pointFields map[string]bool

// pointFields reads fields=NAME,NAME (names of pointArrays, in any order).
func (q query) pointFields() (pointFields, error) {
	if !q.has("fields") {
		return nil, nil
	}
	s := q.v.Get("fields")
	if s == "" {
		return nil, argErr("fields", "empty list (give some of %s)", strings.Join(pointArrays, ","))
	}
	f := pointFields{}
	for _, name := range strings.Split(s, ",") {
		if !slices.Contains(pointArrays, name) {
			return nil, argErr("fields", "%q is not an array of the answer (want some of %s)", name, strings.Join(pointArrays, ","))
		}
		if f[name] {
			return nil, argErr("fields", "%q is named twice", name)
		}
		f[name] = true
	}
	return f, nil
}

// drop empties the arrays not asked for, so they cost no formatting.
// Mins goes only with maxs: AppendJSON writes both bands when it is set.
func (f pointFields) drop(p *inspect.Points) {
	if f == nil {
		return
	}
	if !f["steps"] {
		p.Steps = nil
	}
	if !f["values"] {
		p.Values = nil
	}
	if !f["timestamps"] {
		p.Timestamps = nil
	}
	if !f["epochs"] {
		p.Epochs = nil
	}
	if !f["maxs"] && p.Maxs != nil {
		p.Maxs = []float64{}
	}
	if !f["mins"] && !f["maxs"] {
		p.Mins, p.Maxs = nil, nil
	}
}

// cut removes from the object b[start:] (one series' points, as
// AppendJSON writes them) the arrays not asked for. Arrays hold numbers,
// null and the strings "NaN", "Infinity" and "-Infinity", so an array
// ends at the first ']' after its key.
func (f pointFields) cut(b []byte, start int) []byte {
	if f == nil {
		return b
	}
	for _, name := range pointArrays {
		if f[name] {
			continue
		}
		key := `,"` + name + `":[`
		i := bytes.Index(b[start:], []byte(key))
		if i < 0 {
			continue // a band not written (the read was not downsampled)
		}
		i += start
		j := bytes.IndexByte(b[i+len(key):], ']')
		if j < 0 {
			continue
		}
		b = append(b[:i], b[i+len(key)+j+1:]...)
	}
	return b
}
