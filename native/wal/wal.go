package wal

import (
	"cmp"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/kv0/kv0/core/kv"
	"github.com/zeebo/xxh3"
)

// SyncMode says when appended records reach stable storage.
type SyncMode int

const (
	// SyncBatch hands every record to the OS before Append returns and
	// fsyncs about every 100 ms, when the owner calls Sync (kv.DB does from
	// its background goroutine). A power loss can lose the last ~100 ms. It
	// is the default.
	SyncBatch SyncMode = iota
	// SyncNone hands every record to the OS before Append returns and never
	// fsyncs: it survives a process crash, not a power loss or kernel
	// crash.
	SyncNone
	// SyncAlways fsyncs before Append returns.
	SyncAlways
)

// String returns "batch", "none" or "always".
func (m SyncMode) String() string {
	switch m {
	case SyncBatch:
		return "batch"
	case SyncNone:
		return "none"
	case SyncAlways:
		return "always"
	}
	return "SyncMode(" + strconv.Itoa(int(m)) + ")"
}

// Options configure Open. The zero value logs under the default root in
// batch mode on the OS file system.
type Options struct {
	// Dir is the root of all WAL directories; when empty, $KV0_WAL_DIR,
	// else the user cache directory + "/kv0/wal".
	Dir string
	// Mode is the durability mode.
	Mode SyncMode
	// FS is the file system (nil: OSFS).
	FS FS
}

// ErrBroken is returned by Append after a failed append could neither be
// cut back out of its segment nor be sealed off by a new segment; the log
// accepts writes again after a successful Rotate. Match with errors.Is.
var ErrBroken = errors.New("wal: log refuses writes until the next rotation")

// ErrCorrupt means a segment of the log holds damaged records: bytes that
// fail their checksum or framing and that are not an append cut short by
// a crash (which Open drops on its own). Open fails with a *CorruptError,
// which matches ErrCorrupt and also kv.ErrCorruption (through the
// *kv.CorruptionError it wraps), until Salvage (`kv0 wal salvage
// LOCATION`) has set the damaged segment aside. Match with errors.Is.
var ErrCorrupt = errors.New("wal: damaged segment")

// CorruptError is the error of Open when a writer's log is damaged. It
// names the segment, where the damage starts and the command that
// recovers the records before it.
type CorruptError struct {
	// Segment is the path of the damaged segment file.
	Segment string
	// Offset is where the first damaged record starts in it.
	Offset int64
	// Reason says what failed (checksum mismatch, bad length, ...).
	Reason string
	// Intact is how many records of the writer's log come before the
	// damage: the ones Salvage keeps.
	Intact int
	// Location is the database or repository the log belongs to, as
	// `kv0 wal` takes it (derived from the key Open was given).
	Location string
	// WALDir is the WAL root Open was given (Options.Dir), "" for the
	// default one.
	WALDir string
}

// Error implements error.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("wal: damaged segment %s at offset %d (%s); the %d records before it are intact: run \"%s\" to keep them, "+
		"move the segment aside and let writers open again (\"kv0 wal check\" reports without changing anything)",
		e.Segment, e.Offset, e.Reason, e.Intact, e.Command())
}

// Command returns the command line that recovers: kv0 wal salvage with the
// location (quoted for a POSIX shell where needed) and --wal-dir when the
// log is not under the default root.
func (e *CorruptError) Command() string {
	c := "kv0 wal salvage " + shellQuote(e.Location)
	if e.WALDir != "" {
		c += " --wal-dir " + shellQuote(e.WALDir)
	}
	return c
}

// Is reports whether target is ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Unwrap returns the damage as a *kv.CorruptionError naming the segment,
// so the error also matches kv.ErrCorruption.
func (e *CorruptError) Unwrap() error {
	return &kv.CorruptionError{File: e.Segment, Offset: e.Offset, Reason: e.Reason}
}

