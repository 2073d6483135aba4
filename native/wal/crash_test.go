package wal

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kv0/kv0/core/kv"
	"github.com/kv0/kv0/core/kv/kvtest"
	"github.com/kv0/kv0/native/fsstore"
)

var (
	flagCrashRounds = flag.Int("wal.crash-rounds", 50, "rounds of the SIGKILL crash test")
	flagCrashSeed   = flag.Uint64("wal.crash-seed", 0, "seed of the crash test (0: fixed CI seed 1)")
)

const crashURI = "file:///crash/db.lance"

// crashMode is the WAL mode of a crash round: odd rounds log in SyncNone
// mode (mapped segments, every store in the page cache at once), even ones
// in SyncAlways mode (write(2) and fsync); each round replays what the
// previous one left.
func crashMode(round int) SyncMode {
	if round%2 == 1 {
		return SyncNone
	}
	return SyncAlways
}

func openCrashDB(dataDir, root string, mode SyncMode) (*kv.DB, *kvtest.Log, error) {
	st, err := fsstore.Open(dataDir)
	if err != nil {
		return nil, nil, err
	}
	log := kvtest.NewLog(st, "", nil)
	w, err := Open(crashURI, Options{Dir: root, Mode: mode})
	if err != nil {
		return nil, nil, err
	}
	db, err := kv.Open(context.Background(), log, &kv.Options{
		WAL:                w,
		MaxFragments:       4,
		FlushInterval:      30 * time.Millisecond,
		RefreshInterval:    -1,
		LazyValueThreshold: 64,
	})
	return db, log, err
}

func crashValue(key string) []byte {
	v := "value-of-" + key
	if strings.HasSuffix(key, "7") {
		v = strings.Repeat(v, 8) // above the lazy threshold
	}
	return []byte(v)
}

// crashChild writes until it is killed, printing one line per call after
// it returns: "P key", "B id n", "I key" (before a delete), "D key".
func crashChild() {
	round, _ := strconv.Atoi(os.Getenv("KV0_CRASH_ROUND"))
	seed, _ := strconv.ParseUint(os.Getenv("KV0_CRASH_SEED"), 10, 64)
	rng := rand.New(rand.NewPCG(seed, uint64(round)))
	db, _, err := openCrashDB(os.Getenv("KV0_CRASH_DATA"), os.Getenv("KV0_WAL_ROOT"), crashMode(round))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("open")
	ctx := context.Background()
	var puts []string
	for i := 0; ; i++ {
		switch r := rng.IntN(100); {
		case r < 50:
			k := fmt.Sprintf("r%03d-p%05d", round, i)
			if err := db.Put(ctx, []byte(k), crashValue(k), &kv.WriteOptions{Sync: rng.IntN(20) == 0}); err != nil {
				fmt.Println("error", err)
				os.Exit(1)
			}
			fmt.Println("P", k)
			puts = append(puts, k)
		case r < 75:
			n := 2 + rng.IntN(5)
			b := db.NewBatch()
			for j := range n {
				k := fmt.Sprintf("r%03d-b%05d-%d-of-%d", round, i, j, n)
				b.Put([]byte(k), crashValue(k))
			}
			if err := db.Write(ctx, b, nil); err != nil {
				fmt.Println("error", err)
				os.Exit(1)
			}
			fmt.Printf("B r%03d-b%05d %d\n", round, i, n)
		case r < 90 && len(puts) > 0:
			k := puts[rng.IntN(len(puts))]
			fmt.Println("I", k)
			if err := db.Delete(ctx, []byte(k), nil); err != nil {
				fmt.Println("error", err)
				os.Exit(1)
			}
			fmt.Println("D", k)
		default:
			if err := db.Flush(ctx); err != nil {
				fmt.Println("error", err)
				os.Exit(1)
			}
		}
	}
}

