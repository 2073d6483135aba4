// Package kv is kv0's key-value layer: an ordered key-value store (keys in
// byte-wise order) whose only storage is one operation-log dataset, reached
// through the OpLog interface (the Lance binding, or the fakes in kvtest).
//
// # Storage
//
// The log holds one row per operation:
//
//	seq    uint64   hybrid logical clock, ns since the Unix epoch; newest wins
//	op     uint8    0 put, 1 delete, 2 delete range, 3 WAL mark
//	key    binary   key | range start (inclusive) | writer id
//	value  binary?  value | range end (exclusive) | highest committed seq (uvarint) | null
//
// # Reads
//
// A DB loads the log into an in-memory view and serves every read from it:
// an immutable sorted base run of entries packed into large blocks (from
// Options.Blocks; native/kvdb maps them outside the Go heap), frozen deltas
// and an active delta of newer entries (a B+tree of pointer-free leaves
// over an arena of blocks: no allocation per entry), and a set of range
// tombstones. Once the active delta holds an eighth of the base it is
// frozen and merged into a new base on a background goroutine, which
// splices the rebuilt base into the view a few blocks at a time; writers
// wait only when a merge falls far behind. Applying rows is idempotent and
// order-independent, so handles refresh by applying only the fragments
// they have not seen. Committed values longer than
// Options.LazyValueThreshold stay in the log and are read through a
// byte-bounded cache. A snapshot of the view (see SnapshotStore), whose
// sorted entries load straight into the base run, makes reopening a large
// database cheap.
//
// # Writes
//
// Writes apply to the view at once (read-your-writes), go to the WAL when
// there is one, and wait in a pending buffer that is committed as one
// append: when it exceeds Options.WriteBufferSize, every
// Options.FlushInterval (one background goroutine serves every open DB), on
// Flush, on a Sync write, on CompactRange and on Close. A Batch is applied
// under one lock and never split across commits. After a flush, a log with
// more than Options.MaxFragments fragments is compacted.
//
// # Concurrency
//
// A DB is safe for concurrent use. Several handles and processes may share
// one log: appends never conflict, conflicting writes to one key resolve
// last-writer-wins by seq, and a handle sees other writers' commits on
// Refresh or within Options.RefreshInterval. Iterators are not snapshots;
// see Iterator.
//
// # Errors
//
// Errors match ErrNotFound, ErrNotSupported, ErrCorruption (a
// *CorruptionError naming the file), ErrStoreIO, ErrClosed, ErrConflict and
// ErrStaleWAL with errors.Is.
package kv