// LocationOf returns the location whose log is keyed by uri, as `kv0 wal`
// takes it: key-value databases are keyed by location.Canonical (a folder
// as file:///path), tracking repositories by "repo:" and the same (a
// folder as its bare path).
func LocationOf(uri string) string {
	s := strings.TrimPrefix(uri, "repo:")
	if rest, ok := strings.CutPrefix(s, "file://"); ok {
		s = filepath.FromSlash(rest)
	}
	return s
}

// shellQuote quotes s for a POSIX shell unless it needs no quoting.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=./:,@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

const (
	lockName = "LOCK"
	segExt   = ".seg"
	snapName = "view.snap"
	// damagedDir is the folder of a dataset directory where Salvage sets
	// damaged segments aside; Open never treats it as a writer's.
	damagedDir = "damaged"
)

// Root returns the WAL root Options select.
func Root(o Options) (string, error) {
	if o.Dir != "" {
		return o.Dir, nil
	}
	if d := os.Getenv("KV0_WAL_DIR"); d != "" {
		return d, nil
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("wal: no WAL directory: %w", err)
	}
	return filepath.Join(c, "kv0", "wal"), nil
}

// DatasetDir returns the directory holding every writer's log (and the
// snapshot) of the dataset at uri: <root>/<xxh3-64 of uri in hex>.
func DatasetDir(uri string, o Options) (string, error) {
	root, err := Root(o)
	if err != nil {
		return "", err
	}
	return filepath.Join(root, fmt.Sprintf("%016x", xxh3.HashString(uri))), nil
}

// Log is one writer's write-ahead log: <dataset dir>/<writer id>/, held by
// an advisory lock on its LOCK file while open. It implements kv.WAL.
//
// A Log is safe for concurrent use; records are appended in call order.
type Log struct {
	fs   FS
	mode SyncMode
	dir  string
	id   string
	lock io.Closer

	mu      sync.Mutex
	seg     File
	mm      []byte // the current segment mapped (see mapSegment), or nil: write(2)
	mapOK   bool   // segments may be mapped
	segNum  uint64
	segSize int64
	dirty   bool   // appended since the last fsync
	syncing int    // fsyncs running without mu (see Sync)
	retired []File // segments to close once no fsync runs
	broken  bool   // see ErrBroken
	trim    []byte // trim record the next segment must start with
	sealed  []uint64
	closed  bool
	buf     []byte

	claimed     []kv.ClaimedLog
	claimedDirs []claimedDir
}

type claimedDir struct {
	dir  string
	lock io.Closer
	segs []string
}

var _ kv.WAL = (*Log)(nil)

