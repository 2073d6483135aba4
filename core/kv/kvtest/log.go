// Package kvtest holds test support for package kv: an operation log over
// any store.Store (memory for unit tests, a local folder for crash tests),
// an in-memory WAL, an in-memory snapshot store, a fault-injecting store,
// and RunModel, the randomized model test every backend of kv.DB runs.
//
// Nothing here is meant for production; the log keeps the semantics kv
// relies on (atomic commits, non-conflicting appends, row addresses stable
// per fragment, versions that disappear on cleanup) without Lance's format.
package kvtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kv0/kv0/core/kv"
	"github.com/kv0/kv0/core/store"
	"github.com/zeebo/xxh3"
)

// Log is a kv.OpLog over a store: data files under "<prefix>data/" and one
// manifest per version under "<prefix>ver/", created with PutIfAbsent so a
// commit is atomic and concurrent appends rebase. Safe for concurrent use,
// also by several processes sharing a local folder.
type Log struct {
	st     store.Store
	prefix string
	now    func() time.Time

	mu    sync.Mutex
	files map[string][]kv.Row // decoded data files (immutable)

	// BatchRows is the batch size of ScanFragments (default 100).
	BatchRows int
}

var _ kv.OpLog = (*Log)(nil)

// NewLog returns a log stored under prefix ("" or ending in "/") of st.
// now is the clock for version timestamps (nil: time.Now).
func NewLog(st store.Store, prefix string, now func() time.Time) *Log {
	if now == nil {
		now = time.Now
	}
	return &Log{st: st, prefix: prefix, now: now, files: map[string][]kv.Row{}, BatchRows: 100}
}

type manifest struct {
	Version   uint64
	Timestamp int64
	NextID    uint64
	Frags     []kv.FragmentInfo
}

func (l *Log) verKey(v uint64) string { return fmt.Sprintf("%sver/%020d", l.prefix, v) }

// Latest implements kv.OpLog.
func (l *Log) Latest(ctx context.Context) (uint64, error) {
	objs, err := l.st.List(ctx, store.ListOptions{Prefix: l.prefix + "ver/"})
	if err != nil {
		return 0, err
	}
	if len(objs) == 0 {
		return 0, nil
	}
	return strconv.ParseUint(strings.TrimPrefix(objs[len(objs)-1].Key, l.prefix+"ver/"), 10, 64)
}

