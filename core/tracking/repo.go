package tracking

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kv0/kv0/core/internal/par"
	"github.com/kv0/kv0/core/kv"
	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
)

// Defaults of the RepoOptions fields.
const (
	DefaultFlushRows     = 50_000
	DefaultFlushInterval = 5 * time.Second
	DefaultMaxFragments  = 32
	// DefaultCrashedAfter is how old a running run's heartbeat may get
	// before reads report the run as crashed.
	DefaultCrashedAfter = 5 * time.Minute
	// DefaultHeartbeatInterval is the longest time between two heartbeats
	// of a live writer (unless CrashedAfter/5 is shorter).
	DefaultHeartbeatInterval = 30 * time.Second
)

// RepoOptions configure OpenRepo. The zero value is a writable handle with
// the defaults above and no WAL.
type RepoOptions struct {
	// ReadOnly opens a handle that rejects writes with ErrReadOnly and
	// creates nothing; the repository must exist (ErrNotFound otherwise).
	ReadOnly bool
	// FlushRows is the number of buffered points that triggers a flush
	// (default 50 000). Writers block while twice as many are buffered and
	// a flush is still running, which bounds the writer's memory.
	FlushRows int
	// FlushInterval is the longest time a write stays buffered when
	// nothing else flushes (default 5 s; negative: only explicit flushes).
	FlushInterval time.Duration
	// MaxFragments is the fragment count above which a flush compacts a
	// table (metrics: an incremental sorted rewrite) (default 32;
	// negative: never automatically).
	MaxFragments int
	// WAL is the local write-ahead log (package native/wal). The Repo owns
	// it from OpenRepo on and closes it; records of kinds 20–23 are
	// appended to it (see wal.go). Ignored by read-only handles.
	WAL kv.WAL
	// Now is the wall clock (default time.Now); tests replace it.
	Now func() time.Time
	// HeartbeatInterval is the longest time between two heartbeats of the
	// runs this handle writes (default: DefaultHeartbeatInterval or
	// CrashedAfter/5, whichever is shorter; negative: no heartbeats). A
	// flush records one (a runs row per active run, see FieldHeartbeat)
	// when the last is at least this old, and the handle flushes for it
	// when nothing else does. A run is active from StartRun, or from its
	// first write after ResumeRun, until it ends.
	HeartbeatInterval time.Duration
	// CrashedAfter is the age of the heartbeat from which reads (Runs,
	// Run) report a run whose stored status is running as StatusCrashed
	// (default DefaultCrashedAfter; negative: never). Runs without any
	// heartbeat (written before heartbeats existed) stay running. Keep it
	// well above the writers' HeartbeatInterval.
	CrashedAfter time.Duration
	// OnHeartbeat, when set, is called with the time of each heartbeat
	// before its rows are buffered (and logged), with the handle's lock
	// held: it must not call the Repo. The CLI records it beside its run
	// lock to tell its own crashed heartbeats from another host's.
	OnHeartbeat func(at time.Time)
	// DataFormat is the format of the data files of the tables the handle
	// creates: lance.DataFormat21 (read by lance 8 and older) or
	// lance.DataFormat22. Empty means the format of the repository's
	// tables, or lance.DefaultDataFormat for a new repository. Opening an
	// existing repository with another format fails with an error matching
	// lance.ErrDataFormat. Ignored by read-only handles.
	DataFormat string
	// VersionTTL, when positive, lets a read-only handle use a table
	// version it confirmed as the newest less than VersionTTL ago without
	// asking the store again, so a page's burst of reads costs one
	// freshness check per table instead of one per read; a read may then
	// miss commits of the last VersionTTL. LatestVersions always asks the
	// store, and a newer version it finds ends the grace of the older one.
	// Ignored by writable handles.
	VersionTTL time.Duration
}