// Open opens a writer's log for the dataset at uri. It takes the lock of
// every writer directory it can: an idle one (no records) becomes this
// writer's directory, reusing its id; the ones holding records belong to
// writers that stopped without committing and are claimed (see Claimed).
// An append cut short at the end of a claimed log's last segment (see
// tornAt) is dropped and cut from the file; any other damage fails Open
// with a *CorruptError (matching ErrCorrupt and kv.ErrCorruption) that
// names the segment file and the command that recovers (Salvage).
func Open(uri string, o Options) (*Log, error) {
	base, err := DatasetDir(uri, o)
	if err != nil {
		return nil, err
	}
	l := &Log{fs: o.FS, mode: o.Mode}
	if l.fs == nil {
		l.fs = OSFS{}
	}
	// Mapped segments on the OS file system only (other file systems are
	// fault-injecting test doubles that must see every write), and not in
	// SyncAlways mode, where the fsync of every record dominates anyway.
	_, osfs := l.fs.(OSFS)
	l.mapOK = canMap && osfs && l.mode != SyncAlways
	if err := l.fs.MkdirAll(base); err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	entries, err := l.fs.ReadDir(base)
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	fail := func(err error) (*Log, error) {
		l.releaseLocks()
		return nil, err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(base, e.Name())
		if strings.HasPrefix(e.Name(), newPrefix) {
			removeStaleNew(l.fs, dir)
			continue
		}
		if e.Name() == damagedDir {
			continue
		}
		lk, err := l.fs.Lock(filepath.Join(dir, lockName))
		if err != nil {
			if errors.Is(err, ErrLocked) || errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return fail(fmt.Errorf("wal: lock %s: %w", dir, err))
		}
		w, err := readWriter(l.fs, dir)
		if err == nil && w.damage != nil {
			err = &CorruptError{Segment: w.damage.path, Offset: w.damage.offset, Reason: w.damage.reason,
				Intact: len(w.recs), Location: LocationOf(uri), WALDir: o.Dir}
		}
		if err == nil {
			err = w.cutTail(l.fs)
		}
		if err != nil {
			lk.Close()
			return fail(err)
		}
		segs, recs := w.segs, w.recs
		if len(recs) == 0 {
			if l.dir == "" {
				for _, s := range segs {
					if err := l.fs.Remove(filepath.Join(dir, s)); err != nil {
						lk.Close()
						return fail(fmt.Errorf("wal: %w", err))
					}
				}
				l.dir, l.id, l.lock = dir, e.Name(), lk
			} else {
				lk.Close()
			}
			continue
		}
		l.claimed = append(l.claimed, kv.ClaimedLog{WriterID: e.Name(), Dir: dir, Records: recs})
		l.claimedDirs = append(l.claimedDirs, claimedDir{dir: dir, lock: lk, segs: segs})
	}
	if l.dir == "" {
		if err := l.newWriterDir(base); err != nil {
			return fail(err)
		}
	}
	if err := l.openSegment(1); err != nil {
		return fail(err)
	}
	return l, nil
}

// newPrefix starts the name of a writer directory being created: Open
// never adopts or claims one (see newWriterDir).
const newPrefix = ".new-"

// newWriterDirTries bounds how often newWriterDir starts over with a fresh
// name after a concurrent Open removed its directory as stale (each retry
// needs another Open to strike within the few microseconds between mkdir
// and flock).
const newWriterDirTries = 100

// newWriterDir creates this writer's directory under base, holding its
// lock, and makes it current. The directory is made and locked under a
// temporary name (newPrefix + id), which no other Open adopts, and then
// renamed to its id: no other process ever sees it unlocked under a name
// it would adopt. A process killed before the rename leaves an empty
// temporary directory, which a later Open removes (removeStaleNew); one
// killed after it leaves an idle directory, which a later Open adopts.
// Neither ever holds a segment.
func (l *Log) newWriterDir(base string) error {
	for try := 1; ; try++ {
		var b [8]byte
		_, _ = rand.Read(b[:])
		id := hex.EncodeToString(b[:])
		tmp := filepath.Join(base, newPrefix+id)
		if err := l.fs.MkdirAll(tmp); err != nil {
			return fmt.Errorf("wal: %w", err)
		}
		lk, err := l.fs.Lock(filepath.Join(tmp, lockName))
		if err != nil {
			if (errors.Is(err, ErrLocked) || errors.Is(err, fs.ErrNotExist)) && try < newWriterDirTries {
				// Another Open took the fresh directory for a stale one
				// and is removing it (or has).
				continue
			}
			return fmt.Errorf("wal: lock %s: %w", tmp, err)
		}
		dir := filepath.Join(base, id)
		if err := l.fs.Rename(tmp, dir); err != nil {
			lk.Close()
			_ = l.fs.Remove(filepath.Join(tmp, lockName))
			_ = l.fs.Remove(tmp)
			return fmt.Errorf("wal: %w", err)
		}
		if l.mode != SyncNone {
			_ = l.fs.SyncDir(base)
		}
		l.dir, l.id, l.lock = dir, id, lk
		return nil
	}
}

