package kv

import (
	"context"
	"encoding/binary"
	"errors"
	"time"
)

// Op is the kind of one operation-log row (the op column).
type Op uint8

// The operation kinds stored in the op column.
const (
	// OpPut sets Key to Value.
	OpPut Op = 0
	// OpDelete deletes Key; Value is null.
	OpDelete Op = 1
	// OpDeleteRange deletes every key in [Key, Value).
	OpDeleteRange Op = 2
	// OpMark is a write-ahead-log mark: Key is the writer id and Value the
	// highest sequence number of that writer's log the commit covers,
	// encoded by AppendMark.
	OpMark Op = 3
)

// String returns the name of the op.
func (o Op) String() string {
	switch o {
	case OpPut:
		return "put"
	case OpDelete:
		return "delete"
	case OpDeleteRange:
		return "delete-range"
	case OpMark:
		return "mark"
	}
	return "op(" + itoa(uint64(o)) + ")"
}

// Row is one row of the operation log:
//
//	column  type     meaning
//	seq     uint64   sequence number (hybrid logical clock); newest wins
//	op      uint8    0 put, 1 delete, 2 delete range, 3 WAL mark
//	key     binary   the key, the inclusive start of a range, or a writer id
//	value   binary?  the value, the exclusive end of a range, the mark; null for a delete
//
// Key and Value alias buffers owned by whoever produced the Row; they are
// valid only for the duration of the call that hands the Row over (a
// ScanFragments callback, an Append call). Value is nil for OpDelete.
//
// Addr is the row address (Lance: fragment id << 32 | row offset). OpLog
// scans fill it; Append and Materialize ignore it on input except for rows
// with Lazy set, whose value Materialize must copy from Addr at its read
// version (the DB never holds such a value in memory).
type Row struct {
	Seq   uint64
	Op    Op
	Key   []byte
	Value []byte
	Addr  uint64
	// Lazy marks a Materialize input row whose value is not in Value but
	// stored at Addr; ValueLen is its length.
	Lazy     bool
	ValueLen uint32
}

// FragmentInfo identifies one fragment of the log. Lance never reuses a
// fragment id, names data files uniquely and replaces a fragment's deletion
// file when rows are deleted, so (ID, DataFile, Rows, DeletionFile) changes
// whenever the fragment's contents do.
type FragmentInfo struct {
	ID           uint64
	DataFile     string // path of the first data file
	Rows         uint64 // physical rows, deleted ones included
	DeletionFile string // "" when none
}

// CommitResult describes one commit made through an OpLog.
type CommitResult struct {
	// Version is the dataset version the commit created.
	Version uint64
	// Added are the fragments the commit created, in order.
	Added []FragmentInfo
	// Removed are the ids of the fragments the commit removed.
	Removed []uint64
	// Addrs holds the row address of each row written, in input order. It
	// is nil for CompactFiles, which moves rows without reporting where.
	Addrs []uint64
}

// VersionInfo describes one stored version.
type VersionInfo struct {
	Version   uint64
	Timestamp time.Time
}

// OpLog is the storage binding of a DB: one operation-log dataset. The Lance
// implementation writes every commit as a Lance transaction; tests use the
// fakes in package kvtest.
//
// Implementations must be safe for concurrent use. Appends from different
// handles or processes must never conflict (a commit that lost a race is
// rebased onto the newer version and retried). Errors of missing versions or
// files (cleaned up by another writer) must match store.ErrNotFound so the DB
// can refresh and retry; corrupt data must match ErrCorruption.
type OpLog interface {
	// Append commits rows as one append: one new fragment, one commit. It
	// returns the new version, the fragment and each row's address.
	Append(ctx context.Context, rows []Row) (CommitResult, error)
	// Latest returns the newest version, or 0 for a log with no commits.
	Latest(ctx context.Context) (uint64, error)
	// Fragments lists the fragments of version, in id order.
	Fragments(ctx context.Context, version uint64) ([]FragmentInfo, error)
	// ScanFragments streams the rows of the given fragments of version (all
	// of them when fragments is nil), batch by batch, with Addr set. The
	// batch and the bytes it references are only valid during fn.
	ScanFragments(ctx context.Context, version uint64, fragments []uint64, fn func(batch []Row) error) error
	// Take returns the values of the rows at addrs, read at version. The
	// returned slices belong to the caller.
	Take(ctx context.Context, version uint64, addrs []uint64) ([][]byte, error)
	// Materialize commits one Update on top of readVersion: it writes the
	// rows yielded by rows (in order, values of Lazy rows copied from their
	// addresses at readVersion) as new fragments and removes the fragments
	// in remove. Fragments appended by others after readVersion stay. It
	// fails, matching ErrConflict, when a fragment in remove is gone.
	Materialize(ctx context.Context, readVersion uint64, rows func(yield func(Row) bool), remove []uint64) (CommitResult, error)
	// CompactFiles merges small fragments without changing rows (a Lance
	// Rewrite). Row addresses of the merged rows change; the result lists
	// the fragments added and removed, and Addrs is nil. A result with
	// Version 0 means there was nothing to do.
	CompactFiles(ctx context.Context) (CommitResult, error)
	// Versions lists the stored versions, oldest first.
	Versions(ctx context.Context) ([]VersionInfo, error)
	// CleanupOldVersions removes versions older than olderThan (never the
	// latest) and the files only they reference, and returns how many
	// versions it removed.
	CleanupOldVersions(ctx context.Context, olderThan time.Duration) (int, error)
}

// ErrConflict is returned by OpLog.Materialize (and wrapped by
// DB.CompactRange) when a concurrent compaction removed a fragment the
// commit meant to replace. Match with errors.Is.
var ErrConflict = errors.New("kv: commit conflict")

// AppendMark appends the encoding of a WAL mark value (the highest committed
// sequence number) to dst: an unsigned varint.
func AppendMark(dst []byte, seq uint64) []byte { return binary.AppendUvarint(dst, seq) }

// DecodeMark decodes a mark value written by AppendMark.
func DecodeMark(b []byte) (uint64, bool) {
	v, n := binary.Uvarint(b)
	if n <= 0 || n != len(b) {
		return 0, false
	}
	return v, true
}

func itoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return string(b[i:])
}