// Repo is a handle on one tracking repository. It is safe for concurrent
// use; Close flushes and releases it.
type Repo struct {
	st   store.Store
	root string
	opts RepoOptions

	mu       sync.Mutex // buf, lastSeq, runs, deleted, lastBeat
	buf      *buffer
	lastBeat time.Time // the last heartbeat buffered
	lastSeq  uint64
	runs     map[string]*Run // handles of runs written through this Repo
	deleted  map[string]bool // runs known to be tombstoned
	// claims are the runs this handle holds (or held), by id (claim.go);
	// holder is the id its claims name.
	claims   map[string]*claimState
	holder   string
	walEpoch uint64 // counts WAL rotations, from 1 (claimState.walEpoch)
	closed   bool
	closing  bool       // Close has begun: writes fail with ErrClosed, its flush runs
	full     *sync.Cond // signalled when a flush finishes
	flushing bool

	flushMu  sync.Mutex // one flush (or maintenance commit) at a time
	tables   tableSet   // latest known versions; guarded by flushMu
	tombScan tombScan   // guarded by flushMu
	// compacting is closed when the running background compaction of
	// metrics ends (nil: none runs); guarded by flushMu (buffer.go).
	compacting chan struct{}

	bgErr  atomic.Pointer[error]
	stop   chan struct{}
	done   chan struct{}
	spare  *points        // point columns of a committed buffer, for reuse; guarded by mu
	walBuf []byte         // pending WAL points record; guarded by mu
	plan   []plannedPoint // addPoints' scratch; guarded by mu
	walN   int

	caches readCaches       // derived results per table version (cache.go)
	files  *lance.FileCache // opened data files, shared by every table read
	format string           // the data format of the tables this handle creates (dataFormat)

	cacheMu sync.Mutex
	ranges  map[string][]sidRange  // sorted fragment key -> series ranges
	levels  map[string]*levelIndex // sorted fragment key -> level index (levels.go)
	// levelHits counts the series reads that stored levels answered (tests).
	levelHits atomic.Int64
	seen      map[string]seenVersion // table -> newest version read so far
}

// seenVersion is the newest version of a table a handle has read, and when
// a listing (or an open) last found it to be the newest.
type seenVersion struct {
	d       *lance.Dataset
	listed  time.Time
	checked time.Time // when it was last confirmed the newest (VersionTTL)
}

// repoFileCache is the number of opened data files a Repo keeps.
const repoFileCache = 256

type tableSet struct {
	runs, params, series, metrics *lance.Dataset
	records                       map[string]*lance.Dataset
}

type tombScan struct {
	last    time.Time
	version uint64
	seen    map[uint64]bool // runs fragment ids already read
}