// removeStaleNew removes the temporary directory dir (see newWriterDir)
// of a writer killed while creating it. A directory whose lock is held is
// still being created and is left alone. The creator verifies after its
// flock that its lock file is still in place, so one that loses this race
// starts over with a fresh name.
func removeStaleNew(fsys FS, dir string) {
	lk, err := fsys.Lock(filepath.Join(dir, lockName))
	if err != nil {
		return
	}
	defer lk.Close()
	_ = fsys.Remove(filepath.Join(dir, lockName))
	_ = fsys.Remove(dir) // fails, harmlessly, if something else is inside
}

func (l *Log) releaseLocks() {
	if l.lock != nil {
		l.lock.Close()
		l.lock = nil
	}
	for _, c := range l.claimedDirs {
		c.lock.Close()
	}
	l.claimedDirs, l.claimed = nil, nil
}

func segName(n uint64) string { return fmt.Sprintf("%020d%s", n, segExt) }

// segments lists the segment files of dir in order.
func segments(fsys FS, dir string) ([]string, error) {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	var segs []string
	for _, e := range entries {
		n := e.Name()
		if strings.HasSuffix(n, segExt) {
			if _, err := strconv.ParseUint(strings.TrimSuffix(n, segExt), 10, 64); err == nil {
				segs = append(segs, n)
			}
		}
	}
	slices.Sort(segs) // zero-padded names sort numerically
	return segs, nil
}

// writerLog is what readWriter found in a writer directory.
type writerLog struct {
	segs []string // segment file names, in order
	// recs are the caller records in log order: all of them, or those
	// before the damage.
	recs [][]byte
	// damage is the first damaged record, nil if none.
	damage *segDamage
	// tail is a torn or unused tail of the last segment, to cut off before
	// the log is replayed and appended to (tail.at < 0: none).
	tail segTail
}

// segDamage is the first damaged record of a writer's log.
type segDamage struct {
	index  int    // of the segment in writerLog.segs
	path   string // of the segment
	offset int64  // where the damaged record starts
	reason string
	data   []byte // the whole segment
}

// segTail is the end of a last segment that holds no record.
type segTail struct {
	path string
	at   int64 // where it starts, -1 for none
	size int64 // the segment's size
	torn bool  // an append cut short (else unused reserved space)
}

// readWriter reads every record of a writer directory up to the first
// damage, without changing anything: a torn tail of the last segment is
// reported in tail (cutTail cuts it), other damage in damage.
func readWriter(fsys FS, dir string) (*writerLog, error) {
	segs, err := segments(fsys, dir)
	if err != nil {
		return nil, err
	}
	w := &writerLog{segs: segs, tail: segTail{at: -1}}
	datas := make([][]byte, len(segs))
	parsedSegs := make([]parsed, len(segs))
	trims := map[uint64]int64{}
	for i, s := range segs {
		data, err := fsys.ReadFile(filepath.Join(dir, s))
		if err != nil {
			return nil, fmt.Errorf("wal: %w", err)
		}
		datas[i] = data
		parsedSegs[i] = parseSegment(data)
		for _, r := range parsedSegs[i].records {
			if len(r.payload) == trimSize && r.payload[0] == kindTrim {
				trims[binary.LittleEndian.Uint64(r.payload[1:])] = int64(binary.LittleEndian.Uint64(r.payload[9:]))
			}
		}
	}
	for i, s := range segs {
		p := parsedSegs[i]
		path := filepath.Join(dir, s)
		num, _ := strconv.ParseUint(strings.TrimSuffix(s, segExt), 10, 64)
		damaged := func(off int64, why string) *writerLog {
			w.damage = &segDamage{index: i, path: path, offset: off, reason: why, data: datas[i]}
			return w
		}
		keep := p.records
		if limit, ok := trims[num]; ok {
			keep = keep[:0:0]
			for _, r := range p.records {
				if r.end <= limit {
					keep = append(keep, r)
				}
			}
		}
		for _, r := range keep {
			if len(r.payload) > 0 && r.payload[0] == kindTrim {
				continue
			}
			if _, ok := recordSeq(r.payload); !ok {
				return damaged(r.end-int64(len(r.payload))-headerSize, "record without kind and sequence number"), nil
			}
			w.recs = append(w.recs, r.payload)
		}
		if limit, ok := trims[num]; ok {
			if p.badAt >= 0 && p.badAt < limit {
				return damaged(p.badAt, p.why), nil
			}
		} else if p.badAt >= 0 {
			if i != len(segs)-1 || !p.torn {
				return damaged(p.badAt, p.why), nil
			}
			// A torn write at the very end: it is cut from the file too, so
			// later appends never sit behind it.
			w.tail = segTail{path: path, at: p.badAt, size: int64(len(datas[i])), torn: true}
		} else if p.zeroAt >= 0 && i == len(segs)-1 {
			w.tail = segTail{path: path, at: p.zeroAt, size: int64(len(datas[i]))}
		}
	}
	return w, nil
}

