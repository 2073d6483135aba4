package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kv0/kv0/core/kv"
)

// rec builds a caller record of kind 10 with seq and a body.
func rec(seq uint64, body string) []byte {
	p := []byte{10}
	p = binary.LittleEndian.AppendUint64(p, seq)
	return append(p, body...)
}

func bodies(recs [][]byte) []string {
	var out []string
	for _, r := range recs {
		out = append(out, string(r[9:]))
	}
	return out
}

func claimedBodies(l *Log) []string { return bodies(l.ClaimedInOrder()) }

// faultFS injects failures into writes, truncations and creations.
type faultFS struct {
	OSFS
	mu         sync.Mutex
	failWrite  int // fail the next n writes (writing half the bytes first)
	failSync   int
	failTrunc  bool
	failCreate bool
	failRemove bool
}

func (f *faultFS) Create(name string) (File, error) {
	f.mu.Lock()
	fail := f.failCreate
	f.mu.Unlock()
	if fail {
		return nil, errors.New("injected create failure")
	}
	file, err := f.OSFS.Create(name)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f}, nil
}

func (f *faultFS) Remove(name string) error {
	f.mu.Lock()
	fail := f.failRemove
	f.mu.Unlock()
	if fail {
		return errors.New("injected remove failure")
	}
	return f.OSFS.Remove(name)
}

type faultFile struct {
	File
	fs *faultFS
}

func (f *faultFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	fail := f.fs.failWrite > 0
	if fail {
		f.fs.failWrite--
	}
	f.fs.mu.Unlock()
	if fail {
		n, _ := f.File.Write(p[:len(p)/2])
		return n, errors.New("injected write failure")
	}
	return f.File.Write(p)
}

func (f *faultFile) Sync() error {
	f.fs.mu.Lock()
	fail := f.fs.failSync > 0
	if fail {
		f.fs.failSync--
	}
	f.fs.mu.Unlock()
	if fail {
		return errors.New("injected sync failure")
	}
	return f.File.Sync()
}

func (f *faultFile) Truncate(n int64) error {
	f.fs.mu.Lock()
	fail := f.fs.failTrunc
	f.fs.mu.Unlock()
	if fail {
		return errors.New("injected truncate failure")
	}
	return f.File.Truncate(n)
}

const uri = "file:///data/db.lance"