func (l *Log) manifest(ctx context.Context, v uint64) (*manifest, error) {
	if v == 0 {
		return &manifest{}, nil
	}
	b, err := store.ReadAll(ctx, l.st, l.verKey(v))
	if err != nil {
		return nil, fmt.Errorf("version %d: %w", v, err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, &kv.CorruptionError{File: l.verKey(v), Offset: -1, Reason: err.Error()}
	}
	return &m, nil
}

// Fragments implements kv.OpLog.
func (l *Log) Fragments(ctx context.Context, v uint64) ([]kv.FragmentInfo, error) {
	m, err := l.manifest(ctx, v)
	if err != nil {
		return nil, err
	}
	return m.Frags, nil
}

// encodeRows lays rows out as: count uvarint, per row seq u64 | op u8 |
// key bytes | has value u8 | value bytes, then an xxh3-64 of it all.
func encodeRows(rows []kv.Row) []byte {
	b := binary.AppendUvarint(nil, uint64(len(rows)))
	for _, r := range rows {
		b = binary.LittleEndian.AppendUint64(b, r.Seq)
		b = append(b, byte(r.Op))
		b = binary.AppendUvarint(b, uint64(len(r.Key)))
		b = append(b, r.Key...)
		if r.Value == nil && r.Op == kv.OpDelete {
			b = append(b, 0)
			continue
		}
		b = append(b, 1)
		b = binary.AppendUvarint(b, uint64(len(r.Value)))
		b = append(b, r.Value...)
	}
	return binary.LittleEndian.AppendUint64(b, xxh3.Hash(b))
}

func decodeRows(name string, b []byte) ([]kv.Row, error) {
	bad := func(why string) error { return &kv.CorruptionError{File: name, Offset: -1, Reason: why} }
	if len(b) < 8 || xxh3.Hash(b[:len(b)-8]) != binary.LittleEndian.Uint64(b[len(b)-8:]) {
		return nil, bad("checksum mismatch")
	}
	b = b[:len(b)-8]
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)) {
		return nil, bad("bad count")
	}
	b = b[w:]
	rows := make([]kv.Row, 0, n)
	read := func() ([]byte, bool) {
		k, w := binary.Uvarint(b)
		if w <= 0 || k > uint64(len(b)-w) {
			return nil, false
		}
		v := b[w : w+int(k) : w+int(k)]
		b = b[w+int(k):]
		return v, true
	}
	for i := uint64(0); i < n; i++ {
		if len(b) < 9 {
			return nil, bad("truncated")
		}
		r := kv.Row{Seq: binary.LittleEndian.Uint64(b), Op: kv.Op(b[8])}
		b = b[9:]
		var ok bool
		if r.Key, ok = read(); !ok || len(b) == 0 {
			return nil, bad("bad key")
		}
		has := b[0]
		b = b[1:]
		if has == 1 {
			if r.Value, ok = read(); !ok {
				return nil, bad("bad value")
			}
			if r.Value == nil {
				r.Value = []byte{}
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func (l *Log) readFile(ctx context.Context, name string) ([]kv.Row, error) {
	l.mu.Lock()
	rows, ok := l.files[name]
	l.mu.Unlock()
	if ok {
		return rows, nil
	}
	b, err := store.ReadAll(ctx, l.st, l.prefix+"data/"+name)
	if err != nil {
		return nil, err
	}
	rows, err = decodeRows(name, b)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.files[name] = rows
	l.mu.Unlock()
	return rows, nil
}

func (l *Log) writeFile(ctx context.Context, rows []kv.Row) (string, error) {
	name := fmt.Sprintf("%020d-%016x.rows", l.now().UnixNano(), rand.Uint64())
	if err := l.st.PutIfAbsent(ctx, l.prefix+"data/"+name, encodeRows(rows)); err != nil {
		return "", err
	}
	return name, nil
}

// commit publishes the manifest built by edit on top of the latest version,
// retrying on lost races. edit may fail (e.g. with kv.ErrConflict).
func (l *Log) commit(ctx context.Context, edit func(m *manifest) error) (*manifest, error) {
	for {
		v, err := l.Latest(ctx)
		if err != nil {
			return nil, err
		}
		m, err := l.manifest(ctx, v)
		if err != nil {
			return nil, err
		}
		m.Frags = slices.Clone(m.Frags)
		if err := edit(m); err != nil {
			return nil, err
		}
		m.Version = v + 1
		m.Timestamp = l.now().UnixNano()
		b, _ := json.Marshal(m)
		err = l.st.PutIfAbsent(ctx, l.verKey(v+1), b)
		if errors.Is(err, store.ErrExists) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return m, nil
	}
}

func addrs(id uint64, n int) []uint64 {
	a := make([]uint64, n)
	for i := range a {
		a[i] = id<<32 | uint64(i)
	}
	return a
}

// Append implements kv.OpLog.
func (l *Log) Append(ctx context.Context, rows []kv.Row) (kv.CommitResult, error) {
	name, err := l.writeFile(ctx, rows)
	if err != nil {
		return kv.CommitResult{}, err
	}
	var f kv.FragmentInfo
	m, err := l.commit(ctx, func(m *manifest) error {
		f = kv.FragmentInfo{ID: m.NextID, DataFile: name, Rows: uint64(len(rows))}
		m.NextID++
		m.Frags = append(m.Frags, f)
		return nil
	})
	if err != nil {
		return kv.CommitResult{}, err
	}
	return kv.CommitResult{Version: m.Version, Added: []kv.FragmentInfo{f}, Addrs: addrs(f.ID, len(rows))}, nil
}

// ScanFragments implements kv.OpLog.
func (l *Log) ScanFragments(ctx context.Context, v uint64, frags []uint64, fn func([]kv.Row) error) error {
	m, err := l.manifest(ctx, v)
	if err != nil {
		return err
	}
	batch := max(1, l.BatchRows)
	for _, f := range m.Frags {
		if frags != nil && !slices.Contains(frags, f.ID) {
			continue
		}
		rows, err := l.readFile(ctx, f.DataFile)
		if err != nil {
			return err
		}
		for i := 0; i < len(rows); i += batch {
			part := slices.Clone(rows[i:min(len(rows), i+batch)])
			for j := range part {
				part[j].Addr = f.ID<<32 | uint64(i+j)
			}
			if err := fn(part); err != nil {
				return err
			}
		}
	}
	return nil
}

// Take implements kv.OpLog.
func (l *Log) Take(ctx context.Context, v uint64, as []uint64) ([][]byte, error) {
	m, err := l.manifest(ctx, v)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(as))
	for i, a := range as {
		id, off := a>>32, a&(1<<32-1)
		j := slices.IndexFunc(m.Frags, func(f kv.FragmentInfo) bool { return f.ID == id })
		if j < 0 {
			return nil, fmt.Errorf("fragment %d not in version %d: %w", id, v, store.ErrNotFound)
		}
		rows, err := l.readFile(ctx, m.Frags[j].DataFile)
		if err != nil {
			return nil, err
		}
		if off >= uint64(len(rows)) || rows[off].Op != kv.OpPut {
			return nil, &kv.CorruptionError{File: m.Frags[j].DataFile, Offset: -1, Reason: fmt.Sprintf("no put at row %d", off)}
		}
		out[i] = bytes.Clone(rows[off].Value)
		if out[i] == nil {
			out[i] = []byte{}
		}
	}
	return out, nil
}

// Materialize implements kv.OpLog.
func (l *Log) Materialize(ctx context.Context, readVersion uint64, seq func(yield func(kv.Row) bool), remove []uint64) (kv.CommitResult, error) {
	var rows []kv.Row
	var err error
	seq(func(r kv.Row) bool {
		r.Key = bytes.Clone(r.Key)
		if r.Lazy {
			var vals [][]byte
			vals, err = l.Take(ctx, readVersion, []uint64{r.Addr})
			if err != nil {
				return false
			}
			r.Value, r.Lazy, r.Addr = vals[0], false, 0
		} else if r.Value != nil {
			r.Value = bytes.Clone(r.Value)
		}
		rows = append(rows, r)
		return true
	})
	if err != nil {
		return kv.CommitResult{}, err
	}
	var added []kv.FragmentInfo
	var name string
	if len(rows) > 0 {
		if name, err = l.writeFile(ctx, rows); err != nil {
			return kv.CommitResult{}, err
		}
	}
	m, err := l.commit(ctx, func(m *manifest) error {
		added = added[:0]
		keep := m.Frags[:0]
		for _, id := range remove {
			if !slices.ContainsFunc(m.Frags, func(f kv.FragmentInfo) bool { return f.ID == id }) {
				return fmt.Errorf("fragment %d is gone: %w", id, kv.ErrConflict)
			}
		}
		for _, f := range m.Frags {
			if !slices.Contains(remove, f.ID) {
				keep = append(keep, f)
			}
		}
		m.Frags = keep
		if name != "" {
			f := kv.FragmentInfo{ID: m.NextID, DataFile: name, Rows: uint64(len(rows))}
			m.NextID++
			m.Frags = append(m.Frags, f)
			added = append(added, f)
		}
		return nil
	})
	if err != nil {
		return kv.CommitResult{}, err
	}
	res := kv.CommitResult{Version: m.Version, Added: added, Removed: slices.Clone(remove)}
	if len(added) > 0 {
		res.Addrs = addrs(added[0].ID, len(rows))
	} else {
		res.Addrs = []uint64{}
	}
	return res, nil
}

// CompactFiles implements kv.OpLog: it merges every fragment of the latest
// version into one.
func (l *Log) CompactFiles(ctx context.Context) (kv.CommitResult, error) {
	v, err := l.Latest(ctx)
	if err != nil {
		return kv.CommitResult{}, err
	}
	m, err := l.manifest(ctx, v)
	if err != nil {
		return kv.CommitResult{}, err
	}
	if len(m.Frags) <= 1 {
		return kv.CommitResult{}, nil
	}
	var rows []kv.Row
	var remove []uint64
	for _, f := range m.Frags {
		r, err := l.readFile(ctx, f.DataFile)
		if err != nil {
			return kv.CommitResult{}, err
		}
		rows = append(rows, r...)
		remove = append(remove, f.ID)
	}
	name, err := l.writeFile(ctx, rows)
	if err != nil {
		return kv.CommitResult{}, err
	}
	var f kv.FragmentInfo
	nm, err := l.commit(ctx, func(m *manifest) error {
		keep := m.Frags[:0]
		for _, id := range remove {
			if !slices.ContainsFunc(m.Frags, func(f kv.FragmentInfo) bool { return f.ID == id }) {
				return fmt.Errorf("fragment %d is gone: %w", id, kv.ErrConflict)
			}
		}
		for _, g := range m.Frags {
			if !slices.Contains(remove, g.ID) {
				keep = append(keep, g)
			}
		}
		f = kv.FragmentInfo{ID: m.NextID, DataFile: name, Rows: uint64(len(rows))}
		m.NextID++
		m.Frags = append(keep, f)
		return nil
	})
	if err != nil {
		return kv.CommitResult{}, err
	}
	return kv.CommitResult{Version: nm.Version, Added: []kv.FragmentInfo{f}, Removed: remove}, nil
}

// Versions implements kv.OpLog.
func (l *Log) Versions(ctx context.Context) ([]kv.VersionInfo, error) {
	objs, err := l.st.List(ctx, store.ListOptions{Prefix: l.prefix + "ver/"})
	if err != nil {
		return nil, err
	}
	var out []kv.VersionInfo
	for _, o := range objs {
		v, err := strconv.ParseUint(strings.TrimPrefix(o.Key, l.prefix+"ver/"), 10, 64)
		if err != nil {
			continue
		}
		m, err := l.manifest(ctx, v)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, kv.VersionInfo{Version: v, Timestamp: time.Unix(0, m.Timestamp)})
	}
	return out, nil
}

// CleanupOldVersions implements kv.OpLog. Data files no remaining version
// references are deleted once older than olderThan.
func (l *Log) CleanupOldVersions(ctx context.Context, olderThan time.Duration) (int, error) {
	vs, err := l.Versions(ctx)
	if err != nil || len(vs) == 0 {
		return 0, err
	}
	cut := l.now().Add(-olderThan)
	n := 0
	for _, v := range vs[:len(vs)-1] {
		if v.Timestamp.Before(cut) {
			if err := l.st.Delete(ctx, l.verKey(v.Version)); err != nil {
				return n, err
			}
			n++
		}
	}
	used := map[string]bool{}
	vs, err = l.Versions(ctx)
	if err != nil {
		return n, err
	}
	for _, v := range vs {
		m, err := l.manifest(ctx, v.Version)
		if err != nil {
			continue
		}
		for _, f := range m.Frags {
			used[f.DataFile] = true
		}
	}
	objs, err := l.st.List(ctx, store.ListOptions{Prefix: l.prefix + "data/"})
	if err != nil {
		return n, err
	}
	for _, o := range objs {
		name := strings.TrimPrefix(o.Key, l.prefix+"data/")
		ts, _ := strconv.ParseInt(strings.SplitN(name, "-", 2)[0], 10, 64)
		if !used[name] && time.Unix(0, ts).Before(cut) {
			if err := l.st.Delete(ctx, o.Key); err != nil {
				return n, err
			}
			l.mu.Lock()
			delete(l.files, name)
			l.mu.Unlock()
		}
	}
	return n, nil
}

// AllRows returns every row of version v (0: latest) in fragment order,
// marks included; tests use it to check what storage holds.
func (l *Log) AllRows(ctx context.Context, v uint64) ([]kv.Row, error) {
	if v == 0 {
		var err error
		if v, err = l.Latest(ctx); err != nil || v == 0 {
			return nil, err
		}
	}
	var out []kv.Row
	err := l.ScanFragments(ctx, v, nil, func(b []kv.Row) error {
		out = append(out, b...)
		return nil
	})
	return out, err
}