// cutTail cuts the torn or unused tail of the last segment off.
func (w *writerLog) cutTail(fsys FS) error {
	if w.tail.at < 0 {
		return nil
	}
	if err := fsys.Truncate(w.tail.path, w.tail.at); err != nil {
		what := "unused"
		if w.tail.torn {
			what = "torn"
		}
		return fmt.Errorf("wal: cut %s tail of %s: %w", what, w.tail.path, err)
	}
	return nil
}

// segMapSize is the size of a mapped segment; a flush seals it long
// before it fills (the default write buffer is 4 MiB), and a segment that
// fills up is sealed early.
const segMapSize = 8 << 20

// openSegment creates segment n and makes it current; it starts with the
// pending trim record, if any. The caller holds mu (or is Open).
func (l *Log) openSegment(n uint64) error { return l.openSegmentFor(n, 0) }

// openSegmentFor is openSegment for a first record of need bytes.
func (l *Log) openSegmentFor(n uint64, need int) error {
	path := filepath.Join(l.dir, segName(n))
	if l.mapOK {
		size := max(segMapSize, (need+headerSize+trimSize+headerSize+4095)&^4095)
		if f, m, err := mapSegment(path, size); err == nil {
			old := l.mm
			l.mm, l.segSize = m, 0
			if l.trim != nil {
				l.putMapped(l.trim)
			}
			err := error(nil)
			if l.mode != SyncNone {
				if l.trim != nil {
					err = f.Sync()
				}
				if err == nil {
					err = l.fs.SyncDir(l.dir)
				}
			}
			if err != nil {
				l.mm = old
				_ = unmapSegment(m)
				f.Close()
				_ = l.fs.Remove(path)
				return fmt.Errorf("wal: %w", err)
			}
			l.seg, l.segNum, l.trim, l.broken = f, n, nil, false
			return nil
		}
		// No space could be reserved: write(2) this segment.
	}
	f, err := l.fs.Create(path)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	var size int64
	if l.trim != nil {
		rec := appendRecord(nil, l.trim)
		_, err := f.Write(rec)
		if err == nil && l.mode != SyncNone {
			err = f.Sync()
		}
		if err != nil {
			f.Close()
			_ = l.fs.Remove(path)
			return fmt.Errorf("wal: %w", err)
		}
		size = int64(len(rec))
	}
	if l.mode != SyncNone {
		if err := l.fs.SyncDir(l.dir); err != nil {
			f.Close()
			_ = l.fs.Remove(path)
			return fmt.Errorf("wal: %w", err)
		}
	}
	l.seg, l.mm, l.segNum, l.segSize, l.trim, l.broken = f, nil, n, size, nil, false
	return nil
}