// OpenRepo opens (and, unless read-only, creates) the repository rooted at
// root in st. A writable handle with a WAL replays the logs of abandoned
// writers first (see wal.go).
func OpenRepo(ctx context.Context, st store.Store, root string, opts RepoOptions) (*Repo, error) {
	if opts.FlushRows <= 0 {
		opts.FlushRows = DefaultFlushRows
	}
	if opts.FlushInterval == 0 {
		opts.FlushInterval = DefaultFlushInterval
	}
	if opts.MaxFragments == 0 {
		opts.MaxFragments = DefaultMaxFragments
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.CrashedAfter == 0 {
		opts.CrashedAfter = DefaultCrashedAfter
	}
	if opts.HeartbeatInterval == 0 {
		opts.HeartbeatInterval = DefaultHeartbeatInterval
		if opts.CrashedAfter > 0 {
			opts.HeartbeatInterval = min(opts.HeartbeatInterval, max(opts.CrashedAfter/5, time.Millisecond))
		}
	}
	if opts.ReadOnly {
		opts.WAL = nil
	}
	r := &Repo{st: st, root: root, opts: opts, buf: newBufferFrom(nil, min(opts.FlushRows, 1<<20)), runs: map[string]*Run{},
		deleted: map[string]bool{}, claims: map[string]*claimState{}, holder: NewRunID(), walEpoch: 1, ranges: map[string][]sidRange{}, levels: map[string]*levelIndex{}, seen: map[string]seenVersion{},
		files: lance.NewFileCache(repoFileCache)}
	r.full = sync.NewCond(&r.mu)
	r.tables.records = map[string]*lance.Dataset{}
	r.tombScan.seen = map[uint64]bool{}
	if opts.ReadOnly {
		// Open the tables every read of series needs at once: that proves
		// the repository exists, and a first read then only checks that
		// its table has not moved on (one listing) while it already
		// fetches the data it needs. The params table is opened by the
		// first read of parameters (or Prefetch): a server's read of
		// points never touches it, so opening it here would only add its
		// requests to that read's (the API's cold series read).
		tables := []string{RunsTable, SeriesTable, MetricsTable}
		found := make([]*lance.Dataset, len(tables))
		err := par.Do(ctx, len(tables), len(tables), func(ctx context.Context, i int) error {
			var err error
			found[i], err = r.latest(ctx, tables[i])
			return err
		})
		if err != nil {
			return nil, err
		}
		if found[0] == nil {
			return nil, fmt.Errorf("%w: no repository at %q", ErrNotFound, root)
		}
		return r, nil
	}
	if !writable {
		return nil, fmt.Errorf("%w: this build of kv0 only reads (tag kv0_readonly)", ErrReadOnly)
	}
	var err error
	if r.format, err = r.dataFormat(ctx); err != nil {
		return nil, err
	}
	for _, t := range []struct {
		name string
		dst  **lance.Dataset
	}{{RunsTable, &r.tables.runs}, {ParamsTable, &r.tables.params}, {SeriesTable, &r.tables.series}, {MetricsTable, &r.tables.metrics}} {
		d, err := r.openOrCreate(ctx, t.name, schemaOf(t.name))
		if err != nil {
			return nil, err
		}
		*t.dst = d
	}
	if opts.WAL != nil {
		if err := r.replayWAL(ctx); err != nil {
			_ = opts.WAL.Close(false)
			return nil, err
		}
	}
	r.stop, r.done = make(chan struct{}), make(chan struct{})
	go r.background()
	return r, nil
}

func schemaOf(table string) *arrowSchema {
	switch table {
	case RunsTable:
		return RunsSchema
	case ParamsTable:
		return ParamsSchema
	case SeriesTable:
		return SeriesSchema
	case MetricsTable:
		return MetricsSchema
	}
	return RecordsSchema
}

func (r *Repo) key(table string) string { return store.Join(r.root, table) }

// openOrCreate opens the latest version of a table, creating it empty when
// it does not exist (a concurrent creator wins harmlessly).
func (r *Repo) openOrCreate(ctx context.Context, table string, schema *arrowSchema) (*lance.Dataset, error) {
	d, err := lance.Open(ctx, r.st, r.key(table), lance.OpenOptions{Files: r.files})
	if err == nil || !errors.Is(err, lance.ErrNotFound) {
		return d, err
	}
	d, err = lance.Create(ctx, r.st, r.key(table), schema, lance.Batches(), lance.WriteOptions{DataFormat: r.format})
	if err != nil && errors.Is(err, lance.ErrExists) {
		return lance.Open(ctx, r.st, r.key(table), lance.OpenOptions{Files: r.files})
	}
	return d, err
}

// latest returns the newest version of a table for reading; a missing table
// reads as nil (empty).
func (r *Repo) latest(ctx context.Context, table string) (*lance.Dataset, error) {
	return r.latestWarm(ctx, table, warmFiles)
}

// Prefetch opens the latest version of each of the four tables and the
// data files of those with at most 64 fragments (their footers and, for
// small files, everything), all at once, so the reads that follow start
// from them instead of from a chain of requests. A page that will show
// runs, their series and charts calls it once after OpenRepo. It returns
// the first error; the reads repeat what failed and report it themselves.
func (r *Repo) Prefetch(ctx context.Context) error {
	tables := []string{RunsTable, ParamsTable, SeriesTable, MetricsTable}
	return par.Do(ctx, len(tables), len(tables), func(ctx context.Context, i int) error {
		d, err := r.latestWarm(ctx, tables[i], nil)
		if err != nil || d == nil {
			return err
		}
		warmFiles(ctx, d)
		return nil
	})
}

// warmFiles is the latestWarm hook of reads that visit every fragment:
// it opens their data files, unless there are too many to be worth it.
func warmFiles(ctx context.Context, d *lance.Dataset) {
	if len(d.Fragments()) <= warmFragments {
		_ = d.OpenFiles(ctx, nil)
	}
}

// warmFragments bounds the fragments warmFiles opens.
const warmFragments = 64

// latestWarm is latest for a read that knows what it will fetch. The
// handle keeps the newest version it has seen of each table: confirming it
// is still the newest costs one listing, and meanwhile warm (when set) runs
// on it, so the reads it starts (data file footers, which never change)
// overlap the listing instead of following it. warm's errors are ignored:
// the read proper repeats what failed and reports it.
func (r *Repo) latestWarm(ctx context.Context, table string, warm func(context.Context, *lance.Dataset)) (*lance.Dataset, error) {
	r.cacheMu.Lock()
	prev := r.seen[table]
	r.cacheMu.Unlock()
	if ttl := r.opts.VersionTTL; prev.d != nil && ttl > 0 && r.opts.ReadOnly && time.Since(prev.checked) < ttl {
		return prev.d, nil
	}
	var (
		d       *lance.Dataset
		err     error
		listed  = time.Now()
		checked = listed // the grace counts from before the check
	)
	if lance.Speculative(ctx) {
		// A speculative scope's versions are confirmed after the read
		// (lance.Speculate): they start no grace.
		checked = time.Time{}
	}
	if prev.d == nil {
		d, err = lance.Open(ctx, r.st, r.key(table), lance.OpenOptions{Files: r.files})
	} else {
		var wg sync.WaitGroup
		if warm != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				warm(ctx, prev.d)
			}()
		}
		// Shortly after a listing, the cheap probes of IsLatest (no
		// listing, whose cost grows with the versions kept) are enough;
		// see listEvery.
		same := false
		if time.Since(prev.listed) < listEvery {
			same, err = prev.d.IsLatest(ctx)
		}
		switch {
		case err != nil:
		case same:
			d, listed = prev.d, prev.listed
		default:
			d, err = prev.d.Latest(ctx)
		}
		wg.Wait()
	}
	r.cacheMu.Lock()
	defer r.cacheMu.Unlock()
	if errors.Is(err, lance.ErrNotFound) {
		delete(r.seen, table)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	switch cur := r.seen[table]; {
	case cur.d == nil || cur.d.Version() < d.Version() || cur.d.Version() == d.Version() && cur.listed.Before(listed),
		cur.d == prev.d && !d.SameVersion(prev.d):
		// Newer, or what this read started from was replaced (a table
		// deleted and written again may be at a lower version).
		r.seen[table] = seenVersion{d: d, listed: listed, checked: checked}
	case cur.d.Version() == d.Version() && cur.checked.Before(checked):
		cur.checked = checked
		r.seen[table] = cur
	}
	return d, nil
}

