package lance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"sync"

	"github.com/kv0/kv0/core/store"
)

// VersionRef names one stored version of a dataset.
type VersionRef struct {
	Version uint64
	Key     string // store key of the manifest
	Size    int64  // manifest size from the listing; 0 when unknown
	Naming  Naming
}

// ListOptions tune the calls that list a dataset's manifests:
// ListVersions, LatestVersion and Log (OpenOptions and CleanupOptions have
// the same field).
type ListOptions struct {
	// Warn, when set, receives what a listing ignored, one error per file,
	// each matching ErrMixedNaming and naming the file. Nil ignores them
	// silently.
	Warn func(error)
}

// ErrMixedNaming is the warning a listing gives (to a Warn callback; it is
// never returned) for a manifest whose name follows the other naming scheme
// than the dataset's: a V1 name such as "7.manifest" among V2 names. Once
// any manifest has a V2 name the dataset is V2-named (lance migrates V1
// datasets by renaming every manifest to its V2 name and never goes back),
// and V1 names are ignored: neither listed, nor read, nor removed by a
// cleanup.
var ErrMixedNaming = errors.New("lance: ignored a manifest named in the other naming scheme")

// warnFunc returns the Warn callback of opts (nil when none).
func warnFunc(opts []ListOptions) func(error) {
	if len(opts) > 0 {
		return opts[0].Warn
	}
	return nil
}

// ListVersions returns the versions stored under root, oldest first. On a
// listing store it costs one List (paged by the store as it likes) and
// reads nothing. On a store that cannot list, it finds the latest version N
// (hint + probes, as LatestVersion) and returns 1..N with Size 0 without
// checking that older manifests still exist (cleanup may have removed
// them): callers reading them must expect ErrNotFound. Manifest names of
// the other naming scheme are skipped (see ErrMixedNaming).
func ListVersions(ctx context.Context, st store.Store, root string, opts ...ListOptions) ([]VersionRef, error) {
	k := keys{root: root}
	refs, err := listVersions(ctx, st, k, warnFunc(opts))
	if errors.Is(err, store.ErrNotSupported) {
		mf, err := latestByHint(ctx, st, k)
		if err != nil {
			return nil, err
		}
		latest := mf.m.GetVersion()
		if latest > 1<<24 {
			return nil, fmt.Errorf("lance: %s: cannot enumerate %d versions on a store that cannot list: %w", root, latest, store.ErrNotSupported)
		}
		out := make([]VersionRef, 0, latest)
		for v := uint64(1); v <= latest; v++ {
			out = append(out, VersionRef{Version: v, Key: k.manifest(v, mf.naming), Naming: mf.naming})
		}
		out[len(out)-1].Size = mf.size
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	if len(refs) == 0 {
		return nil, noDataset(k)
	}
	return refs, nil
}

func noDataset(k keys) error {
	return fmt.Errorf("%w: no dataset (no manifests under %s)", ErrNotFound, k.versions())
}

// listVersions lists _versions/ and parses every manifest name, oldest first.
// When any name is a V2 one, V1 names are skipped, each reported to warn
// (when not nil) as ErrMixedNaming; a V1 name of a version that also has
// its V2 name (a migration caught between copy and delete) is skipped
// silently.
func listVersions(ctx context.Context, st store.Store, k keys, warn func(error)) ([]VersionRef, error) {
	objs, err := st.List(ctx, store.ListOptions{Prefix: k.versions()})
	if err != nil {
		return nil, err
	}
	byVersion := make(map[uint64]VersionRef, len(objs))
	var v1 []VersionRef // V1 names, listed only when there is no V2 name
	for _, o := range objs {
		v, n, ok := parseManifestName(path.Base(o.Key))
		if !ok || path.Dir(o.Key) != path.Dir(k.versions()+"x") {
			continue
		}
		r := VersionRef{Version: v, Key: o.Key, Size: o.Size, Naming: n}
		if n == NamingV1 {
			v1 = append(v1, r)
		} else {
			byVersion[v] = r
		}
	}
	v2 := len(byVersion) > 0
	for _, r := range v1 {
		switch _, both := byVersion[r.Version]; {
		case !v2:
			byVersion[r.Version] = r
		case !both && warn != nil:
			warn(fmt.Errorf("%w: %s has a V1 name, the dataset's manifests have V2 names", ErrMixedNaming, r.Key))
		}
	}
	refs := make([]VersionRef, 0, len(byVersion))
	for _, r := range byVersion {
		refs = append(refs, r)
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].Version < refs[j].Version })
	return refs, nil
}

// LatestVersion returns the newest version number of the dataset at root.
// It costs what opening the latest version costs, minus the manifest read
// on a listing store.
func LatestVersion(ctx context.Context, st store.Store, root string, opts ...ListOptions) (uint64, error) {
	k := keys{root: root}
	if s := scopeOf(ctx); s != nil {
		// In a scope that knows (or is finding) the answer, it is the
		// scope's.
		if e := s.lookup(st, k); e != nil {
			mf, err := e.wait(ctx)
			if err != nil {
				return 0, err
			}
			return mf.m.GetVersion(), nil
		}
	}
	ref, err := latestByListing(ctx, st, k, warnFunc(opts))
	if errors.Is(err, store.ErrNotSupported) {
		mf, err := latestByHint(ctx, st, k)
		if err != nil {
			return 0, err
		}
		return mf.m.GetVersion(), nil
	}
	if err != nil {
		return 0, err
	}
	return ref.Version, nil
}