// putMapped stores a record at the end of the mapped segment, which has
// room for it. The length goes first and the checksum last, each in one
// store, so a process killed part-way leaves either nothing (a zero
// length: the reserved space is unused) or a record whose checksum fails
// and which only zeros follow (a torn tail, dropped on replay).
func (l *Log) putMapped(payload []byte) {
	off := int(l.segSize)
	m := l.mm[off : off+headerSize+len(payload)]
	binary.LittleEndian.PutUint32(m, uint32(len(payload)))
	copy(m[headerSize:], payload)
	binary.LittleEndian.PutUint64(m[4:], xxh3.Hash(payload))
	l.segSize += int64(len(m))
}

// closeSegment closes segment f (mapped as m, or nil), cutting a mapped
// one to its records.
func (l *Log) closeSegment(f File, m []byte, size int64) error {
	var err error
	if m != nil {
		err = unmapSegment(m)
		if terr := f.Truncate(size); err == nil {
			err = terr
		}
	}
	if l.syncing > 0 {
		// A Sync is using the file: it closes it when done.
		l.retired = append(l.retired, f)
		return err
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// spill seals a mapped segment too full for a record of need bytes and
// continues in a new one. The next Rotate's token covers it.
func (l *Log) spill(need int) error {
	old, oldNum, oldMM, oldSize := l.seg, l.segNum, l.mm, l.segSize
	if l.mode != SyncNone && (l.dirty || l.syncing > 0) {
		if err := old.Sync(); err != nil {
			return err
		}
		l.dirty = false
	}
	if err := l.openSegmentFor(oldNum+1, need); err != nil {
		return err
	}
	_ = l.closeSegment(old, oldMM, oldSize)
	l.sealed = append(l.sealed, oldNum)
	return nil
}

// WriterID implements kv.WAL: the name of the writer's directory.
func (l *Log) WriterID() string { return l.id }

// Dir returns the writer's directory.
func (l *Log) Dir() string { return l.dir }

// Claimed implements kv.WAL: the logs of abandoned writers, each in log
// order. Records of all of them together are ordered by sequence number.
func (l *Log) Claimed() []kv.ClaimedLog { return l.claimed }

// ClaimedInOrder returns the records of every claimed log merged by
// sequence number (stable: records of one log keep their order on ties).
func (l *Log) ClaimedInOrder() [][]byte {
	type item struct {
		seq uint64
		rec []byte
	}
	var items []item
	for _, c := range l.claimed {
		for _, r := range c.Records {
			s, _ := recordSeq(r)
			items = append(items, item{s, r})
		}
	}
	slices.SortStableFunc(items, func(a, b item) int { return cmp.Compare(a.seq, b.seq) })
	out := make([][]byte, len(items))
	for i, it := range items {
		out[i] = it.rec
	}
	return out
}

// ReleaseClaimed implements kv.WAL: it deletes the claimed directories.
func (l *Log) ReleaseClaimed() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var first error
	for _, c := range l.claimedDirs {
		for _, s := range c.segs {
			if err := l.fs.Remove(filepath.Join(c.dir, s)); err != nil && !errors.Is(err, fs.ErrNotExist) && first == nil {
				first = err
			}
		}
		_ = l.fs.Remove(filepath.Join(c.dir, lockName))
		if err := l.fs.Remove(c.dir); err != nil && !errors.Is(err, fs.ErrNotExist) && first == nil {
			first = err
		}
		c.lock.Close()
	}
	l.claimedDirs, l.claimed = nil, nil
	if first != nil {
		return fmt.Errorf("wal: release claimed logs: %w", first)
	}
	return nil
}

// Append implements kv.WAL. payload must start with a kind byte other than
// 0 and a little-endian uint64 sequence number. In SyncAlways mode the
// record is fsynced before Append returns. A failed append is cut back out
// of the segment (or, when that fails, sealed off by a new segment) before
// the error is returned.
func (l *Log) Append(payload []byte) error {
	if _, ok := recordSeq(payload); !ok {
		return fmt.Errorf("wal: record must start with a kind byte (not 0) and a sequence number")
	}
	if len(payload) > MaxRecord {
		return fmt.Errorf("wal: record of %d bytes exceeds %d", len(payload), MaxRecord)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return kv.ErrClosed
	}
	if l.broken {
		return ErrBroken
	}
	if l.mm != nil {
		need := headerSize + len(payload)
		if int(l.segSize)+need > len(l.mm) {
			if err := l.spill(need); err != nil {
				return fmt.Errorf("wal: append: %w", err)
			}
		}
		if l.mm != nil {
			l.putMapped(payload)
			l.dirty = l.mode == SyncBatch
			return nil
		}
		// The new segment could not be mapped: write(2) it.
	}
	l.buf = appendRecord(l.buf[:0], payload)
	_, err := l.seg.Write(l.buf)
	if err == nil && l.mode == SyncAlways {
		err = l.seg.Sync()
	}
	if cap(l.buf) > 1<<20 {
		l.buf = nil
	}
	if err == nil {
		l.segSize += int64(headerSize + len(payload))
		l.dirty = l.mode == SyncBatch
		return nil
	}
	// Cut the failed record back out so it is never replayed and never sits
	// in front of later records.
	terr := l.seg.Truncate(l.segSize)
	if terr == nil && l.mode != SyncNone {
		terr = l.seg.Sync()
	}
	if terr != nil {
		l.trim = trimPayload(l.segNum, l.segSize)
		old := l.seg
		if nerr := l.openSegment(l.segNum + 1); nerr != nil {
			l.broken = true
		} else {
			old.Close()
			l.sealed = append(l.sealed, l.segNum-1)
		}
	}
	return fmt.Errorf("wal: append: %w", err)
}

// Sync implements kv.WAL: in SyncBatch mode it fsyncs the current segment
// when records were appended since the last fsync; in the other modes it
// does nothing.
//
// The fsync runs without the log's lock, so appends go on meanwhile; a
// segment sealed during it is closed once it is done.
func (l *Log) Sync() error {
	l.mu.Lock()
	if l.closed || !l.dirty || l.broken {
		l.mu.Unlock()
		return nil
	}
	f := l.seg
	l.dirty = false
	l.syncing++
	l.mu.Unlock()
	err := f.Sync()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.syncing--
	if err != nil && f == l.seg {
		l.dirty = true
	}
	if l.syncing == 0 {
		for _, r := range l.retired {
			r.Close()
		}
		l.retired = nil
	}
	if err != nil {
		return fmt.Errorf("wal: sync: %w", err)
	}
	return nil
}

// Rotate implements kv.WAL: it seals the current segment (fsynced unless
// in SyncNone mode) and opens the next. The token names the last sealed
// segment. After a failure the current segment stays in use.
func (l *Log) Rotate() (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, kv.ErrClosed
	}
	if !l.broken && l.mode != SyncNone && (l.dirty || l.syncing > 0) {
		if err := l.seg.Sync(); err != nil {
			return 0, fmt.Errorf("wal: rotate: %w", err)
		}
		l.dirty = false
	}
	old, oldNum, oldMM, oldSize := l.seg, l.segNum, l.mm, l.segSize
	if err := l.openSegment(oldNum + 1); err != nil {
		return 0, fmt.Errorf("wal: rotate: %w", err)
	}
	_ = l.closeSegment(old, oldMM, oldSize)
	l.sealed = append(l.sealed, oldNum)
	return oldNum, nil
}

