package lance

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strings"

	"github.com/kv0/kv0/core/internal/lancepb"
	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
	"github.com/kv0/kv0/core/store"
)

// A manifest file, as Lance writes it. Integers are little-endian; each
// section is a u32 length followed by that many protobuf bytes, and the
// manifest points at the optional sections by their file position.
//
//	+-------------------------------+ 0
//	| [u32 len | IndexSection]      |  optional, Manifest.index_section
//	| [u32 len | Transaction]       |  optional, Manifest.transaction_section
//	+-------------------------------+ manifest_pos
//	| u32 len | Manifest            |  len == size - manifest_pos - 20
//	+-------------------------------+ size-16
//	| i64 manifest_pos              |
//	| u16 major | u16 minor         |  legacy constants, not checked
//	| "LANC"                        |
//	+-------------------------------+ size
const (
	manifestFooter = 16
	manifestMagic  = "LANC"
	// manifestTail is how much of a manifest's end one read fetches. Lance
	// manifests of modest tables fit entirely, so one request reads them.
	manifestTail = 64 << 10
	// maxManifestSize bounds the manifests kv0 accepts, so a hostile size
	// or position cannot make it allocate without limit.
	maxManifestSize = 1 << 30
	// maxSmallFile bounds tags, hints and transaction files.
	maxSmallFile = 256 << 20
)

// Reader feature flags (Manifest.reader_feature_flags). Lance refuses to
// read a dataset that sets a bit it does not know; kv0 knows the same six
// bits as the lance release it targets. All of them are readable by kv0 at
// the table level: deletion files are applied, stable row ids only change
// what _rowid means (kv0 exposes row addresses, not row ids), and external
// base paths are refused later, by the fragment that uses one.
const (
	flagDeletionFiles   = 1
	flagStableRowIDs    = 2
	flagUseV2Deprecated = 4
	flagTableConfig     = 8
	flagBasePaths       = 16
	flagNoTxnFile       = 32
	knownReaderFlags    = 63
)

// Names of flag bits newer lance releases define, for error messages.
var laterFlagNames = map[uint64]string{
	64:   "data overlays",
	128:  "covered indexes",
	256:  "mixed data file versions",
	2048: "managed blobs",
}

// checkReaderFlags refuses reader feature flag bits kv0 does not know.
func checkReaderFlags(key string, flags uint64) error {
	unknown := flags &^ knownReaderFlags
	if unknown == 0 {
		return nil
	}
	var names []string
	for unknown != 0 {
		b := uint64(1) << bits.TrailingZeros64(unknown)
		unknown &^= b
		if n, ok := laterFlagNames[b]; ok {
			names = append(names, fmt.Sprintf("%d (%s)", b, n))
		} else {
			names = append(names, fmt.Sprint(b))
		}
	}
	return fmt.Errorf("%w: %s: reader feature flags 0x%x set unknown bits %s (kv0 reads bits 1, 2, 4, 8, 16, 32)",
		ErrUnsupportedFeature, key, flags, strings.Join(names, ", "))
}

// manifestFile is one decoded manifest plus what is needed to read its other
// sections later.
type manifestFile struct {
	key    string
	size   int64
	pos    int64  // manifest_pos
	tail   []byte // the last len(tail) bytes of the file
	m      *tablepb.Manifest
	naming Naming
}

// readManifest reads and decodes the manifest at key. size is its size when
// a listing or tag gave it; zero or less means unknown, in which case the
// first read learns it (one request on a store.TailReader). Cost: one
// request when the manifest fits in 64 KiB and the size is known or the store
// is a TailReader.
func readManifest(ctx context.Context, st store.Store, key string, size int64) (*manifestFile, error) {
	var tail []byte
	if size > 0 {
		n := min(size, manifestTail)
		tail = make([]byte, n)
		if err := st.ReadAt(ctx, key, tail, size-n); err != nil {
			return nil, wrapRead(key, err)
		}
	} else {
		var err error
		if tail, size, err = store.ReadTail(ctx, st, key, manifestTail); err != nil {
			return nil, wrapRead(key, err)
		}
	}
	return decodeManifest(key, size, tail, func(off int64, n int) ([]byte, error) {
		buf := make([]byte, n)
		if err := st.ReadAt(ctx, key, buf, off); err != nil {
			return nil, wrapRead(key, err)
		}
		return buf, nil
	})
}

