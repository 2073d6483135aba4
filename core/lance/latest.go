package lance

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/kv0/kv0/core/store"
)

// IsLatest reports whether no version newer than d has been committed. It
// lists nothing, so its cost does not grow with the number of versions: on
// a V2-named dataset it asks for the manifest of the next version (every
// commit creates version N+1 first, atomically), confirms that d's own
// manifest is still stored, byte for byte (Stored: a cleanup removes older
// versions before newer ones, so a missing manifest means newer versions
// exist; another manifest under its name means the dataset was deleted and
// written again), and reads the version hint (which catches a next version
// removed by a cleanup while a tag kept d). Three small requests, issued
// together; a V1-named dataset falls back to LatestVersion (and Stored). A true answer is a snapshot: a commit may follow at once.
// In a speculative scope (WithLatestScope) that holds no version of the
// dataset yet, it answers true at once and checks in the background;
// ConfirmScope reports the outcome.
func (d *Dataset) IsLatest(ctx context.Context) (bool, error) {
	v := d.Version()
	if s := scopeOf(ctx); s != nil {
		if e := s.lookup(d.st, d.k); e != nil {
			mf, err := e.wait(ctx)
			if err == nil {
				switch sv := mf.m.GetVersion(); {
				case sv == v:
					// The scope's version, unless the dataset was written
					// again under the same number.
					return mf.same(d.mf), nil
				case sv > v:
					return false, nil
				}
				// d is newer than the scope's version: ask the store.
			}
		} else if s.spec && s.assume(d) {
			return true, nil
		} else {
			same, err := d.isLatest(ctx)
			if err == nil && same {
				NoteLatest(ctx, d)
			}
			return same, err
		}
	}
	return d.isLatest(ctx)
}

// isLatest is IsLatest without a scope.
func (d *Dataset) isLatest(ctx context.Context) (bool, error) {
	v := d.Version()
	n := d.Naming()
	if n != NamingV2 {
		latest, err := LatestVersion(ctx, d.st, d.k.root)
		if err != nil || latest != v {
			return false, err
		}
		return stored(ctx, d.st, d.mf)
	}
	// The three requests are independent: issue them together, so the check
	// costs one round trip.
	var nextExists, selfGone, hintAhead bool
	err := parallel(ctx, 3, func(ctx context.Context, i int) error {
		switch i {
		case 0:
			_, err := d.st.Stat(ctx, d.k.manifest(v+1, n))
			if err == nil {
				nextExists = true
				return nil
			}
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			return err
		case 1:
			same, err := stored(ctx, d.st, d.mf)
			selfGone = err == nil && !same
			return err
		default:
			b, err := readSmall(ctx, d.st, d.k.hint())
			switch {
			case err == nil:
				var h struct {
					Version uint64 `json:"version"`
				}
				hintAhead = json.Unmarshal(b, &h) == nil && h.Version > v
				return nil
			case errors.Is(err, store.ErrNotFound), errors.Is(err, ErrCorrupt):
				return nil // no hint, or one overwritten while it was read: the probes decide
			}
			return err
		}
	})
	if err != nil {
		return false, err
	}
	if nextExists || selfGone || hintAhead {
		return false, nil
	}
	return true, nil
}

// VersionExists reports whether version v of the dataset at root is
// committed under naming n, with one request (a Stat of its manifest) and
// no listing. Pollers ask it for the version after the one they hold: every
// commit creates the next version's manifest first.
func VersionExists(ctx context.Context, st store.Store, root string, v uint64, n Naming) (bool, error) {
	_, err := st.Stat(ctx, keys{root: root}.manifest(v, n))
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