// Release implements kv.WAL: it deletes the sealed segments up to token.
func (l *Log) Release(token uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var first error
	keep := l.sealed[:0]
	for _, n := range l.sealed {
		if n > token {
			keep = append(keep, n)
			continue
		}
		if err := l.fs.Remove(filepath.Join(l.dir, segName(n))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			if first == nil {
				first = err
			}
			keep = append(keep, n)
		}
	}
	l.sealed = keep
	if first != nil {
		return fmt.Errorf("wal: release: %w", first)
	}
	return nil
}

// Close implements kv.WAL. With clean set it deletes every segment and
// keeps the (empty) directory for the next writer to adopt; otherwise it
// leaves the segments for a later Open to replay. It releases the locks.
func (l *Log) Close(clean bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return kv.ErrClosed
	}
	l.closed = true
	var err error
	if !clean && l.mode != SyncNone && (l.dirty || l.syncing > 0) && !l.broken {
		err = l.seg.Sync()
	}
	if cerr := l.closeSegment(l.seg, l.mm, l.segSize); err == nil {
		err = cerr
	}
	l.mm = nil
	if clean {
		segs, serr := segments(l.fs, l.dir)
		if serr == nil {
			for _, s := range segs {
				if rerr := l.fs.Remove(filepath.Join(l.dir, s)); rerr != nil && err == nil {
					err = rerr
				}
			}
		} else if err == nil {
			err = serr
		}
	}
	l.releaseLocks()
	if err != nil {
		return fmt.Errorf("wal: close: %w", err)
	}
	return nil
}

