package wal

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Report is what Check or Salvage found in the log of one database or
// repository (its dataset directory, see DatasetDir).
type Report struct {
	// Dir is the dataset directory; Exists says whether it exists (a
	// location that never had a writable open on this host has none).
	Dir    string `json:"dir"`
	Exists bool   `json:"exists"`
	// Writers is the number of writer directories read.
	Writers int `json:"writers"`
	// Busy lists the writer directories a running writer holds; they are
	// neither read nor changed.
	Busy []string `json:"busy,omitempty"`
	// Records counts the intact records the next writable open replays
	// (for a damaged writer, those before the damage).
	Records int `json:"records"`
	// Torn lists appends cut short by a crash: not damage, the next
	// writable open drops them.
	Torn []Torn `json:"torn,omitempty"`
	// Damaged lists the damaged writer logs, one entry each.
	Damaged []Damage `json:"damaged,omitempty"`
	// SetAside lists the files an earlier Salvage moved into the damaged
	// folder (paths under Dir).
	SetAside []string `json:"set_aside,omitempty"`
}

// Torn is an append cut short at the end of a writer's last segment.
type Torn struct {
	Segment string `json:"segment"`
	Offset  int64  `json:"offset"`
	Bytes   int64  `json:"bytes"` // from Offset to the end of the file
}

// Damage is the first damaged record of one writer's log.
type Damage struct {
	// Segment is the path of the damaged segment file (before Salvage
	// moved it).
	Segment string `json:"segment"`
	// Writer is the id of the writer whose log it is.
	Writer string `json:"writer"`
	// Offset is where the damaged record starts in the segment.
	Offset int64 `json:"offset"`
	// Reason says what failed.
	Reason string `json:"reason"`
	// Intact counts the writer's records before the damage, in every
	// segment up to this one: Salvage keeps them for replay.
	Intact int `json:"intact"`
	// LostBytes counts the bytes from Offset to the segment's last
	// non-zero byte: the records there cannot be read (the zeros after
	// them are unused space of a mapped segment).
	LostBytes int64 `json:"lost_bytes"`
	// Later lists the writer's segments after the damaged one (paths
	// before Salvage moved them). Their records were written after the
	// damaged ones; replaying them without those could store a state that
	// never was, so Salvage sets them aside unreplayed.
	Later []string `json:"later,omitempty"`
	// LaterRecords and LaterBytes count the records and bytes in Later.
	LaterRecords int   `json:"later_records,omitempty"`
	LaterBytes   int64 `json:"later_bytes,omitempty"`
	// MovedTo is, after Salvage, the copy of the damaged segment in the
	// damaged folder; LaterMovedTo the new paths of Later.
	MovedTo      string   `json:"moved_to,omitempty"`
	LaterMovedTo []string `json:"later_moved_to,omitempty"`
}

// Check reads the log of the dataset at uri (the key Open takes) and
// reports what a writable open would find: intact records, appends cut
// short by a crash (not damage) and damaged segments. It changes nothing
// and skips (reports as Busy) the writers that are running; a writer
// opening meanwhile does not replay the logs Check is reading (they stay
// for the next open).
func Check(uri string, o Options) (*Report, error) { return inspect(uri, o, false) }

// Salvage recovers the log of the dataset at uri from damage: for each
// damaged writer log it keeps the records before the damage in place, for
// the next writable open to replay (each exactly once: the marks of the
// records a commit already covered still skip them), and moves the
// damaged segment, and the writer's later segments, into
// <dataset dir>/damaged/<writer id>/ (as <segment>.damaged and
// <segment>.after-damage); nothing is deleted. A log without damage is
// left as it is, so Salvage can run again at any time, also after it was
// interrupted: every step leaves either the damaged segment in place or
// the intact records in place and the damaged ones set aside.
func Salvage(uri string, o Options) (*Report, error) { return inspect(uri, o, true) }

const (
	damagedExt    = ".damaged"
	afterExt      = ".after-damage"
	salvagePrefix = ".salvage-" // a segment's intact prefix being written
	tmpPrefix     = ".tmp-"     // a copy into the damaged folder being written
)

func inspect(uri string, o Options, salvage bool) (*Report, error) {
	base, err := DatasetDir(uri, o)
	if err != nil {
		return nil, err
	}
	fsys := o.FS
	if fsys == nil {
		fsys = OSFS{}
	}
	rep := &Report{Dir: base}
	entries, err := fsys.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) {
		return rep, nil
	}
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	rep.Exists = true
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), newPrefix) || e.Name() == damagedDir {
			continue
		}
		dir := filepath.Join(base, e.Name())
		lk, err := fsys.Lock(filepath.Join(dir, lockName))
		if errors.Is(err, ErrLocked) {
			rep.Busy = append(rep.Busy, dir)
			continue
		}
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile by a writer releasing it
		}
		if err != nil {
			return nil, fmt.Errorf("wal: lock %s: %w", dir, err)
		}
		err = inspectWriter(fsys, base, dir, e.Name(), salvage, rep)
		lk.Close()
		if err != nil {
			return nil, err
		}
	}
	rep.SetAside, err = listSetAside(fsys, filepath.Join(base, damagedDir))
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// inspectWriter reads the writer directory dir (locked by the caller)
// into rep and, with salvage, sets its damage aside.
func inspectWriter(fsys FS, base, dir, id string, salvage bool, rep *Report) error {
	if salvage {
		// Files of an interrupted salvage; a writer directory must hold
		// nothing else for ReleaseClaimed to remove it.
		if err := removePrefixed(fsys, dir, salvagePrefix); err != nil {
			return err
		}
	}
	w, err := readWriter(fsys, dir)
	if err != nil {
		return err
	}
	rep.Writers++
	rep.Records += len(w.recs)
	if w.damage == nil {
		if w.tail.at >= 0 && w.tail.torn {
			rep.Torn = append(rep.Torn, Torn{Segment: w.tail.path, Offset: w.tail.at, Bytes: w.tail.size - w.tail.at})
		}
		return nil
	}
	dm := w.damage
	d := Damage{Segment: dm.path, Writer: id, Offset: dm.offset, Reason: dm.reason, Intact: len(w.recs),
		LostBytes: int64(lastNonZero(dm.data[dm.offset:]) + 1)}
	later := w.segs[dm.index+1:]
	for _, s := range later {
		path := filepath.Join(dir, s)
		data, err := fsys.ReadFile(path)
		if err != nil {
			return fmt.Errorf("wal: %w", err)
		}
		recs, _, _ := ReadSegment(data)
		d.Later = append(d.Later, path)
		d.LaterRecords += len(recs)
		d.LaterBytes += int64(len(data))
	}
	if salvage {
		if err := setAside(fsys, base, dir, id, w, &d); err != nil {
			return err
		}
	}
	rep.Damaged = append(rep.Damaged, d)
	return nil
}

