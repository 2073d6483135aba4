package lance

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
	"github.com/kv0/kv0/core/store"
)

// CommitOptions tune the commit protocol. The zero value uses the defaults.
type CommitOptions struct {
	// MaxRetries bounds how many times a commit that lost a race is rebased
	// and retried (default 20, as Lance). Negative means no retry.
	MaxRetries int
	// MinBackoff and MaxBackoff bound the jittered sleep before a retry: the
	// n-th retry sleeps a uniformly random time in [0, min(MaxBackoff,
	// MinBackoff·2ⁿ⁻¹)], the first retry none (defaults 1ms and 100ms).
	MinBackoff, MaxBackoff time.Duration
	// SkipAutoCleanup disables the automatic cleanup a successful commit
	// runs when the table config asks for it (lance.auto_cleanup.*: when
	// the new version is a multiple of the interval, old versions are
	// removed before the commit returns, as Lance does).
	SkipAutoCleanup bool
	// OnAutoCleanup, when set, receives the outcome of each automatic
	// cleanup; its failures never fail the commit.
	OnAutoCleanup AutoCleanupFunc

	now func() time.Time // the clock (tests); nil means time.Now
}

// Default commit settings.
const (
	DefaultMaxRetries = 20
	defaultMinBackoff = time.Millisecond
	defaultMaxBackoff = 100 * time.Millisecond
)

func (o CommitOptions) withDefaults() CommitOptions {
	if o.MaxRetries == 0 {
		o.MaxRetries = DefaultMaxRetries
	}
	if o.MaxRetries < 0 {
		o.MaxRetries = 0
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = defaultMinBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = defaultMaxBackoff
	}
	return o
}

// commitReq is one operation to commit.
type commitReq struct {
	st     store.Store
	k      keys
	naming Naming
	base   *Dataset // the version the transaction was built on; nil: create
	txn    *tablepb.Transaction
	// unsynced are the files the transaction references that were stored
	// with store.PutNoSync; commit syncs them before the manifest.
	unsynced []string
	// files, when set, waits for more such files still being stored (it
	// runs while the transaction file is written) and returns their keys.
	files func() ([]string, error)
	opts  CommitOptions
	// redo rebuilds the transaction on a newer version after a retryable
	// conflict (nil: the conflict is returned). It may return an error
	// matching ErrConflict when the operation no longer applies.
	redo func(ctx context.Context, latest *Dataset) (*tablepb.Transaction, error)
	// restored is the manifest (and indices) a Restore brings back.
	restored    *tablepb.Manifest
	restoredIdx []*tablepb.IndexMetadata
	// createOnly makes a lost race for version 1 an ErrExists.
	createOnly bool
	// format is the data format an Overwrite gives the dataset when it
	// has no data files to tell it.
	format string
	// now returns the commit time (tests); nil means time.Now.
	now func() time.Time
}

