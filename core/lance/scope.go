package lance

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync"

	"github.com/kv0/kv0/core/store"
)

// A latest scope makes the reads of one request agree on the latest
// version of each dataset and find it once: within a context made by
// WithLatestScope, the first of Open (latest), LatestVersion,
// Dataset.Latest and Dataset.IsLatest to ask about a dataset root finds
// the answer, concurrent askers wait for it, and later askers get it
// without a request. Without a scope every call finds the latest version
// itself, as before.
//
// A speculative scope (ScopeOptions.Speculative) also takes, on a store
// that cannot list, the version the hint names as the latest as soon as
// its manifest is read, and confirms it (the next version's manifest is
// missing) in the background, so the reads that follow overlap the
// confirmation instead of waiting for it; likewise Dataset.IsLatest
// answers yes at once for the first version asked about, and checks it in
// the background. ConfirmScope waits for those
// confirmations; a caller must confirm before it answers, and read again
// without speculation when a confirmation fails.

type scopeCtxKey struct{}

// ScopeOptions tune a latest scope.
type ScopeOptions struct {
	// Speculative takes a hinted version before its successor is known to
	// be missing (see ConfirmScope).
	Speculative bool
}

type latestScope struct {
	spec bool
	base context.Context // the context the scope was made from: its confirmations run in it

	mu      sync.Mutex
	entries map[string]*scopeEntry
	pending []chan error // confirmations of speculative entries; nil error: confirmed
}

type scopeEntry struct {
	st   store.Store
	done chan struct{}
	mf   *manifestFile
	err  error
}

// WithLatestScope returns a context whose reads share one answer per
// dataset root to "which version is the latest" (see the comment above).
// The scope lives as long as the values of the context: make one per
// request, never for a long-lived reader, or it never sees a new version.
func WithLatestScope(ctx context.Context, opts ScopeOptions) context.Context {
	return context.WithValue(ctx, scopeCtxKey{}, &latestScope{spec: opts.Speculative, base: ctx, entries: map[string]*scopeEntry{}})
}

func scopeOf(ctx context.Context) *latestScope {
	s, _ := ctx.Value(scopeCtxKey{}).(*latestScope)
	return s
}

// Speculative reports whether ctx carries a speculative scope, whose
// answers are confirmed only by ConfirmScope.
func Speculative(ctx context.Context) bool {
	s := scopeOf(ctx)
	return s != nil && s.spec
}