// wrapRead turns a store error into a lance error that names the key.
// Missing objects become ErrNotFound (still matching store.ErrNotFound),
// short objects ErrCorrupt.
func wrapRead(key string, err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w: %s: %w", ErrNotFound, key, err)
	case errors.Is(err, store.ErrShortObject):
		return fmt.Errorf("%w: %s: %w", ErrCorrupt, key, err)
	}
	return fmt.Errorf("lance: %s: %w", key, err)
}

// decodeManifest decodes a manifest of size bytes from its last bytes tail,
// calling read for any earlier bytes it needs. It never panics on hostile
// input and allocates at most what size justifies.
func decodeManifest(key string, size int64, tail []byte, read func(off int64, n int) ([]byte, error)) (*manifestFile, error) {
	if size < manifestFooter+4 {
		return nil, corruptErr(key, -1, "manifest of %d bytes is too small", size)
	}
	if size > maxManifestSize {
		return nil, corruptErr(key, -1, "manifest of %d bytes is larger than kv0 accepts (%d)", size, maxManifestSize)
	}
	if int64(len(tail)) > size || len(tail) < manifestFooter {
		return nil, corruptErr(key, -1, "short manifest read (%d of %d bytes)", len(tail), size)
	}
	tailStart := size - int64(len(tail))
	foot := tail[len(tail)-manifestFooter:]
	if string(foot[12:16]) != manifestMagic {
		return nil, corruptErr(key, size-4, "missing LANC magic")
	}
	pos := int64(binary.LittleEndian.Uint64(foot))
	if pos < 0 || pos > size-manifestFooter-4 {
		return nil, corruptErr(key, size-manifestFooter, "manifest position %d outside a file of %d bytes", pos, size)
	}
	if pos < tailStart {
		head, err := read(pos, int(tailStart-pos))
		if err != nil {
			return nil, err
		}
		tail = append(head, tail...)
		tailStart = pos
	}
	mf := &manifestFile{key: key, size: size, pos: pos, tail: tail}
	sec := tail[pos-tailStart:]
	want := size - pos - manifestFooter - 4
	if got := int64(binary.LittleEndian.Uint32(sec)); got != want {
		return nil, corruptErr(key, pos, "manifest length prefix %d, want %d", got, want)
	}
	var m tablepb.Manifest
	if err := lancepb.Unmarshal(sec[4:4+want], &m); err != nil {
		return nil, corruptErr(key, pos+4, "manifest protobuf: %v", err)
	}
	if msg := checkRuns(sec[4 : 4+want]); msg != "" {
		return nil, corruptErr(key, pos+4, "%s", msg)
	}
	mf.m = &m
	return mf, nil
}

// section returns the protobuf bytes of the section at pos (the position of
// its length prefix). Sections precede the manifest, and the bytes in hand
// run from at most manifest_pos to the end, so a section before them costs
// one read of [pos, first byte in hand).
func (mf *manifestFile) section(ctx context.Context, st store.Store, pos uint64) ([]byte, error) {
	if pos > uint64(mf.size-manifestFooter-4) {
		return nil, corruptErr(mf.key, int64(pos), "section position outside a file of %d bytes", mf.size)
	}
	tailStart := mf.size - int64(len(mf.tail))
	var b []byte // bytes [pos, size)
	if int64(pos) >= tailStart {
		b = mf.tail[int64(pos)-tailStart:]
	} else {
		head := make([]byte, tailStart-int64(pos), mf.size-int64(pos))
		if err := st.ReadAt(ctx, mf.key, head, int64(pos)); err != nil {
			return nil, wrapRead(mf.key, err)
		}
		b = append(head, mf.tail...)
	}
	n := int64(binary.LittleEndian.Uint32(b))
	if int64(pos)+4+n > mf.size-manifestFooter {
		return nil, corruptErr(mf.key, int64(pos), "section of %d bytes runs past the end of the file", n)
	}
	return b[4 : 4+n], nil
}

// readSmall reads a whole small object (tag, hint, transaction): one request
// on a store.TailReader when it is under 64 KiB.
func readSmall(ctx context.Context, st store.Store, key string) ([]byte, error) {
	b, size, err := store.ReadTail(ctx, st, key, manifestTail)
	if err != nil {
		return nil, wrapRead(key, err)
	}
	if int64(len(b)) == size {
		return b, nil
	}
	if size > maxSmallFile {
		return nil, corruptErr(key, -1, "file of %d bytes is larger than kv0 accepts (%d)", size, maxSmallFile)
	}
	head := make([]byte, size-int64(len(b)))
	if err := st.ReadAt(ctx, key, head, 0); err != nil {
		return nil, wrapRead(key, err)
	}
	return append(head, b...), nil
}