// commit runs the commit protocol (see doc.go): write the transaction file,
// build the manifest of latest+1 from the latest manifest and the
// transaction, and create it with PutIfAbsent. On a lost race it loads the
// versions committed since, checks the transaction against each of them, and
// rebuilds on top or fails. It returns the committed version.
//
// Durability: the data files (r.unsynced) and the transaction file are
// stored without syncing, then synced together with the manifest's
// temporary file (one sync of each file and of each folder that gained one,
// concurrently) before the manifest is linked into place, so a manifest
// never survives a crash without the files it references; the manifest's
// folder is synced before commit returns. The hint is never synced (readers
// confirm it).
//
// A commit that fails before the manifest put changes nothing readers see;
// the transaction and data files it wrote are left for CleanupOldVersions.
// When the manifest put itself fails with an error other than ErrExists,
// commit reads the version back to learn whether the put took effect.
func commit(ctx context.Context, r commitReq) (*Dataset, error) {
	opts := r.opts.withDefaults()
	if r.now == nil {
		r.now = opts.now
	}
	cur := r.base
	txn := r.txn
	written := ""
	pending := slices.Clip(r.unsynced) // stored, not yet synced
	files := r.files
	for attempt := 0; ; attempt++ {
		// A writer may hold an old version. If a cleanup has removed the
		// versions after it, a create-only put of the next one would succeed
		// next to newer versions and never be seen: find the newest version
		// first (concurrently with the transaction file's put) and catch up.
		var (
			latest   uint64
			latestCh chan error
		)
		if attempt == 0 && cur != nil {
			latestCh = make(chan error, 1)
			go func() {
				var err error
				latest, err = latestVersionNumber(ctx, r.st, r.k)
				latestCh <- err
			}()
		}
		err := ctx.Err()
		if name := txnFileName(txn); err == nil && name != written {
			b, merr := txn.MarshalVT()
			key := r.k.txn(name)
			if err = merr; err == nil {
				if err = store.PutNoSync(ctx, r.st, key, b); err != nil {
					err = fmt.Errorf("lance: writing transaction file: %w", err)
				}
			}
			if err == nil {
				written = name
				pending = append(pending, key)
			}
		}
		if files != nil {
			keys, ferr := files()
			files = nil
			if err == nil {
				err = ferr
			}
			pending = append(pending, keys...)
		}
		if latestCh != nil {
			if lerr := <-latestCh; err == nil {
				err = lerr
			}
		}
		if err != nil {
			return nil, err
		}
		if cur != nil && latest > cur.Version() {
			nd, ntxn, done, err := r.catchUp(ctx, cur, txn, latest)
			if err != nil || done {
				return nd, err
			}
			cur, txn = nd, ntxn
			if txnFileName(txn) != written {
				continue // write the rebuilt transaction first
			}
		}
		m, data, mpos, err := r.manifestFor(ctx, cur, txn)
		if err != nil {
			return nil, err
		}
		v := m.GetVersion()
		key := r.k.manifest(v, r.naming)
		// The files the manifest references become durable before it does.
		err = store.PutIfAbsentAfterSync(ctx, r.st, key, data, pending...)
		if err == nil || errors.Is(err, store.ErrExists) {
			pending = nil
		}
		if err != nil && !errors.Is(err, store.ErrExists) {
			// The put may have taken effect (e.g. a lost response): look.
			if d, ok := committedByUs(context.WithoutCancel(ctx), r, v, txn); ok {
				return d, nil
			}
			return nil, fmt.Errorf("lance: committing version %d of %s: %w", v, r.k, err)
		}
		if err == nil {
			mf := &manifestFile{key: key, size: int64(len(data)), pos: int64(mpos), tail: data, m: m, naming: r.naming}
			d, derr := newDatasetFrom(r.st, r.k, mf, cur, txn)
			if derr != nil {
				return nil, derr
			}
			// The hint is an optimisation; a failure to update it, a torn
			// read of it, or losing it in a crash, loses nothing (readers
			// confirm it by listing or probing), so it is overwritten in
			// place where the store can (no new file) and never synced.
			_ = store.Overwrite(ctx, r.st, r.k.hint(), fmt.Appendf(nil, `{"version":%d}`, v))
			if !opts.SkipAutoCleanup {
				autoCleanup(ctx, d, r.now, opts.OnAutoCleanup)
			}
			return d, nil
		}
		// Lost the race for version v.
		if r.createOnly && cur == nil {
			return nil, fmt.Errorf("%w: %s (version 1 was committed concurrently)", ErrExists, r.k)
		}
		if attempt >= opts.MaxRetries {
			return nil, &ConflictError{Root: r.k.root, Version: v, Operation: "a concurrent commit", Mine: operationName(txn),
				Retryable: true, Reason: fmt.Sprintf("still losing after %d retries", opts.MaxRetries)}
		}
		if err := sleepBackoff(ctx, opts, attempt); err != nil {
			return nil, err
		}
		// Catch up with every version committed since cur (v at least: we
		// lost the race for it).
		nd, ntxn, done, err := r.catchUp(ctx, cur, txn, v)
		if err != nil || done {
			return nd, err
		}
		cur, txn = nd, ntxn
	}
}