func TestCrash(t *testing.T) {
	rounds := *flagCrashRounds
	seed := *flagCrashSeed
	if seed == 0 {
		seed = 1
	}
	t.Logf("crash test: %d rounds, seed %d (-wal.crash-rounds, -wal.crash-seed)", rounds, seed)
	rng := rand.New(rand.NewPCG(seed, 99))
	dataDir, root := t.TempDir(), t.TempDir()
	present := map[string]bool{} // keys that must hold their value
	absent := map[string]bool{}  // keys that must be missing
	ctx := context.Background()
	acked := 0
	defer func() {
		t.Logf("%d acknowledged writes checked; %d keys live, %d deleted", acked, len(present), len(absent))
	}()
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
		cmd.Env = append(os.Environ(), "KV0_WAL_HELPER=crash", "KV0_WAL_ROOT="+root, "KV0_CRASH_DATA="+dataDir,
			"KV0_CRASH_ROUND="+strconv.Itoa(round), "KV0_CRASH_SEED="+strconv.FormatUint(seed, 10))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1<<16)
		done := make(chan struct{})
		go func() {
			defer close(done)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		if rng.IntN(10) != 0 { // sometimes kill during open
			select {
			case l := <-lines:
				if l != "open" {
					t.Fatalf("round %d: child said %q", round, l)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d: child did not open", round)
			}
		}
		time.Sleep(time.Duration(rng.IntN(60_000)) * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
		cmd.Wait()
		close(lines)
		// bufio.Scanner returns a final unterminated line too; a line cut by
		// the kill could only be a prefix, which no check below matches.
		batches := map[string]int{}
		for l := range lines {
			f := strings.Fields(l)
			if len(f) < 2 {
				continue
			}
			if f[0] != "I" {
				acked++
			}
			switch f[0] {
			case "error":
				t.Fatalf("round %d: child failed: %s", round, l)
			case "P":
				present[f[1]] = true
			case "I":
				delete(present, f[1])
			case "D":
				absent[f[1]] = true
			case "B":
				if len(f) == 3 {
					n, _ := strconv.Atoi(f[2])
					batches[f[1]] = n
				}
			}
		}
		db, log, err := openCrashDB(dataDir, root, crashMode(round+1))
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		for k := range present {
			v, err := db.Get(ctx, []byte(k))
			if err != nil || string(v) != string(crashValue(k)) {
				t.Fatalf("round %d: acknowledged %s: %q, %v", round, k, v, err)
			}
		}
		for k := range absent {
			if _, err := db.Get(ctx, []byte(k)); !errors.Is(err, kv.ErrNotFound) {
				t.Fatalf("round %d: acknowledged delete of %s: %v", round, k, err)
			}
		}
		// Batches: all or nothing, and every acknowledged one whole.
		counts := map[string]int{}
		want := map[string]int{}
		it, _ := db.NewIter(ctx, nil)
		for ok := it.First(); ok; ok = it.Next() {
			k := string(it.Key())
			if i := strings.Index(k, "-of-"); i > 0 {
				id := k[:strings.LastIndex(k[:i], "-")]
				counts[id]++
				want[id], _ = strconv.Atoi(k[i+4:])
				if string(it.Value()) != string(crashValue(k)) {
					t.Fatalf("round %d: %s holds %q", round, k, it.Value())
				}
			}
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		for id, n := range counts {
			if n != want[id] {
				t.Fatalf("round %d: batch %s partly stored: %d of %d keys", round, id, n, want[id])
			}
		}
		for id, n := range batches {
			if counts[id] != n {
				t.Fatalf("round %d: acknowledged batch %s has %d of %d keys", round, id, counts[id], n)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatalf("round %d: close: %v", round, err)
		}
		// Nothing stored twice: every sequence number appears once.
		rows, err := log.AllRows(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[uint64]string{}
		for _, r := range rows {
			if r.Op == kv.OpMark {
				continue
			}
			if k, dup := seen[r.Seq]; dup {
				t.Fatalf("round %d: seq %d stored twice (%s, %s)", round, r.Seq, k, r.Key)
			}
			seen[r.Seq] = string(r.Key)
		}
	}
}
