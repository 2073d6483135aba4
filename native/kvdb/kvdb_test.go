package kvdb_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kv0/kv0/core/kv"
	"github.com/kv0/kv0/native/kvdb"
	"github.com/kv0/kv0/native/wal"
)

var flagCrashRounds = flag.Int("kvdb.crash-rounds", 50, "rounds of the SIGKILL crash test")

// TestMain turns the test binary into a child writer when asked to.
func TestMain(m *testing.M) {
	switch os.Getenv("KVDB_CHILD") {
	case "writer":
		childWriter()
		return
	case "crash":
		childCrash()
		return
	case "put":
		childPut()
		return
	case "walputs":
		childWALPuts()
		return
	}
	os.Exit(m.Run())
}

func quiet(walDir string) kvdb.Options {
	return kvdb.Options{WALDir: walDir, DB: kv.Options{FlushInterval: -1, RefreshInterval: -1}}
}

func dump(t *testing.T, db *kv.DB) map[string]string {
	t.Helper()
	it, err := db.NewIter(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	out := map[string]string{}
	for ok := it.First(); ok; ok = it.Next() {
		out[string(it.Key())] = string(it.Value())
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestReadOnlyAndTimeTravel(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "db.lance")
	walDir := t.TempDir()
	if _, err := kvdb.Open(ctx, dir, kvdb.Options{WALDir: walDir, DB: kv.Options{ReadOnly: true}}); !errors.Is(err, kvdb.ErrNoDatabase) {
		t.Fatalf("read-only open of nothing: %v", err)
	}
	db, err := kvdb.Open(ctx, dir, quiet(walDir))
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]map[string]string{}
	cur := map[string]string{}
	for round := range 6 {
		for i := range 20 {
			k := fmt.Sprintf("k%02d", (round*7+i)%30)
			v := fmt.Sprintf("r%d-%d", round, i)
			if i%5 == 4 {
				if err := db.Delete(ctx, []byte(k), nil); err != nil {
					t.Fatal(err)
				}
				delete(cur, k)
				continue
			}
			if err := db.Put(ctx, []byte(k), []byte(v), nil); err != nil {
				t.Fatal(err)
			}
			cur[k] = v
		}
		if round == 3 {
			if err := db.DeleteRange(ctx, []byte("k10"), []byte("k20"), nil); err != nil {
				t.Fatal(err)
			}
			for k := range cur {
				if k >= "k10" && k < "k20" {
					delete(cur, k)
				}
			}
		}
		if err := db.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		vs, err := db.Versions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want[vs[len(vs)-1].Version] = maps.Clone(cur)
	}
	if err := db.CompactRange(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	vs, _ := db.Versions(ctx)
	want[vs[len(vs)-1].Version] = maps.Clone(cur)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	for v, m := range want {
		tdb, err := kvdb.Open(ctx, dir, kvdb.Options{WALDir: walDir, DB: kv.Options{Version: v}})
		if err != nil {
			t.Fatalf("open version %d: %v", v, err)
		}
		got := dump(t, tdb)
		if fmt.Sprint(got) != fmt.Sprint(m) {
			t.Fatalf("version %d:\n got %v\nwant %v", v, got, m)
		}
		if err := tdb.Put(ctx, []byte("x"), []byte("y"), nil); !errors.Is(err, kv.ErrNotSupported) {
			t.Fatalf("put at version %d: %v", v, err)
		}
		tdb.Close()
	}
	ro, err := kvdb.Open(ctx, dir, kvdb.Options{WALDir: walDir, DB: kv.Options{ReadOnly: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for _, err := range []error{
		ro.Put(ctx, []byte("a"), []byte("b"), nil),
		ro.Delete(ctx, []byte("a"), nil),
		ro.DeleteRange(ctx, []byte("a"), []byte("b"), nil),
		ro.CompactRange(ctx, nil, nil),
		ro.Purge(ctx, true),
	} {
		if !errors.Is(err, kv.ErrNotSupported) {
			t.Fatalf("write on a read-only handle: %v", err)
		}
	}
	if got := dump(t, ro); fmt.Sprint(got) != fmt.Sprint(cur) {
		t.Fatalf("read-only handle: %v want %v", got, cur)
	}
	// No WAL directory was created for the read-only handles' use: the
	// only writer directory is the closed writer's.
	ents, _ := os.ReadDir(walDir)
	if len(ents) != 1 {
		t.Fatalf("WAL root holds %d dataset directories", len(ents))
	}
}

func TestMemoryLocation(t *testing.T) {
	ctx := context.Background()
	db, err := kvdb.Open(ctx, "memory://kvdb-test", quiet(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Put(ctx, []byte("a"), []byte("1"), &kv.WriteOptions{Sync: true}); err != nil {
		t.Fatal(err)
	}
	if v, err := db.Get(ctx, []byte("a")); err != nil || string(v) != "1" {
		t.Fatalf("get: %q %v", v, err)
	}
	// Another handle on the same name is another store: private, as the
	// design has it, and gone with its handle.
	other, err := kvdb.Open(ctx, "memory://kvdb-test", quiet(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if v, err := other.Get(ctx, []byte("a")); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("a second handle sees the first one's key: %q %v", v, err)
	}
	db.Close()
}

// A fresh database compacts (there is nothing to do) and works afterwards,
// on a folder and in memory.
func TestCompactEmpty(t *testing.T) {
	ctx := context.Background()
	for _, loc := range []string{filepath.Join(t.TempDir(), "empty.lance"), "memory://kvdb-compact-empty"} {
		db, err := kvdb.Open(ctx, loc, quiet(t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		if err := db.CompactRange(ctx, nil, nil); err != nil {
			t.Fatalf("%s: compact of an empty database: %v", loc, err)
		}
		if err := db.Put(ctx, []byte("a"), []byte("1"), &kv.WriteOptions{Sync: true}); err != nil {
			t.Fatal(err)
		}
		if err := db.CompactRange(ctx, nil, nil); err != nil {
			t.Fatalf("%s: compact: %v", loc, err)
		}
		if v, err := db.Get(ctx, []byte("a")); err != nil || string(v) != "1" {
			t.Fatalf("%s: get after compaction: %q %v", loc, v, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPurge(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "db.lance")
	opts := quiet(t.TempDir())
	db, err := kvdb.Open(ctx, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 10 {
		if err := db.Put(ctx, []byte(fmt.Sprintf("k%d", i)), []byte("secret"), &kv.WriteOptions{Sync: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := kvdb.Tag(ctx, dir, "before", 0, opts); err != nil {
		t.Fatal(err)
	}
	if err := db.Put(ctx, []byte("k0"), []byte("new"), &kv.WriteOptions{Sync: true}); err != nil {
		t.Fatal(err)
	}
	if err := kvdb.Tag(ctx, dir, "harmless", 0, opts); err != nil {
		t.Fatal(err)
	}
	// An overwritten key is not deleted: the tag is harmless so far.
	if err := db.Purge(ctx, false); err != nil {
		t.Fatalf("purge with harmless tags: %v", err)
	}
	if err := db.Delete(ctx, []byte("k3"), &kv.WriteOptions{Sync: true}); err != nil {
		t.Fatal(err)
	}
	err = db.Purge(ctx, false)
	var te *kv.TagError
	if !errors.As(err, &te) || !errors.Is(err, kv.ErrTagged) || string(te.Key) != "k3" {
		t.Fatalf("purge with a tag holding a deleted key: %v", err)
	}
	if !strings.Contains(err.Error(), `"before"`) && !strings.Contains(err.Error(), `"harmless"`) {
		t.Fatalf("error does not name the tag: %v", err)
	}
	if err := db.Purge(ctx, true); err != nil {
		t.Fatalf("forced purge: %v", err)
	}
	vs, err := db.Versions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 {
		t.Fatalf("after purge %d versions remain: %+v", len(vs), vs)
	}
	if _, err := db.Get(ctx, []byte("k3")); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("k3 after purge: %v", err)
	}
	if v, err := db.Get(ctx, []byte("k0")); err != nil || string(v) != "new" {
		t.Fatalf("k0 after purge: %q %v", v, err)
	}
}

// childWriter writes shared and own keys, flushing every few writes.
func childWriter() {
	ctx := context.Background()
	id := os.Getenv("KVDB_ID")
	n, _ := strconv.Atoi(os.Getenv("KVDB_N"))
	db, err := kvdb.Open(ctx, os.Getenv("KVDB_DIR"), kvdb.Options{WALDir: os.Getenv("KVDB_WAL"),
		DB: kv.Options{FlushInterval: -1, RefreshInterval: 5 * time.Millisecond, MaxFragments: 8}})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	for i := range n {
		b := db.NewBatch()
		b.Put([]byte(fmt.Sprintf("own-%s/%04d", id, i)), []byte(id))
		b.Put([]byte(fmt.Sprintf("shared/%03d", i%50)), []byte(fmt.Sprintf("%s-%d", id, i)))
		if err := db.Write(ctx, b, nil); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		if i%10 == 9 {
			if err := db.Flush(ctx); err != nil {
				fmt.Println("error", err)
				os.Exit(1)
			}
		}
	}
	if err := db.Close(); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("ok")
}

// TestTwoProcesses runs two writer processes on one database at once: one
// writes its own keys and both overwrite the same shared keys.
func TestTwoProcesses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db.lance")
	walDir := t.TempDir()
	const n = 200
	// Create the dataset first so both children append to it.
	db, err := kvdb.Open(context.Background(), dir, quiet(walDir))
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	var wg sync.WaitGroup
	outs := make([]string, 2)
	for c, id := range []string{"A", "B"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "KVDB_CHILD=writer", "KVDB_ID="+id, "KVDB_N="+strconv.Itoa(n), "KVDB_DIR="+dir, "KVDB_WAL="+walDir)
			out, err := cmd.CombinedOutput()
			outs[c] = string(out)
			if err != nil {
				outs[c] += err.Error()
			}
		}()
	}
	wg.Wait()
	for _, o := range outs {
		if strings.TrimSpace(o) != "ok" {
			t.Fatalf("child: %s", o)
		}
	}
	ro, err := kvdb.Open(context.Background(), dir, kvdb.Options{WALDir: walDir, DB: kv.Options{ReadOnly: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	got := dump(t, ro)
	for _, id := range []string{"A", "B"} {
		for i := range n {
			if got[fmt.Sprintf("own-%s/%04d", id, i)] != id {
				t.Fatalf("own key %s/%d missing", id, i)
			}
		}
	}
	// Each shared key holds the last value one of the writers gave it.
	for j := range 50 {
		k := fmt.Sprintf("shared/%03d", j)
		last := (n-1)/50*50 + j
		if last >= n {
			last -= 50
		}
		if v := got[k]; v != fmt.Sprintf("A-%d", last) && v != fmt.Sprintf("B-%d", last) {
			t.Fatalf("%s = %q, want A-%d or B-%d", k, v, last, last)
		}
	}
	if len(got) != 2*n+50 {
		t.Fatalf("%d keys, want %d", len(got), 2*n+50)
	}
	// A second reader agrees (the same newest-seq-wins outcome).
	ro2, err := kvdb.Open(context.Background(), dir, kvdb.Options{WALDir: walDir, DisableSnapshots: true, DB: kv.Options{ReadOnly: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer ro2.Close()
	if fmt.Sprint(dump(t, ro2)) != fmt.Sprint(got) {
		t.Fatal("two readers disagree")
	}
}

// childCrash writes until killed, printing one line per acknowledged call:
// "P key value", "D key", "B id n" (a batch of n puts of keys b<id>/<i>),
// and "I key" before it deletes key.
func childCrash() {
	ctx := context.Background()
	round, _ := strconv.Atoi(os.Getenv("KVDB_ROUND"))
	rng := rand.New(rand.NewPCG(uint64(round), 99))
	db, err := kvdb.Open(ctx, os.Getenv("KVDB_DIR"), kvdb.Options{WALDir: os.Getenv("KVDB_WAL"), WALMode: wal.SyncAlways,
		DB: kv.Options{FlushInterval: 20 * time.Millisecond, RefreshInterval: -1, MaxFragments: 6, LazyValueThreshold: 64, SnapshotMinEntries: 50}})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(w, "open")
	w.Flush()
	for i := 0; ; i++ {
		k := fmt.Sprintf("r%03d-%05d", round, i)
		switch r := rng.IntN(10); {
		case r < 6:
			v := fmt.Sprintf("v-%s", k)
			if i%7 == 0 {
				v = strings.Repeat(v, 10) // kept in the log, read lazily
			}
			if err := db.Put(ctx, []byte(k), []byte(v), &kv.WriteOptions{Sync: rng.IntN(15) == 0}); err != nil {
				fmt.Fprintln(w, "error", err)
				w.Flush()
				os.Exit(1)
			}
			fmt.Fprintln(w, "P", k, v)
		case r < 8:
			b := db.NewBatch()
			n := 2 + rng.IntN(4)
			for j := range n {
				b.Put([]byte(fmt.Sprintf("b%s/%d", k, j)), []byte("x"))
			}
			if err := db.Write(ctx, b, nil); err != nil {
				fmt.Fprintln(w, "error", err)
				w.Flush()
				os.Exit(1)
			}
			fmt.Fprintln(w, "B", k, n)
		default:
			// Delete a key put earlier in this round.
			dk := fmt.Sprintf("r%03d-%05d", round, rng.IntN(i+1))
			fmt.Fprintln(w, "I", dk)
			w.Flush()
			if err := db.Delete(ctx, []byte(dk), nil); err != nil {
				fmt.Fprintln(w, "error", err)
				w.Flush()
				os.Exit(1)
			}
			fmt.Fprintln(w, "D", dk)
		}
		w.Flush()
	}
}

// TestCrash kills a writer (WAL mode always) with SIGKILL at random moments
// and checks after each reopen: every acknowledged write is there, a batch
// is all or nothing, deleted keys stay deleted.
func TestCrash(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db.lance")
	walDir := t.TempDir()
	rounds := *flagCrashRounds
	if testing.Short() {
		rounds = 10
	}
	want := map[string]string{} // acknowledged state over all rounds
	rng := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "KVDB_CHILD=crash", "KVDB_ROUND="+strconv.Itoa(round), "KVDB_DIR="+dir, "KVDB_WAL="+walDir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		if !sc.Scan() || sc.Text() != "open" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: child did not open: %q", round, sc.Text())
		}
		timer := time.AfterFunc(time.Duration(5+rng.IntN(120))*time.Millisecond, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
		batches := map[string]int{}
		intent := ""
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch f[0] {
			case "P":
				want[f[1]] = f[2]
			case "I":
				intent = f[1]
			case "D":
				delete(want, f[1])
				intent = ""
			case "B":
				n, _ := strconv.Atoi(f[2])
				batches[f[1]] = n
				for j := range n {
					want[fmt.Sprintf("b%s/%d", f[1], j)] = "x"
				}
			case "error":
				t.Fatalf("round %d: child: %s", round, sc.Text())
			}
		}
		timer.Stop()
		_ = cmd.Wait()

		db, err := kvdb.Open(ctx, dir, kvdb.Options{WALDir: walDir, DB: kv.Options{FlushInterval: -1, RefreshInterval: -1, LazyValueThreshold: 64}})
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		got := dump(t, db)
		if _, ok := got[intent]; intent != "" && !ok {
			delete(want, intent) // the unacknowledged delete was logged
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("round %d: acknowledged %q=%.20q, found %.20q", round, k, v, got[k])
			}
		}
		// Unacknowledged writes may survive (the WAL logged them before the
		// kill), but a batch never in part.
		parts := map[string]int{}
		for k := range got {
			if strings.HasPrefix(k, "b") {
				parts[k[1:strings.IndexByte(k, '/')]]++
			}
		}
		for id, c := range parts {
			if n, ok := batches[id]; ok && c != n {
				t.Fatalf("round %d: batch %s has %d of %d keys", round, id, c, n)
			}
			if _, ok := batches[id]; !ok && c < 2 {
				t.Fatalf("round %d: unacknowledged batch %s has %d keys", round, id, c)
			}
		}
		// Adopt what survived so later rounds compare against it.
		for k := range got {
			if _, ok := want[k]; !ok {
				want[k] = got[k]
			}
		}
		for k := range want {
			if _, ok := got[k]; !ok {
				t.Fatalf("round %d: %q lost", round, k)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatalf("round %d: close: %v", round, err)
		}
	}
}

// childPut waits until its stdin closes (so that all the children of a
// round open at once), opens the database, puts one key and closes, as
// `kv0 kv put` does.
func childPut() {
	io.Copy(io.Discard, os.Stdin)
	ctx := context.Background()
	db, err := kvdb.Open(ctx, os.Getenv("KVDB_DIR"), kvdb.Options{WALDir: os.Getenv("KVDB_WAL")})
	if err == nil {
		err = db.Put(ctx, []byte(os.Getenv("KVDB_KEY")), []byte("v"), nil)
		if cerr := db.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("ok")
}

// TestConcurrentOpens starts 8 processes at once on a fresh database and a
// shared WAL root, 20 rounds: every one opens (creating its WAL folder
// while the others create, adopt and release theirs), puts its key and
// closes. None may fail, and every key is stored.
func TestConcurrentOpens(t *testing.T) {
	const procs, rounds = 8, 20
	walDir := t.TempDir()
	base := t.TempDir()
	for round := range rounds {
		dir := filepath.Join(base, fmt.Sprintf("db%02d.lance", round))
		cmds := make([]*exec.Cmd, procs)
		outs := make([]strings.Builder, procs)
		stdins := make([]io.WriteCloser, procs)
		for p := range procs {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "KVDB_CHILD=put", "KVDB_DIR="+dir, "KVDB_WAL="+walDir, fmt.Sprintf("KVDB_KEY=k%d", p))
			cmd.Stdout, cmd.Stderr = &outs[p], &outs[p]
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			cmds[p], stdins[p] = cmd, in
		}
		for _, in := range stdins {
			in.Close()
		}
		for p, cmd := range cmds {
			err := cmd.Wait()
			if got := strings.TrimSpace(outs[p].String()); err != nil || got != "ok" {
				t.Errorf("round %d, process %d: %v: %s", round, p, err, got)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
		ro, err := kvdb.Open(context.Background(), dir, kvdb.Options{WALDir: walDir, DB: kv.Options{ReadOnly: true}})
		if err != nil {
			t.Fatal(err)
		}
		got := dump(t, ro)
		ro.Close()
		if len(got) != procs {
			t.Fatalf("round %d: %d keys stored, want %d: %v", round, len(got), procs, got)
		}
	}
}

// childWALPuts opens the database, puts $KVDB_N keys without committing
// any (they are only in the write-ahead log), prints "done" and waits to
// be killed.
func childWALPuts() {
	ctx := context.Background()
	n, _ := strconv.Atoi(os.Getenv("KVDB_N"))
	db, err := kvdb.Open(ctx, os.Getenv("KVDB_DIR"), kvdb.Options{WALDir: os.Getenv("KVDB_WAL"),
		DB: kv.Options{FlushInterval: -1, RefreshInterval: -1, WriteBufferSize: 1 << 30}})
	for i := 0; err == nil && i < n; i++ {
		err = db.Put(ctx, []byte(fmt.Sprintf("k%04d", i)), []byte(fmt.Sprint(i)), nil)
	}
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("done")
	for {
		time.Sleep(time.Hour)
	}
}

// TestDamagedWAL: a killed writer leaves 300 acknowledged puts in its
// write-ahead log, and a byte of the log is changed (the checksum of the
// 200th record). A writable Open fails with an error matching
// wal.ErrCorrupt and kv.ErrCorruption that names the segment and the
// salvage command, a read-only Open still works, and after wal.Salvage a
// writable Open replays exactly the 199 puts before the damage.
func TestDamagedWAL(t *testing.T) {
	ctx := context.Background()
	dir, walDir := filepath.Join(t.TempDir(), "db.lance"), t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "KVDB_CHILD=walputs", "KVDB_DIR="+dir, "KVDB_WAL="+walDir, "KVDB_N=300")
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	done := sc.Scan() && sc.Text() == "done"
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if !done {
		t.Fatalf("writer: %q", sc.Text())
	}
	segs, _ := filepath.Glob(filepath.Join(walDir, "*", "*", "*.seg"))
	if len(segs) != 1 {
		t.Fatalf("segments %q", segs)
	}
	data, _ := os.ReadFile(segs[0])
	off := 0
	for range 199 {
		off += 12 + int(binary.LittleEndian.Uint32(data[off:]))
	}
	data[off+5] ^= 0x04 // the checksum of the 200th record
	os.WriteFile(segs[0], data, 0o644)

	_, err := kvdb.Open(ctx, dir, quiet(walDir))
	var ce *wal.CorruptError
	if !errors.Is(err, wal.ErrCorrupt) || !errors.Is(err, kv.ErrCorruption) || !errors.As(err, &ce) ||
		ce.Segment != segs[0] || ce.Offset != int64(off) || ce.Intact != 199 {
		t.Fatalf("writable open: %v", err)
	}
	if want := "kv0 wal salvage " + dir + " --wal-dir " + walDir; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not name %q", err, want)
	}
	ro, err := kvdb.Open(ctx, dir, kvdb.Options{WALDir: walDir, DB: kv.Options{ReadOnly: true}})
	if err != nil {
		t.Fatalf("read-only open: %v", err)
	}
	ro.Close()
	uri, _ := kvdb.URI(dir)
	if rep, err := wal.Salvage(uri, wal.Options{Dir: walDir}); err != nil || len(rep.Damaged) != 1 {
		t.Fatalf("salvage: %+v, %v", rep, err)
	}
	db, err := kvdb.Open(ctx, dir, quiet(walDir))
	if err != nil {
		t.Fatalf("open after the salvage: %v", err)
	}
	got := dump(t, db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 199 {
		t.Fatalf("%d keys after the salvage, want the 199 before the damage", len(got))
	}
	for i := range 199 {
		if k := fmt.Sprintf("k%04d", i); got[k] != fmt.Sprint(i) {
			t.Fatalf("%s = %q", k, got[k])
		}
	}
}