// catchUp moves a commit's base from cur to the newest version, checking
// txn against the transaction of each version committed since, rebuilding
// it (redo) where the rules ask. done reports that one of those versions is
// txn itself (an earlier attempt did commit; d is that version). atLeast is
// a version known to exist: when a version up to it cannot be read, a
// cleanup removed it, and its transaction can no longer be checked; an
// append, which conflicts only with a change of schema, then moves on to
// the newest version if its schema is cur's, and anything else fails with a
// ConflictError.
func (r *commitReq) catchUp(ctx context.Context, cur *Dataset, txn *tablepb.Transaction, atLeast uint64) (d *Dataset, _ *tablepb.Transaction, done bool, _ error) {
	for {
		next := uint64(1)
		if cur != nil {
			next = cur.Version() + 1
		}
		mf, err := readVersion(ctx, r.st, r.k, next)
		if errors.Is(err, ErrNotFound) {
			if next > atLeast {
				return cur, txn, false, nil
			}
			// A gap: versions removed by a cleanup.
			newest, err := openLatest(ctx, r.st, r.k, nil)
			if err != nil {
				return nil, nil, false, err
			}
			nd, err := newDataset(r.st, r.k, newest)
			if err != nil {
				return nil, nil, false, err
			}
			_, isAppend := txn.GetOperation().(*tablepb.Transaction_Append_)
			if cur == nil || !isAppend || !sameFields(cur, nd) {
				from := uint64(1)
				if cur != nil {
					from = cur.Version()
				}
				return nil, nil, false, &ConflictError{Root: r.k.root, Version: next, Operation: "unknown", Mine: operationName(txn),
					Reason: fmt.Sprintf("a cleanup removed versions after %d (the newest is %d), so their transactions cannot be checked", from, nd.Version())}
			}
			cur, atLeast = nd, nd.Version()
			continue
		}
		if err != nil {
			return nil, nil, false, err
		}
		nd, err := newDataset(r.st, r.k, mf)
		if err != nil {
			return nil, nil, false, err
		}
		other, err := readTransaction(ctx, r.st, r.k, mf)
		if err != nil {
			return nil, nil, false, err
		}
		if other == nil {
			return nil, nil, false, &ConflictError{Root: r.k.root, Version: next, Operation: "unknown", Mine: operationName(txn),
				Reason: "that version records no transaction"}
		}
		if other.GetUuid() == txn.GetUuid() {
			return nd, txn, true, nil // an earlier attempt of ours did commit
		}
		vd, reason := checkConflict(txn, other)
		switch vd {
		case incompatible:
			return nil, nil, false, &ConflictError{Root: r.k.root, Version: next, Operation: operationName(other), Mine: operationName(txn), Reason: reason}
		case retryable:
			if r.redo == nil {
				return nil, nil, false, &ConflictError{Root: r.k.root, Version: next, Operation: operationName(other), Mine: operationName(txn),
					Retryable: true, Reason: reason}
			}
			ntxn, err := r.redo(ctx, nd)
			if err != nil {
				return nil, nil, false, err
			}
			txn = ntxn
		}
		cur = nd
	}
}

// sameFields reports whether two versions have the same schema fields.
func sameFields(a, b *Dataset) bool {
	fa, fb := a.mf.m.GetFields(), b.mf.m.GetFields()
	if len(fa) != len(fb) {
		return false
	}
	for i := range fa {
		if !fa[i].EqualVT(fb[i]) {
			return false
		}
	}
	return true
}

// latestVersionNumber returns the newest version of the dataset (0 when
// there is none).
func latestVersionNumber(ctx context.Context, st store.Store, k keys) (uint64, error) {
	ref, err := latestByListing(ctx, st, k, nil)
	if isNotSupported(err) {
		mf, err := latestByHint(ctx, st, k)
		if errors.Is(err, ErrNotFound) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		return mf.m.GetVersion(), nil
	}
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	return ref.Version, err
}

// manifestFor builds and encodes the manifest of the version after cur (1
// when cur is nil) with txn applied.
func (r *commitReq) manifestFor(ctx context.Context, cur *Dataset, txn *tablepb.Transaction) (*tablepb.Manifest, []byte, uint64, error) {
	var (
		curM   *tablepb.Manifest
		curIdx []*tablepb.IndexMetadata
		v      = uint64(1)
	)
	if cur != nil {
		curM, v = cur.mf.m, cur.Version()+1
		var err error
		if curIdx, err = readIndices(ctx, cur); err != nil {
			return nil, nil, 0, err
		}
	}
	now := time.Now().UTC()
	if r.now != nil {
		now = r.now()
	}
	m, idx, err := buildManifest(buildInput{cur: curM, curIdx: curIdx, txn: txn, version: v,
		restored: r.restored, restIdx: r.restoredIdx, now: now, format: r.format})
	if err != nil {
		return nil, nil, 0, err
	}
	data, mpos, err := encodeManifestFile(m, txn, idx)
	if err != nil {
		return nil, nil, 0, err
	}
	return m, data, mpos, nil
}

