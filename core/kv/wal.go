package kv

import "io"

// WAL is the local write-ahead log a writable DB appends every write to
// before applying it (package native/wal implements it on local disk). A DB
// without one (memory stores, read-only handles, or Options.WAL nil) keeps
// unflushed writes only in memory.
//
// The DB owns the WAL it is given and calls it from several goroutines, but
// never concurrently for Append, Rotate and ReleaseClaimed (they run under
// the DB's write lock); Sync and Release may run concurrently with them.
type WAL interface {
	// WriterID names this writer; it is the key of the writer's mark rows.
	WriterID() string
	// Claimed returns the logs of abandoned writers claimed when the WAL
	// was opened. Records are payloads as given to Append.
	Claimed() []ClaimedLog
	// ReleaseClaimed deletes the claimed logs. The DB calls it once their
	// operations are safe in this writer's own log.
	ReleaseClaimed() error
	// Append logs one record with the durability of the WAL's mode. When it
	// fails, nothing of the record stays in the log.
	Append(record []byte) error
	// Sync makes every appended record durable. The DB calls it about every
	// 100 ms from its background goroutine (batch mode) and before it
	// releases claimed logs.
	Sync() error
	// Rotate seals the current segment and starts a new one; the returned
	// token stands for every sealed segment so far.
	Rotate() (token uint64, err error)
	// Release deletes the segments sealed up to token, once the commit
	// covering them succeeded.
	Release(token uint64) error
	// Close closes the log. With clean set (everything committed) it
	// removes the segments and leaves the writer's directory for reuse.
	Close(clean bool) error
}

// ClaimedLog is the content of an abandoned writer's log.
type ClaimedLog struct {
	WriterID string
	Dir      string   // where it lives, for error messages
	Records  [][]byte // in log order
}

// SnapshotStore keeps the snapshot file of one database (package native/wal
// keeps it next to the WAL directories). Implementations are safe for
// concurrent use.
type SnapshotStore interface {
	// LoadSnapshot returns the saved snapshot, or nil with no error when
	// there is none.
	LoadSnapshot() ([]byte, error)
	// SaveSnapshot replaces the snapshot atomically.
	SaveSnapshot(data []byte) error
	// RemoveSnapshot deletes the snapshot, if any.
	RemoveSnapshot() error
}

// SnapshotStreamer is an optional interface of a SnapshotStore that saves
// a snapshot as it is written, so a large view is never also held in
// memory as one buffer (native/wal writes it to a temporary file).
type SnapshotStreamer interface {
	// StreamSnapshot replaces the snapshot atomically with the bytes write
	// writes to w. When write returns an error the old snapshot stays.
	StreamSnapshot(write func(w io.Writer) error) error
}

// SnapshotMapper is an optional interface of a SnapshotStore that can hand
// out the saved snapshot without copying it (native/wal maps the file).
// The DB calls release once it has decoded the bytes and never touches
// them afterwards.
type SnapshotMapper interface {
	// MapSnapshot returns the saved snapshot and a function that releases
	// it, or nil bytes with no error when there is none.
	MapSnapshot() (data []byte, release func(), err error)
}