func mustOpen(t *testing.T, o Options) *Log {
	t.Helper()
	l, err := Open(uri, o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func appendAll(t *testing.T, l *Log, seq uint64, bs ...string) {
	t.Helper()
	for i, b := range bs {
		if err := l.Append(rec(seq+uint64(i), b)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAppendReplay(t *testing.T) {
	for _, mode := range []SyncMode{SyncNone, SyncBatch, SyncAlways} {
		t.Run(mode.String(), func(t *testing.T) {
			o := Options{Dir: t.TempDir(), Mode: mode}
			l := mustOpen(t, o)
			appendAll(t, l, 1, "a", "b")
			if _, err := l.Rotate(); err != nil {
				t.Fatal(err)
			}
			appendAll(t, l, 3, "c")
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(false); err != nil {
				t.Fatal(err)
			}
			l2 := mustOpen(t, o)
			if got := claimedBodies(l2); !slices.Equal(got, []string{"a", "b", "c"}) {
				t.Fatalf("replayed %q", got)
			}
			if l2.WriterID() == l.WriterID() {
				t.Fatal("adopted a directory holding records")
			}
			if err := l2.ReleaseClaimed(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(l.Dir()); !os.IsNotExist(err) {
				t.Fatalf("claimed directory still there: %v", err)
			}
			l2.Close(true)
		})
	}
}

func TestReleaseAfterCommit(t *testing.T) {
	o := Options{Dir: t.TempDir()}
	l := mustOpen(t, o)
	appendAll(t, l, 1, "a", "b")
	tok, err := l.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, l, 3, "c")
	if err := l.Release(tok); err != nil {
		t.Fatal(err)
	}
	l.Close(false)
	l2 := mustOpen(t, o)
	defer l2.Close(true)
	if got := claimedBodies(l2); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("replayed %q, want only the record after the rotation", got)
	}
}

func TestWriterIDReuse(t *testing.T) {
	o := Options{Dir: t.TempDir()}
	l := mustOpen(t, o)
	appendAll(t, l, 1, "a")
	id := l.WriterID()
	if err := l.Close(true); err != nil {
		t.Fatal(err)
	}
	l2 := mustOpen(t, o)
	if l2.WriterID() != id {
		t.Fatalf("writer id %s, want reused %s", l2.WriterID(), id)
	}
	if len(l2.Claimed()) != 0 {
		t.Fatal("a clean close left records")
	}
	// A second concurrent writer cannot adopt the held directory.
	l3 := mustOpen(t, o)
	if l3.WriterID() == id {
		t.Fatal("two open writers share an id")
	}
	l2.Close(true)
	l3.Close(true)
	// Both idle directories exist now; an open adopts one of them.
	l4 := mustOpen(t, o)
	defer l4.Close(true)
	if l4.WriterID() != id && l4.WriterID() != l3.WriterID() {
		t.Fatalf("writer id %s reuses neither idle directory", l4.WriterID())
	}
}

func TestLockExclusionInProcess(t *testing.T) {
	o := Options{Dir: t.TempDir()}
	l := mustOpen(t, o)
	defer l.Close(true)
	appendAll(t, l, 1, "held")
	l2 := mustOpen(t, o)
	defer l2.Close(true)
	if len(l2.Claimed()) != 0 {
		t.Fatal("claimed the log of a running writer")
	}
	if _, err := (OSFS{}).Lock(filepath.Join(l.Dir(), lockName)); !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock: %v", err)
	}
}

func lastSegment(t *testing.T, dir string) string {
	t.Helper()
	segs, err := segments(OSFS{}, dir)
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments: %v %v", segs, err)
	}
	return filepath.Join(dir, segs[len(segs)-1])
}

func TestCorruptionNamesFile(t *testing.T) {
	t.Run("middle record", func(t *testing.T) {
		o := Options{Dir: t.TempDir()}
		l := mustOpen(t, o)
		appendAll(t, l, 1, "aaaa", "bbbb", "cccc")
		l.Close(false)
		seg := lastSegment(t, l.Dir())
		data, _ := os.ReadFile(seg)
		data[headerSize+9+1] ^= 0x55 // inside the first payload
		os.WriteFile(seg, data, 0o644)
		checkCorrupt(t, o, seg)
	})
	t.Run("earlier segment tail", func(t *testing.T) {
		o := Options{Dir: t.TempDir()}
		l := mustOpen(t, o)
		appendAll(t, l, 1, "aaaa")
		l.Rotate()
		appendAll(t, l, 2, "bbbb")
		l.Close(false)
		segs, _ := segments(OSFS{}, l.Dir())
		first := filepath.Join(l.Dir(), segs[0])
		f, _ := os.OpenFile(first, os.O_APPEND|os.O_WRONLY, 0)
		f.Write([]byte{1, 2, 3})
		f.Close()
		checkCorrupt(t, o, first)
	})
}

func checkCorrupt(t *testing.T, o Options, file string) {
	t.Helper()
	_, err := Open(uri, o)
	var ce *kv.CorruptionError
	if !errors.Is(err, kv.ErrCorruption) || !errors.As(err, &ce) || ce.File != file {
		t.Fatalf("open: %v; want corruption naming %s", err, file)
	}
	if !strings.Contains(err.Error(), file) {
		t.Fatalf("error %q does not name %s", err, file)
	}
}

func TestFailedAppendCutBack(t *testing.T) {
	for _, mode := range []SyncMode{SyncNone, SyncAlways} {
		t.Run(mode.String(), func(t *testing.T) {
			fsys := &faultFS{}
			o := Options{Dir: t.TempDir(), Mode: mode, FS: fsys}
			l := mustOpen(t, o)
			appendAll(t, l, 1, "a")
			fsys.failWrite = 1
			if err := l.Append(rec(2, "failed")); err == nil {
				t.Fatal("append succeeded")
			}
			if mode == SyncAlways {
				fsys.failSync = 1
				if err := l.Append(rec(3, "failed sync")); err == nil {
					t.Fatal("append with failed sync succeeded")
				}
			}
			appendAll(t, l, 4, "b")
			l.Close(false)
			l2 := mustOpen(t, Options{Dir: o.Dir})
			defer l2.Close(true)
			if got := claimedBodies(l2); !slices.Equal(got, []string{"a", "b"}) {
				t.Fatalf("replayed %q", got)
			}
		})
	}
}

func TestFailedCutMovesSegment(t *testing.T) {
	fsys := &faultFS{}
	o := Options{Dir: t.TempDir(), FS: fsys}
	l := mustOpen(t, o)
	appendAll(t, l, 1, "a")
	fsys.failWrite, fsys.failTrunc = 1, true
	if err := l.Append(rec(2, "failed")); err == nil {
		t.Fatal("append succeeded")
	}
	appendAll(t, l, 3, "b")
	if segs, _ := segments(OSFS{}, l.Dir()); len(segs) != 2 {
		t.Fatalf("segments %v, want a new one after the failed cut", segs)
	}
	l.Close(false)
	l2 := mustOpen(t, Options{Dir: o.Dir})
	defer l2.Close(true)
	if got := claimedBodies(l2); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("replayed %q", got)
	}
}

func TestBrokenUntilRotation(t *testing.T) {
	fsys := &faultFS{}
	o := Options{Dir: t.TempDir(), FS: fsys}
	l := mustOpen(t, o)
	appendAll(t, l, 1, "a")
	fsys.failWrite, fsys.failTrunc, fsys.failCreate = 1, true, true
	if err := l.Append(rec(2, "failed")); err == nil {
		t.Fatal("append succeeded")
	}
	if err := l.Append(rec(3, "refused")); !errors.Is(err, ErrBroken) {
		t.Fatalf("append on a broken log: %v", err)
	}
	if _, err := l.Rotate(); err == nil {
		t.Fatal("rotate succeeded while creates fail")
	}
	fsys.failCreate = false
	if _, err := l.Rotate(); err != nil {
		t.Fatal(err)
	}
	appendAll(t, l, 4, "b")
	l.Close(false)
	l2 := mustOpen(t, Options{Dir: o.Dir})
	defer l2.Close(true)
	if got := claimedBodies(l2); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("replayed %q", got)
	}
}

