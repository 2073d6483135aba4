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
// manifest is still stored (a cleanup removes older versions before newer
// ones, so a missing manifest means newer versions exist) and reads the
// version hint (which catches a next version removed by a cleanup while a
// tag kept d). Three small requests; a V1-named dataset falls back to
// LatestVersion. A true answer is a snapshot: a commit may follow at once.
func (d *Dataset) IsLatest(ctx context.Context) (bool, error) {
	v := d.Version()
	n := d.Naming()
	if n != NamingV2 {
		latest, err := LatestVersion(ctx, d.st, d.k.root)
		return latest == v, err
	}
	if _, err := d.st.Stat(ctx, d.k.manifest(v+1, n)); err == nil {
		return false, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return false, err
	}
	if _, err := d.st.Stat(ctx, d.mf.key); errors.Is(err, store.ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	b, err := readSmall(ctx, d.st, d.k.hint())
	switch {
	case err == nil:
		var h struct {
			Version uint64 `json:"version"`
		}
		if json.Unmarshal(b, &h) == nil && h.Version > v {
			return false, nil
		}
	case errors.Is(err, store.ErrNotFound), errors.Is(err, ErrCorrupt):
		// No hint, or one overwritten while it was read: the probes decide.
	default:
		return false, err
	}
	return true, nil
}