// nextSeq returns a sequence number: the wall clock in nanoseconds, made
// strictly increasing within the handle. Caller holds r.mu.
func (r *Repo) nextSeq(now time.Time) uint64 {
	s := uint64(now.UnixNano())
	if s <= r.lastSeq {
		s = r.lastSeq + 1
	}
	r.lastSeq = s
	return s
}

func (r *Repo) checkWritable() error {
	if r.opts.ReadOnly {
		return ErrReadOnly
	}
	if r.closed || r.closing {
		return ErrClosed
	}
	return nil
}

// heartbeatDueLocked reports whether a heartbeat is due: some run is
// active and the last heartbeat is at least HeartbeatInterval old. Caller
// holds r.mu.
func (r *Repo) heartbeatDueLocked(now time.Time) bool {
	if r.opts.HeartbeatInterval < 0 || now.Sub(r.lastBeat) < r.opts.HeartbeatInterval {
		return false
	}
	for _, run := range r.runs {
		if run.active && !run.deleted {
			return true
		}
	}
	return false
}

// addHeartbeatLocked buffers a heartbeat row for every active run when one
// is due. Caller holds r.mu.
func (r *Repo) addHeartbeatLocked() error {
	now := r.opts.Now().UTC()
	if r.closed || !r.heartbeatDueLocked(now) {
		return nil
	}
	if r.opts.OnHeartbeat != nil {
		r.opts.OnHeartbeat(now)
	}
	ids := make([]string, 0, len(r.runs))
	for id, run := range r.runs {
		if run.active && !run.deleted {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		rw := runRow{seq: r.nextSeq(now), fields: FieldHeartbeat, hasMsk: true,
			info: RunInfo{ID: id, Status: StatusRunning, CreatedAt: now, UpdatedAt: now, HeartbeatAt: now}}
		if err := r.addRunRow(rw); err != nil {
			return err
		}
	}
	r.lastBeat = now
	return nil
}

// reportStatus turns the stored status of in into the reported one
// (StatusCrashed for a running run with an old heartbeat).
func (r *Repo) reportStatus(in *RunInfo, now time.Time) {
	if in.Status == StatusRunning && r.opts.CrashedAfter > 0 && !in.HeartbeatAt.IsZero() &&
		now.Sub(in.HeartbeatAt) > r.opts.CrashedAfter {
		in.Status = StatusCrashed
	}
}

// background flushes every FlushInterval (and when a heartbeat is due) and
// syncs the WAL about every 100 ms.
func (r *Repo) background() {
	defer close(r.done)
	tick := 100 * time.Millisecond
	if r.opts.FlushInterval > 0 && r.opts.FlushInterval < tick {
		tick = r.opts.FlushInterval
	}
	if r.opts.HeartbeatInterval > 0 && r.opts.HeartbeatInterval < tick {
		tick = r.opts.HeartbeatInterval
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	lastFlush := time.Now()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		if r.opts.WAL != nil {
			r.mu.Lock()
			err := r.walWritePending()
			r.mu.Unlock()
			if err == nil {
				err = r.opts.WAL.Sync()
			}
			if err != nil {
				r.setBgErr(err)
			}
		}
		r.mu.Lock()
		beat := r.heartbeatDueLocked(r.opts.Now())
		r.mu.Unlock()
		if beat || r.opts.FlushInterval > 0 && time.Since(lastFlush) >= r.opts.FlushInterval {
			lastFlush = time.Now()
			if err := r.Flush(context.Background()); err != nil {
				r.setBgErr(err)
			}
		}
	}
}

func (r *Repo) setBgErr(err error) {
	if err != nil && !errors.Is(err, ErrClosed) {
		r.bgErr.CompareAndSwap(nil, &err)
	}
}

func (r *Repo) takeBgErr() error {
	if p := r.bgErr.Swap(nil); p != nil {
		return *p
	}
	return nil
}

// Close flushes the buffer, stops the background goroutine and closes the
// WAL. The handle refuses writes (ErrClosed) from the moment Close starts,
// so every write that succeeded is in the flush. When the flush fails the
// handle is closed anyway and the error returned; a WAL keeps the
// unflushed writes for the next OpenRepo.
func (r *Repo) Close() error {
	r.mu.Lock()
	if r.closed || r.closing {
		r.mu.Unlock()
		return nil
	}
	r.closing = true
	r.full.Broadcast() // a Track waiting for room returns; its point is buffered
	r.mu.Unlock()
	var err error
	if writable && !r.opts.ReadOnly {
		close(r.stop)
		<-r.done
		err = r.Flush(context.Background()) // with a last heartbeat of the active runs
	}
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	if r.opts.WAL != nil {
		if werr := r.opts.WAL.Close(err == nil); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

// ReadOnly reports whether the handle was opened read-only.
func (r *Repo) ReadOnly() bool { return r.opts.ReadOnly }

// Versions are the latest versions of a repository's tables (0 when a
// table does not exist), for cheap change detection.
type Versions struct {
	Runs    uint64            `json:"runs"`
	Params  uint64            `json:"params"`
	Series  uint64            `json:"series"`
	Metrics uint64            `json:"metrics"`
	Records map[string]uint64 `json:"records,omitempty"`
}

// LatestVersions returns the newest committed version of every table (the
// records tables only on stores that list). It
// reads only the version listings (no manifests), so a dashboard can poll
// it and reload only what changed. It does not flush the handle's buffer.
func (r *Repo) LatestVersions(ctx context.Context) (Versions, error) {
	var v Versions
	for _, t := range []struct {
		name string
		dst  *uint64
	}{{RunsTable, &v.Runs}, {ParamsTable, &v.Params}, {SeriesTable, &v.Series}, {MetricsTable, &v.Metrics}} {
		n, err := lance.LatestVersion(ctx, r.st, r.key(t.name))
		if err != nil && !errors.Is(err, lance.ErrNotFound) {
			return v, err
		}
		*t.dst = n
		// A newer version than the one reads use: they must look again.
		r.cacheMu.Lock()
		if cur := r.seen[t.name]; cur.d != nil && cur.d.Version() != n {
			cur.checked = time.Time{}
			r.seen[t.name] = cur
		}
		r.cacheMu.Unlock()
	}
	tables, err := r.RecordTables(ctx)
	if errors.Is(err, store.ErrNotSupported) {
		// A store that cannot list (a static HTTP server) cannot find the
		// records tables: they are left out.
		return v, nil
	}
	if err != nil {
		return v, err
	}
	for _, t := range tables {
		n, err := lance.LatestVersion(ctx, r.st, r.key(recordsKey(t)))
		if err != nil && !errors.Is(err, lance.ErrNotFound) {
			return v, err
		}
		if v.Records == nil {
			v.Records = map[string]uint64{}
		}
		v.Records[t] = n
	}
	return v, nil
}

// Changed reports whether a table of runs, series or metrics has a version
// newer than since holds, in one round trip of three small requests (a
// Stat of each table's next manifest, issued together) and no listing, so
// a poller that finds nothing new pays only that. Params and records
// change together with runs or series in practice; call LatestVersions for
// the exact picture once Changed says yes (and now and then regardless, as
// a cleanup may remove a next version before it is seen).
func (r *Repo) Changed(ctx context.Context, since Versions) (bool, error) {
	tables := []struct {
		name string
		v    uint64
	}{{RunsTable, since.Runs}, {SeriesTable, since.Series}, {MetricsTable, since.Metrics}}
	found := make([]bool, len(tables))
	errs := make([]error, len(tables))
	var wg sync.WaitGroup
	for i, t := range tables {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Tables the tracking layer writes use V2 manifest names.
			found[i], errs[i] = lance.VersionExists(ctx, r.st, r.key(t.name), t.v+1, lance.NamingV2)
		}()
	}
	wg.Wait()
	for i := range tables {
		if errs[i] != nil {
			return false, errs[i]
		}
		if found[i] {
			return true, nil
		}
	}
	return false, nil
}