func TestReplayOrderAcrossWriters(t *testing.T) {
	o := Options{Dir: t.TempDir()}
	a := mustOpen(t, o)
	b := mustOpen(t, o)
	appendAll(t, a, 10, "a10")
	appendAll(t, b, 5, "b5")
	appendAll(t, a, 20, "a20")
	appendAll(t, b, 15, "b15", "b16")
	a.Close(false)
	b.Close(false)
	l := mustOpen(t, o)
	defer l.Close(true)
	if got := claimedBodies(l); !slices.Equal(got, []string{"b5", "a10", "b15", "b16", "a20"}) {
		t.Fatalf("replay order %q", got)
	}
	if len(l.Claimed()) != 2 {
		t.Fatalf("claimed %d logs", len(l.Claimed()))
	}
}

func TestDefaultRoot(t *testing.T) {
	d := t.TempDir()
	t.Setenv("KV0_WAL_DIR", d)
	dir, err := DatasetDir(uri, Options{})
	if err != nil || !strings.HasPrefix(dir, d) || len(filepath.Base(dir)) != 16 {
		t.Fatalf("dataset dir %q, %v", dir, err)
	}
	if dir2, _ := DatasetDir(uri+"x", Options{}); dir2 == dir {
		t.Fatal("two URIs share a directory")
	}
}