// Snapshots is the kv.SnapshotStore of one dataset: the file view.snap in
// the dataset's WAL directory, replaced atomically (written to a temporary
// file, fsynced, renamed, directory fsynced). Safe for concurrent use.
type Snapshots struct {
	fs   FS
	path string
}

var _ kv.SnapshotStore = (*Snapshots)(nil)

// OpenSnapshots returns the snapshot store of the dataset at uri. It takes
// no lock, so read-only handles may use it too.
func OpenSnapshots(uri string, o Options) (*Snapshots, error) {
	base, err := DatasetDir(uri, o)
	if err != nil {
		return nil, err
	}
	s := &Snapshots{fs: o.FS, path: filepath.Join(base, snapName)}
	if s.fs == nil {
		s.fs = OSFS{}
	}
	return s, nil
}

// LoadSnapshot implements kv.SnapshotStore.
func (s *Snapshots) LoadSnapshot() ([]byte, error) {
	b, err := s.fs.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

var _ kv.SnapshotMapper = (*Snapshots)(nil)

// MapSnapshot implements kv.SnapshotMapper: on Linux, with the OS file
// system, it maps the file instead of reading it into memory.
func (s *Snapshots) MapSnapshot() ([]byte, func(), error) {
	if _, osfs := s.fs.(OSFS); canMap && osfs {
		m, release, err := mapFile(s.path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, nil
		}
		if err == nil {
			return m, release, nil
		}
	}
	b, err := s.LoadSnapshot()
	return b, nil, err
}

// SaveSnapshot implements kv.SnapshotStore. It refuses bytes that do not
// pass kv.ValidateSnapshot.
func (s *Snapshots) SaveSnapshot(data []byte) error {
	if err := kv.ValidateSnapshot(data); err != nil {
		return err
	}
	return s.StreamSnapshot(func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

var _ kv.SnapshotStreamer = (*Snapshots)(nil)

// StreamSnapshot implements kv.SnapshotStreamer: write fills a temporary
// file next to the snapshot, which is synced and renamed over it.
func (s *Snapshots) StreamSnapshot(write func(w io.Writer) error) error {
	dir := filepath.Dir(s.path)
	if err := s.fs.MkdirAll(dir); err != nil {
		return err
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	tmp := s.path + ".tmp-" + hex.EncodeToString(b[:])
	f, err := s.fs.Create(tmp)
	if err != nil {
		return err
	}
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.fs.Rename(tmp, s.path)
	}
	if err != nil {
		_ = s.fs.Remove(tmp)
		return err
	}
	return s.fs.SyncDir(dir)
}

// RemoveSnapshot implements kv.SnapshotStore.
func (s *Snapshots) RemoveSnapshot() error {
	err := s.fs.Remove(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
