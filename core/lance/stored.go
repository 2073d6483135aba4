package lance

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"

	"github.com/zeebo/xxh3"

	"github.com/kv0/kv0/core/store"
)

// A version's number does not name its contents for ever: a cleanup (kv0
// lance cleanup, a purge) removes old versions, and a dataset deleted and
// written again at the same root has a version N of its own, another
// manifest under the same key. A reader that keeps a Dataset across
// requests (a server) must ask whether the manifest it holds is still the
// one stored before it answers from it: Stored does, with one ranged read
// of the manifest's message (no listing), and ManifestID names the
// contents for caches and entity tags.
//
// The manifest's message and footer (the bytes from manifest_pos to the
// end) identify a version's contents: they name every data file (by a
// random UUID), deletion file and the commit's transaction (another
// UUID), and carry the commit's timestamp. Two manifests with the same
// bytes there describe the same rows.

// message returns the manifest's bytes from manifest_pos to the end: the
// length-prefixed protobuf and the footer.
func (mf *manifestFile) message() []byte {
	return mf.tail[mf.pos-(mf.size-int64(len(mf.tail))):]
}

// same reports whether mf and o are the same stored manifest: the same key,
// size and message bytes.
func (mf *manifestFile) same(o *manifestFile) bool {
	if mf == o {
		return true
	}
	return mf != nil && o != nil && mf.key == o.key && mf.size == o.size && mf.pos == o.pos &&
		bytes.Equal(mf.message(), o.message())
}

// Stored reports whether d's manifest is still stored at its key, byte for
// byte as d read it: false once a cleanup or purge removed the version, or
// when the dataset was deleted and written again (its version of that
// number is then another manifest). It costs one ranged read of the
// manifest's message (usually a few KiB; the footer and what precedes the
// message are not read), no listing. A true answer is a snapshot: a cleanup
// may remove the version at once.
func (d *Dataset) Stored(ctx context.Context) (bool, error) {
	return stored(ctx, d.st, d.mf)
}

// stored is Stored for one manifest of st.
func stored(ctx context.Context, st store.Store, mf *manifestFile) (bool, error) {
	want := mf.message()
	got := make([]byte, len(want))
	err := st.ReadAt(ctx, mf.key, got, mf.pos)
	switch {
	case err == nil:
		return bytes.Equal(got, want), nil
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrShortObject):
		// Removed, or replaced by a shorter manifest.
		return false, nil
	}
	return false, wrapRead(mf.key, err)
}

// ManifestID names the contents of d's version: a hash of its manifest's
// message, the same for every reader of that manifest and different for a
// version of the same number written again (a dataset deleted and created
// anew at its root). Caches and entity tags that name a version by its
// number add it, so that such a version is never taken for the old one.
func (d *Dataset) ManifestID() string {
	d.idOnce.Do(func() {
		// 128 bits of xxh3 (already linked for the tracking layer; no
		// adversary picks manifests to collide: whoever writes them
		// writes the data too).
		sum := xxh3.Hash128(d.mf.message()).Bytes()
		d.id = hex.EncodeToString(sum[:])
	})
	return d.id
}

// SameVersion reports whether d and o are the same stored version of one
// dataset: the same manifest, byte for byte (a version deleted and written
// again is another one, even under the same number and key).
func (d *Dataset) SameVersion(o *Dataset) bool {
	if d == o {
		return true
	}
	return d != nil && o != nil && d.k.root == o.k.root && d.mf.same(o.mf)
}