// setAside carries out the salvage of one damaged writer log: copy the
// damaged segment into the damaged folder, move the later segments there,
// then replace the damaged segment by its intact prefix. Each file is
// synced before the step that depends on it.
func setAside(fsys FS, base, dir, id string, w *writerLog, d *Damage) error {
	dm := w.damage
	dst := filepath.Join(base, damagedDir, id)
	if err := fsys.MkdirAll(dst); err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	if err := removePrefixed(fsys, dst, tmpPrefix); err != nil {
		return err
	}
	seg := filepath.Base(dm.path)
	copyPath, err := storeCopy(fsys, dst, seg+damagedExt, dm.data)
	if err != nil {
		return err
	}
	d.MovedTo = copyPath
	for _, path := range d.Later {
		to, err := freeName(fsys, dst, filepath.Base(path)+afterExt)
		if err != nil {
			return err
		}
		if err := fsys.Rename(path, to); err != nil {
			return fmt.Errorf("wal: set aside %s: %w", path, err)
		}
		d.LaterMovedTo = append(d.LaterMovedTo, to)
	}
	for _, p := range []string{dst, filepath.Dir(dst), base} {
		if err := fsys.SyncDir(p); err != nil {
			return fmt.Errorf("wal: %w", err)
		}
	}
	tmp := filepath.Join(dir, salvagePrefix+randomHex())
	if err := writeSynced(fsys, tmp, dm.data[:dm.offset]); err != nil {
		_ = fsys.Remove(tmp)
		return err
	}
	if err := fsys.Rename(tmp, dm.path); err != nil {
		_ = fsys.Remove(tmp)
		return fmt.Errorf("wal: replace %s by its intact records: %w", dm.path, err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	return nil
}

// storeCopy writes data as dir/name, synced, unless a file of that name
// already holds it (a salvage interrupted after the copy); a different
// file of that name keeps its name and the copy gets a free one.
func storeCopy(fsys FS, dir, name string, data []byte) (string, error) {
	path := filepath.Join(dir, name)
	for i := 1; ; i++ {
		old, err := fsys.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("wal: %w", err)
		}
		if bytes.Equal(old, data) {
			return path, nil
		}
		path = filepath.Join(dir, name+"."+strconv.Itoa(i))
	}
	tmp := filepath.Join(dir, tmpPrefix+randomHex())
	if err := writeSynced(fsys, tmp, data); err != nil {
		_ = fsys.Remove(tmp)
		return "", err
	}
	if err := fsys.Rename(tmp, path); err != nil {
		_ = fsys.Remove(tmp)
		return "", fmt.Errorf("wal: %w", err)
	}
	return path, nil
}

// freeName returns dir/name, or dir/name.N for the first N that is free.
func freeName(fsys FS, dir, name string) (string, error) {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("wal: %w", err)
	}
	taken := map[string]bool{}
	for _, e := range entries {
		taken[e.Name()] = true
	}
	cand := name
	for i := 1; taken[cand]; i++ {
		cand = name + "." + strconv.Itoa(i)
	}
	return filepath.Join(dir, cand), nil
}

// writeSynced creates path with data and fsyncs it.
func writeSynced(fsys FS, path string, data []byte) error {
	f, err := fsys.Create(path)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("wal: write %s: %w", path, err)
	}
	return nil
}

// removePrefixed removes the files of dir whose names start with prefix.
func removePrefixed(fsys FS, dir, prefix string) error {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() && strings.HasPrefix(e.Name(), prefix) {
			if err := fsys.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("wal: %w", err)
			}
		}
	}
	return nil
}

// listSetAside lists the files under the damaged folder dir, sorted.
func listSetAside(fsys FS, dir string) ([]string, error) {
	writers, err := fsys.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	var out []string
	for _, wd := range writers {
		if !wd.IsDir() {
			continue
		}
		files, err := fsys.ReadDir(filepath.Join(dir, wd.Name()))
		if err != nil {
			return nil, fmt.Errorf("wal: %w", err)
		}
		for _, f := range files {
			if !f.IsDir() && !strings.HasPrefix(f.Name(), tmpPrefix) {
				out = append(out, filepath.Join(dir, wd.Name(), f.Name()))
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

func randomHex() string {
	var b [8]byte
	_, _ = io.ReadFull(rand.Reader, b[:])
	return hex.EncodeToString(b[:])
}