// latestByListing finds the newest manifest on a listing store. With V2
// names the newest version sorts first, so a limit-1 listing answers in one
// request, with the manifest size. Anything else in first place (a V1 name,
// a staging file) makes it list everything; warn (when not nil) receives the
// names that listing ignores.
func latestByListing(ctx context.Context, st store.Store, k keys, warn func(error)) (VersionRef, error) {
	objs, err := st.List(ctx, store.ListOptions{Prefix: k.versions(), Limit: 1})
	if err != nil {
		return VersionRef{}, err
	}
	if len(objs) == 0 {
		return VersionRef{}, noDataset(k)
	}
	if v, n, ok := parseManifestName(path.Base(objs[0].Key)); ok && n == NamingV2 {
		return VersionRef{Version: v, Key: objs[0].Key, Size: objs[0].Size, Naming: n}, nil
	}
	refs, err := listVersions(ctx, st, k, warn)
	if err != nil {
		return VersionRef{}, err
	}
	if len(refs) == 0 {
		return VersionRef{}, noDataset(k)
	}
	return refs[len(refs)-1], nil
}

// probe reads version v under naming n; a missing manifest gives (nil, nil).
func probe(ctx context.Context, st store.Store, k keys, v uint64, n Naming) (*manifestFile, error) {
	mf, err := readManifest(ctx, st, k.manifest(v, n), 0)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	mf.naming = n
	return mf, nil
}

// probePair reads versions v and v+1 concurrently under naming n.
func probePair(ctx context.Context, st store.Store, k keys, v uint64, n Naming) (cur, next *manifestFile, err error) {
	var wg sync.WaitGroup
	var nextErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		next, nextErr = probe(ctx, st, k, v+1, n)
	}()
	cur, err = probe(ctx, st, k, v, n)
	wg.Wait()
	return cur, next, errors.Join(err, nextErr)
}

// latestByHint finds and reads the newest manifest on a store that cannot
// list: it reads _versions/latest_version_hint.json (version N), then reads
// the manifests of N and N+1 concurrently, continuing upward while they
// exist. When the hint is current this costs three requests in two round
// trips on a store.TailReader: the hint, manifest N, and the missing N+1.
// V2 names are tried first; a dataset with V1 names costs two more requests.
// Without a usable hint it gallops upward from version 1.
func latestByHint(ctx context.Context, st store.Store, k keys) (*manifestFile, error) {
	start := uint64(0)
	if b, err := readSmall(ctx, st, k.hint()); err == nil {
		var h struct {
			Version uint64 `json:"version"`
		}
		if json.Unmarshal(b, &h) == nil && h.Version > 0 {
			start = h.Version
		}
	} else if !errors.Is(err, store.ErrNotFound) && !errors.Is(err, ErrCorrupt) {
		// A hint whose size changed while it was read (it is overwritten
		// in place) is as good as none.
		return nil, err
	}
	if start > 0 {
		for _, n := range []Naming{NamingV2, NamingV1} {
			cur, next, err := probePair(ctx, st, k, start, n)
			if err != nil {
				return nil, err
			}
			if cur == nil && next == nil {
				continue
			}
			if next == nil {
				return cur, nil
			}
			return climb(ctx, st, k, next, n)
		}
	}
	return gallop(ctx, st, k)
}

// climb probes versions above mf until one is missing.
func climb(ctx context.Context, st store.Store, k keys, mf *manifestFile, n Naming) (*manifestFile, error) {
	for v := mf.m.GetVersion() + 1; ; v++ {
		next, err := probe(ctx, st, k, v, n)
		if err != nil {
			return nil, err
		}
		if next == nil {
			return mf, nil
		}
		mf = next
	}
}

// gallop finds the latest version without a hint: it probes 1, 2, 4, 8, ...
// until a version is missing, then bisects. It assumes versions 1..latest
// are all stored, which holds until a cleanup removes old versions.
func gallop(ctx context.Context, st store.Store, k keys) (*manifestFile, error) {
	for _, n := range []Naming{NamingV2, NamingV1} {
		lo, err := probe(ctx, st, k, 1, n)
		if err != nil {
			return nil, err
		}
		if lo == nil {
			continue
		}
		hiV := uint64(2)
		for {
			mf, err := probe(ctx, st, k, hiV, n)
			if err != nil {
				return nil, err
			}
			if mf == nil {
				break
			}
			lo = mf
			if hiV > 1<<62 {
				return nil, corruptErr(k.versions(), -1, "implausible version numbers")
			}
			hiV *= 2
		}
		// lo exists, hiV does not.
		for hiV-lo.m.GetVersion() > 1 {
			mid := lo.m.GetVersion() + (hiV-lo.m.GetVersion())/2
			mf, err := probe(ctx, st, k, mid, n)
			if err != nil {
				return nil, err
			}
			if mf == nil {
				hiV = mid
			} else {
				lo = mf
			}
		}
		return lo, nil
	}
	return nil, fmt.Errorf("%w: no dataset (the store cannot list, and neither %s nor version 1 exists)",
		ErrNotFound, k.hint())
}

// readVersion reads the manifest of version v: the V2 name first, then V1.
// It costs one request (two for V1 names) on a store.TailReader.
func readVersion(ctx context.Context, st store.Store, k keys, v uint64) (*manifestFile, error) {
	for _, n := range []Naming{NamingV2, NamingV1} {
		mf, err := readManifest(ctx, st, k.manifest(v, n), 0)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		mf.naming = n
		return mf, nil
	}
	return nil, fmt.Errorf("%w: version %d of %s (neither %s nor %s exists)", ErrNotFound, v, k,
		k.manifest(v, NamingV2), k.manifest(v, NamingV1))
}