// committedByUs reads version v back and reports whether it is the one txn
// produced.
func committedByUs(ctx context.Context, r commitReq, v uint64, txn *tablepb.Transaction) (*Dataset, bool) {
	mf, err := readManifest(ctx, r.st, r.k.manifest(v, r.naming), 0)
	if err != nil {
		return nil, false
	}
	mf.naming = r.naming
	other, err := readTransaction(ctx, r.st, r.k, mf)
	if err != nil || other == nil || other.GetUuid() != txn.GetUuid() {
		return nil, false
	}
	d, err := newDataset(r.st, r.k, mf)
	if err != nil {
		return nil, false
	}
	_ = store.Overwrite(ctx, r.st, r.k.hint(), fmt.Appendf(nil, `{"version":%d}`, v))
	return d, true
}

// sleepBackoff sleeps before retry number attempt+1.
func sleepBackoff(ctx context.Context, o CommitOptions, attempt int) error {
	// The first retry goes at once: losing a race means the winner has just
	// committed, and catching up with it already takes a round trip.
	if attempt == 0 {
		return ctx.Err()
	}
	ceil := o.MaxBackoff
	if attempt < 30 {
		ceil = min(o.MaxBackoff, o.MinBackoff<<(attempt-1))
	}
	d := time.Duration(rand.Int64N(int64(ceil) + 1))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// checkWritable refuses datasets kv0 cannot commit to without breaking
// them: stable row ids (kv0 does not maintain row id sequences) and
// external base paths.
func checkWritable(d *Dataset) error {
	m := d.mf.m
	if m.GetReaderFeatureFlags()&flagStableRowIDs != 0 {
		return fmt.Errorf("%w: %s uses stable row ids, which kv0 does not write", ErrUnsupportedFeature, d.k)
	}
	if len(m.GetBasePaths()) > 0 {
		return fmt.Errorf("%w: %s uses external base paths, which kv0 does not write", ErrUnsupportedFeature, d.k)
	}
	if m.Branch != nil && m.GetBranch() != "" {
		return fmt.Errorf("%w: %s is a branch, which kv0 does not write", ErrUnsupportedFeature, d.k)
	}
	return nil
}

// Latest returns the newest version of the dataset d belongs to: d itself
// when no newer version exists and d's manifest is still the one stored,
// else the newest version, sharing d's cache of opened data files. On a
// listing store that costs one List and one read of d's manifest message
// (Stored) when nothing changed, and one manifest read otherwise. A dataset
// deleted and written again is seen as such: its newest version is opened
// even when its number is d's or lower.
func (d *Dataset) Latest(ctx context.Context) (*Dataset, error) {
	if scopeOf(ctx) != nil {
		mf, err := openLatest(ctx, d.st, d.k, nil)
		if err != nil {
			return nil, err
		}
		if v := mf.m.GetVersion(); v < d.Version() {
			// d is newer than the scope's version (opened by a read that
			// came later than the scope's): it is the latest known while
			// it is still stored.
			ok, err := d.Stored(ctx)
			if err != nil {
				return nil, err
			}
			if ok {
				return d, nil
			}
		}
		return d.successor(mf)
	}
	ref, err := latestByListing(ctx, d.st, d.k, nil)
	if isNotSupported(err) {
		mf, err := latestByHint(ctx, d.st, d.k)
		if err != nil {
			return nil, err
		}
		return d.successor(mf)
	}
	if err != nil {
		return nil, err
	}
	if ref.Version == d.Version() && ref.Key == d.mf.key && (ref.Size == 0 || ref.Size == d.mf.size) {
		ok, err := d.Stored(ctx)
		if err != nil {
			return nil, err
		}
		if ok {
			return d, nil
		}
	}
	mf, err := readManifest(ctx, d.st, ref.Key, ref.Size)
	if err != nil {
		return nil, err
	}
	mf.naming = ref.Naming
	return d.successor(mf)
}

// successor returns d when mf is d's own manifest, else the version mf
// describes, sharing d's cache of opened data files.
func (d *Dataset) successor(mf *manifestFile) (*Dataset, error) {
	if mf.same(d.mf) {
		return d, nil
	}
	return newDataset(d.st, d.k, mf)
}

// Store returns the store the dataset is read from.
func (d *Dataset) Store() store.Store { return d.st }

// Root returns the dataset root the dataset was opened at.
func (d *Dataset) Root() string { return d.k.root }

// Naming returns the manifest naming scheme of the version's manifest.
func (d *Dataset) Naming() Naming {
	if d.mf.naming == 0 {
		if _, n, ok := parseManifestName(baseName(d.mf.key)); ok {
			return n
		}
		return NamingV2
	}
	return d.mf.naming
}