func TestSnapshotsFile(t *testing.T) {
	o := Options{Dir: t.TempDir()}
	s, err := OpenSnapshots(uri, o)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := s.LoadSnapshot(); b != nil || err != nil {
		t.Fatalf("empty store: %v %v", b, err)
	}
	if err := s.SaveSnapshot([]byte("junk")); !errors.Is(err, kv.ErrCorruption) {
		t.Fatalf("saving junk: %v", err)
	}
	// A stream that fails leaves the saved snapshot and no temporary file.
	if err := s.StreamSnapshot(func(w io.Writer) error {
		_, err := w.Write([]byte("first"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("encoder failed")
	if err := s.StreamSnapshot(func(w io.Writer) error {
		w.Write([]byte("half of the second"))
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("failed stream: %v", err)
	}
	if b, err := s.LoadSnapshot(); string(b) != "first" || err != nil {
		t.Fatalf("after a failed stream: %q %v", b, err)
	}
	ents, err := os.ReadDir(filepath.Dir(s.path))
	if err != nil || len(ents) != 1 {
		t.Fatalf("snapshot directory holds %v (%v), want the snapshot alone", ents, err)
	}
}

// TestHelperProcess is the child of the cross-process tests; it does
// nothing unless KV0_WAL_HELPER is set.
func TestHelperProcess(t *testing.T) {
	switch os.Getenv("KV0_WAL_HELPER") {
	case "hold":
		l, err := Open(uri, Options{Dir: os.Getenv("KV0_WAL_ROOT")})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		l.Append(rec(1, "child"))
		fmt.Println("ready", l.WriterID())
		io.ReadAll(os.Stdin) // hold the lock until the parent closes stdin or kills us
		os.Exit(0)
	case "crash":
		crashChild()
		os.Exit(0)
	}
}

func TestLockExclusionAcrossProcesses(t *testing.T) {
	root := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "KV0_WAL_HELPER=hold", "KV0_WAL_ROOT="+root)
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var line string
	buf := make([]byte, 256)
	n, _ := out.Read(buf)
	line = strings.TrimSpace(string(buf[:n]))
	childID, ok := strings.CutPrefix(line, "ready ")
	if !ok {
		t.Fatalf("child said %q", line)
	}
	l := mustOpenAt(t, root)
	if len(l.Claimed()) != 0 || l.WriterID() == childID {
		t.Fatal("claimed the log of a running process")
	}
	l.Close(true)
	cmd.Process.Kill()
	cmd.Wait()
	stdin.Close()
	l = mustOpenAt(t, root)
	defer l.Close(true)
	if got := claimedBodies(l); !slices.Equal(got, []string{"child"}) {
		t.Fatalf("after the child died: claimed %q", got)
	}
}

func mustOpenAt(t *testing.T, root string) *Log {
	t.Helper()
	l, err := Open(uri, Options{Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestSyncBatchDirty(t *testing.T) {
	l := mustOpen(t, Options{Dir: t.TempDir()})
	defer l.Close(true)
	appendAll(t, l, 1, "a")
	if !l.dirty {
		t.Fatal("batch append not marked for sync")
	}
	if err := l.Sync(); err != nil || l.dirty {
		t.Fatalf("sync: %v dirty=%v", err, l.dirty)
	}
	_ = time.Now
}

// Mapped segments (SyncNone and SyncBatch on Linux): records larger than
// the space left spill into a new segment, an earlier segment whose unused
// space was never cut off is not corruption, and everything replays in
// order.
func TestMappedSegments(t *testing.T) {
	if !canMap {
		t.Skip("no mapped segments on this platform")
	}
	for _, mode := range []SyncMode{SyncNone, SyncBatch} {
		t.Run(mode.String(), func(t *testing.T) {
			o := Options{Dir: t.TempDir(), Mode: mode}
			l := mustOpen(t, o)
			if l.mm == nil {
				t.Skip("file system cannot reserve space")
			}
			big := strings.Repeat("x", segMapSize-10)
			appendAll(t, l, 1, "a", big, "b", big, "c")
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			segs, _ := segments(OSFS{}, l.Dir())
			if len(segs) < 3 {
				t.Fatalf("%d segments, want spills", len(segs))
			}
			l.Close(false)
			// An earlier segment left at its reserved size.
			first := filepath.Join(l.Dir(), segs[0])
			f, _ := os.OpenFile(first, os.O_APPEND|os.O_WRONLY, 0)
			f.Write(make([]byte, 8192))
			f.Close()
			l2 := mustOpen(t, o)
			defer l2.Close(true)
			if got := claimedBodies(l2); !slices.Equal(got, []string{"a", big, "b", big, "c"}) {
				t.Fatalf("replayed %d records", len(got))
			}
		})
	}
}

// Sync runs its fsync without the log's lock: appends, rotations (which
// close segments a Sync may be using) and Close go on meanwhile, and every
// record still replays. Run with -race.
func TestSyncConcurrent(t *testing.T) {
	for _, mode := range []SyncMode{SyncBatch, SyncNone} {
		t.Run(mode.String(), func(t *testing.T) {
			o := Options{Dir: t.TempDir(), Mode: mode}
			l := mustOpen(t, o)
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					select {
					case <-stop:
						return
					default:
					}
					if err := l.Sync(); err != nil {
						t.Error(err)
						return
					}
				}
			}()
			var want []string
			for i := range 3000 {
				b := fmt.Sprint("r", i)
				appendAll(t, l, uint64(i+1), b)
				want = append(want, b)
				if i%500 == 499 {
					if _, err := l.Rotate(); err != nil {
						t.Fatal(err)
					}
				}
			}
			close(stop)
			<-done
			if err := l.Close(false); err != nil {
				t.Fatal(err)
			}
			l2 := mustOpen(t, o)
			defer l2.Close(true)
			if got := claimedBodies(l2); !slices.Equal(got, want) {
				t.Fatalf("replayed %d records, want %d", len(got), len(want))
			}
		})
	}
}

// Opens racing on one dataset never fail: a fresh writer directory is
// locked before any other Open can see it under a name it would adopt.
// flock locks belong to open file descriptions, so goroutines race as
// processes do (TestConcurrentOpens in native/kvdb races processes).
func TestConcurrentOpen(t *testing.T) {
	o := Options{Dir: t.TempDir(), Mode: SyncNone}
	for round := range 50 {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		start := make(chan struct{})
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				l, err := Open(uri, o)
				if err != nil {
					errs <- fmt.Errorf("round %d, opener %d: %w", round, g, err)
					return
				}
				if err := l.Append(rec(uint64(g+1), "x")); err != nil {
					errs <- err
				}
				if err := l.Close(true); err != nil {
					errs <- err
				}
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	// What is left is idle writer directories and nothing half-made.
	base, _ := DatasetDir(uri, o)
	ents, err := os.ReadDir(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), newPrefix) {
			t.Errorf("temporary directory %s left behind", e.Name())
		}
	}
}

// A writer killed while creating its directory leaves a temporary one; the
// next Open removes it (when no one holds its lock) and never adopts it.
func TestStaleNewDirectory(t *testing.T) {
	o := Options{Dir: t.TempDir()}
	base, _ := DatasetDir(uri, o)
	stale := filepath.Join(base, newPrefix+"00000000000000aa")
	held := filepath.Join(base, newPrefix+"00000000000000bb")
	empty := filepath.Join(base, newPrefix+"00000000000000cc")
	for _, d := range []string{stale, held, empty} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(stale, lockName), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	lk, err := (OSFS{}).Lock(filepath.Join(held, lockName))
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	l := mustOpen(t, o)
	defer l.Close(true)
	if strings.HasPrefix(filepath.Base(l.Dir()), newPrefix) || filepath.Dir(l.Dir()) != base {
		t.Fatalf("writer directory %s", l.Dir())
	}
	for _, d := range []string{stale, empty} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("stale %s not removed: %v", filepath.Base(d), err)
		}
	}
	if _, err := os.Stat(filepath.Join(held, lockName)); err != nil {
		t.Errorf("a directory being created was removed: %v", err)
	}
}
