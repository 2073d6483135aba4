package kv

import "time"

// Defaults of the Options fields.
const (
	DefaultWriteBufferSize    = 4 << 20
	DefaultFlushInterval      = 5 * time.Second
	DefaultRefreshInterval    = time.Second
	DefaultLazyValueThreshold = 4 << 10
	DefaultValueCacheSize     = 64 << 20
	DefaultMaxFragments       = 32
	DefaultTombstoneGrace     = time.Hour
	DefaultMarkTTL            = 30 * 24 * time.Hour
	DefaultSnapshotMinEntries = 100_000
)

// Options configure Open. The zero value (or nil) is a writable handle with
// the defaults above and no WAL. Options are read once by Open.
type Options struct {
	// ReadOnly opens a handle that rejects writes with ErrNotSupported.
	ReadOnly bool
	// Version, when non-zero, opens that version read-only (time travel).
	Version uint64

	// WAL is the local write-ahead log (see package native/wal). The DB
	// owns it from Open on and closes it. It is ignored, and left open, for
	// read-only handles.
	WAL WAL
	// Snapshots keeps the snapshot file used for fast reopen; nil disables
	// snapshots.
	Snapshots SnapshotStore
	// Blocks allocates the large blocks holding most of the in-memory view
	// (nil: the Go heap). Package native/kvdb passes one that maps memory
	// outside the Go heap.
	Blocks BlockAllocator
	// SnapshotMinEntries is the view size from which Close saves a
	// snapshot (default 100 000; negative: never).
	SnapshotMinEntries int

	// WriteBufferSize is the pending-buffer size in bytes that triggers a
	// commit (default 4 MiB).
	WriteBufferSize int
	// FlushInterval is the longest time a write stays uncommitted when
	// nothing else flushes (default 5 s; negative: only explicit flushes).
	FlushInterval time.Duration
	// RefreshInterval is how often the background goroutine looks for other
	// writers' commits (default 1 s; negative: only Refresh).
	RefreshInterval time.Duration

	// LazyValueThreshold is the value length above which committed values
	// are left in the log and read on demand (default 4 KiB; negative:
	// always keep values in memory).
	LazyValueThreshold int
	// ValueCacheSize bounds the cache of lazily read values, in bytes
	// (default 64 MiB; negative: no cache).
	ValueCacheSize int64

	// MaxFragments is the fragment count above which a flush compacts
	// (default 32; negative: never compact automatically).
	MaxFragments int
	// TombstoneGrace is how long compaction keeps tombstones (default 1 h).
	TombstoneGrace time.Duration
	// MarkTTL is how long compaction keeps WAL marks of writers that stopped
	// committing (default 30 days).
	MarkTTL time.Duration
	// ReplayStaleWAL replays abandoned WALs even when their writer's mark
	// has expired and they hold operations older than MarkTTL (writes may
	// then be stored twice). Without it such a WAL fails Open with
	// ErrStaleWAL.
	ReplayStaleWAL bool

	// Now is the wall clock (default time.Now); tests replace it.
	Now func() time.Time
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.WriteBufferSize <= 0 {
		r.WriteBufferSize = DefaultWriteBufferSize
	}
	if r.FlushInterval == 0 {
		r.FlushInterval = DefaultFlushInterval
	}
	if r.RefreshInterval == 0 {
		r.RefreshInterval = DefaultRefreshInterval
	}
	if r.LazyValueThreshold == 0 {
		r.LazyValueThreshold = DefaultLazyValueThreshold
	}
	if r.ValueCacheSize == 0 {
		r.ValueCacheSize = DefaultValueCacheSize
	}
	if r.MaxFragments == 0 {
		r.MaxFragments = DefaultMaxFragments
	}
	if r.TombstoneGrace <= 0 {
		r.TombstoneGrace = DefaultTombstoneGrace
	}
	if r.MarkTTL <= 0 {
		r.MarkTTL = DefaultMarkTTL
	}
	if r.SnapshotMinEntries == 0 {
		r.SnapshotMinEntries = DefaultSnapshotMinEntries
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	return r
}

// WriteOptions modify one write. A nil *WriteOptions is the zero value.
type WriteOptions struct {
	// Sync commits the write (and everything buffered before it) to the log
	// before the call returns.
	Sync bool
	// DisableWAL skips the write-ahead log for this write: it is committed
	// with the next flush and lost if the process dies before that.
	DisableWAL bool
}

// IterOptions bound an iterator. A nil *IterOptions is the zero value.
type IterOptions struct {
	// LowerBound, when non-nil, is the smallest key (inclusive) the
	// iterator returns.
	LowerBound []byte
	// UpperBound, when non-nil, is the exclusive upper limit of the keys
	// the iterator returns.
	UpperBound []byte
}