// ConfirmScope waits until every version a speculative scope took for the
// latest is confirmed, and reports whether all were (a false answer means
// a newer version was committed: read again without speculation). Without
// a scope, or in one that does not speculate, it reports true.
func ConfirmScope(ctx context.Context) (bool, error) {
	s := scopeOf(ctx)
	if s == nil {
		return true, nil
	}
	s.mu.Lock()
	pending := s.pending
	s.mu.Unlock()
	ok := true
	for _, c := range pending {
		select {
		case err := <-c:
			c <- err // for the next ConfirmScope
			if errors.Is(err, errMoved) {
				ok = false
			} else if err != nil {
				return false, err
			}
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	return ok, nil
}

// Speculate runs read in a speculative scope made from ctx (see
// ScopeOptions.Speculative) and confirms the versions it took. When the
// confirmation fails or cannot be had (a newer version was committed
// meanwhile, or a probe failed), read runs again in a scope that does not
// speculate, and that run's outcome is Speculate's: read must leave its
// results only through its last run. A reader that holds versions from
// earlier reads (a warm handle) so reads its data while the checks that
// its versions are still the latest run, instead of after them.
func Speculate(ctx context.Context, read func(ctx context.Context) error) error {
	sctx := WithLatestScope(ctx, ScopeOptions{Speculative: true})
	err := read(sctx)
	if ok, cerr := ConfirmScope(sctx); cerr == nil && ok {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return read(WithLatestScope(ctx, ScopeOptions{}))
}

// NoteLatest records d as the latest version of its dataset in the scope
// of ctx, when the scope holds none yet: a caller that confirmed d by
// other means, or trusts a recent confirmation, makes the scope's other
// reads take d's version too.
func NoteLatest(ctx context.Context, d *Dataset) {
	s := scopeOf(ctx)
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.entries[d.k.root]; !ok {
		done := make(chan struct{})
		close(done)
		s.entries[d.k.root] = &scopeEntry{st: d.st, done: done, mf: d.mf}
	}
}

var errMoved = errors.New("lance: a newer version was committed")

// sameStore reports whether a and b are the same store value.
func sameStore(a, b store.Store) bool {
	if a == nil || b == nil {
		return a == b
	}
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta.Comparable() && a == b
}

// lookup returns the scope's finished or running entry for k's root on st.
func (s *latestScope) lookup(st store.Store, k keys) *scopeEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.entries[k.root]; ok && sameStore(e.st, st) {
		return e
	}
	return nil
}

// wait waits for e's answer.
func (e *scopeEntry) wait(ctx context.Context) (*manifestFile, error) {
	select {
	case <-e.done:
		return e.mf, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// scopedLatest returns the latest manifest of the dataset at k: the
// scope's answer when ctx has a scope (finding it first when no one has),
// else find's.
func scopedLatest(ctx context.Context, st store.Store, k keys, find func(context.Context) (*manifestFile, error)) (*manifestFile, error) {
	s := scopeOf(ctx)
	if s == nil {
		return find(ctx)
	}
	s.mu.Lock()
	if e, ok := s.entries[k.root]; ok {
		s.mu.Unlock()
		if !sameStore(e.st, st) {
			return find(ctx)
		}
		return e.wait(ctx)
	}
	e := &scopeEntry{st: st, done: make(chan struct{})}
	s.entries[k.root] = e
	s.mu.Unlock()
	e.mf, e.err = find(ctx)
	close(e.done)
	return e.mf, e.err
}

// speculate finds the latest manifest of the dataset at k on a store that
// cannot list: it reads the hint (version N), then manifest N and, at the
// same time, the probe of N+1, and answers N without waiting for the
// probe, whose outcome goes to the scope's confirmations: the probe is one
// round trip behind the hint, not two. Anything unusual (no hint, no
// manifest N under a V2 name) is left to latestByHint.
func (s *latestScope) speculate(ctx context.Context, st store.Store, k keys) (*manifestFile, error) {
	b, err := readSmall(ctx, st, k.hint())
	if err != nil {
		return latestByHint(ctx, st, k)
	}
	n, ok := parseHint(b)
	if !ok {
		return latestByHint(ctx, st, k)
	}
	c := make(chan error, 1) // buffered: an outcome nobody waits for is dropped
	go func() {
		// Not ctx: the caller's may end before the scope does (a group
		// of reads that returns when one fails).
		exists, err := VersionExists(s.base, st, k.root, n+1, NamingV2)
		switch {
		case err != nil:
			c <- err
		case exists:
			c <- errMoved
		default:
			c <- nil
		}
	}()
	cur, err := probe(ctx, st, k, n, NamingV2)
	if err != nil || cur == nil {
		return latestByHint(ctx, st, k)
	}
	s.mu.Lock()
	s.pending = append(s.pending, c)
	s.mu.Unlock()
	return cur, nil
}

// assume takes d for the latest version of its dataset in the scope, when
// the scope holds no version of it yet, and checks it in the background
// (Dataset.isLatest's probes), its outcome going to the scope's
// confirmations: a reader that already holds a version (a handle's last
// read) reads on while the check runs instead of after it. It reports
// false, assuming nothing, when the scope already holds a version of the
// dataset.
func (s *latestScope) assume(d *Dataset) bool {
	s.mu.Lock()
	if _, ok := s.entries[d.k.root]; ok {
		s.mu.Unlock()
		return false
	}
	done := make(chan struct{})
	close(done)
	s.entries[d.k.root] = &scopeEntry{st: d.st, done: done, mf: d.mf}
	c := make(chan error, 1)
	s.pending = append(s.pending, c)
	s.mu.Unlock()
	go func() {
		same, err := d.isLatest(s.base)
		switch {
		case err != nil:
			c <- err
		case !same:
			c <- errMoved
		default:
			c <- nil
		}
	}()
	return true
}

// byHint is latestByHint, or its speculative form in a speculative scope.
func byHint(ctx context.Context, st store.Store, k keys) (*manifestFile, error) {
	if s := scopeOf(ctx); s != nil && s.spec {
		return s.speculate(ctx, st, k)
	}
	return latestByHint(ctx, st, k)
}

// parseHint reads the version of a latest_version_hint.json.
func parseHint(b []byte) (uint64, bool) {
	var h struct {
		Version uint64 `json:"version"`
	}
	if json.Unmarshal(b, &h) != nil || h.Version == 0 {
		return 0, false
	}
	return h.Version, true
}
