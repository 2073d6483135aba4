package tracking

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/kv0/kv0/core/lance"
)

// Read caches. Runs, Run, SeriesStats and the series listing derive their
// answers from whole tables (runs folded field by field, statistics deltas
// merged per series). A handle keeps what it derived together with the
// table version it read, and a later read first asks whether that version
// is still the newest (lance.Dataset.IsLatest: a few small requests, no
// listing). When it is, the cached result is reused; when only fragments
// were appended since (every flush of every writer), just those fragments
// are read and folded into the cached state; when a cached fragment
// changed or vanished (compaction, Optimize, a deletion), everything is
// read again. Folding is order-independent (newest sequence number wins per
// field, statistics deltas merge associatively), so folding new fragments
// later gives what one scan of the new version gives.

// readCaches are a Repo's read caches, each with its own lock.
type readCaches struct {
	runs   runsCache
	series seriesCache
	stats  statsCache
}

// listEvery bounds how long a handle trusts IsLatest alone (latestWarm): at least this
// often a read lists the table's versions instead. IsLatest can only be
// wrong when a cleanup removed the next version while a tag kept the
// cached one and no version hint was written; the listing bounds how long
// such a cache stays behind.
const listEvery = time.Second

// follower tracks the version of one table a cache reflects.
type follower struct {
	d     *lance.Dataset    // nil: nothing cached
	frags map[uint64]string // fragment id -> identity of its contents
}

// advance is what a cache must do to reflect the newest version.
type advance struct {
	d     *lance.Dataset // the newest version; nil when the table does not exist
	same  bool           // the cached version is still the newest
	reset bool           // fold everything again from scratch
	fresh []uint64       // fragments to fold (in manifest order)
}

// fragIdentity names a fragment's immutable contents: its data files and
// deletion file.
func fragIdentity(f lance.Fragment) string {
	var b strings.Builder
	for _, df := range f.Files {
		b.WriteString(df.Path)
		b.WriteByte(';')
	}
	b.WriteString(f.DeletionFile)
	b.WriteByte(';')
	b.WriteString(strconv.FormatUint(f.PhysicalRows, 10))
	return b.String()
}

// next finds out how the cache must advance to the newest version of table.
func (f *follower) next(ctx context.Context, r *Repo, table string) (advance, error) {
	// r.latest trusts IsLatest within listEvery of a listing, else lists.
	d, err := r.latest(ctx, table)
	if err != nil {
		return advance{}, err
	}
	if d == nil {
		return advance{reset: true}, nil
	}
	// The same version, byte for byte: a table deleted and written again
	// has versions of the same numbers that are other manifests.
	if f.d != nil && d.SameVersion(f.d) {
		return advance{d: f.d, same: true}, nil
	}
	a := advance{d: d, reset: f.d == nil}
	frags := d.Fragments()
	if !a.reset {
		now := make(map[uint64]string, len(frags))
		for _, fr := range frags {
			now[fr.ID] = fragIdentity(fr)
		}
		for id, k := range f.frags {
			if now[id] != k {
				a.reset = true
				break
			}
		}
	}
	for _, fr := range frags {
		if _, old := f.frags[fr.ID]; a.reset || !old {
			a.fresh = append(a.fresh, fr.ID)
		}
	}
	return a, nil
}

// done records that the cache now reflects a.d.
func (f *follower) done(a advance) {
	if a.same {
		return
	}
	f.d = a.d
	f.frags = map[uint64]string{}
	if a.d != nil {
		for _, fr := range a.d.Fragments() {
			f.frags[fr.ID] = fragIdentity(fr)
		}
	}
}

// forget drops the cached state (after a failed fold).
func (f *follower) forget() {
	f.d, f.frags = nil, nil
}
