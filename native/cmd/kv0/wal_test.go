package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kv0/kv0/core/kv"
	"github.com/kv0/kv0/native/kvdb"
	"github.com/kv0/kv0/native/location"
	"github.com/kv0/kv0/native/wal"
)

// walHelperEnv makes the test binary a key-value writer that is killed
// with its writes only in the write-ahead log (TestWALHelperKV).
const walHelperEnv = "KV0_WAL_HELPER"

// TestWALHelperKV is the child of the WAL tests, not a test on its own:
// it opens the database $KV0_WAL_HELPER_DB (WAL root $KV0_WAL_HELPER_WAL,
// batch mode, so mapped segments as kv0 kv and kv0.DB write them), puts
// $KV0_WAL_HELPER_N keys without committing any, prints "done" once every
// put has returned and waits to be killed.
func TestWALHelperKV(t *testing.T) {
	if os.Getenv(walHelperEnv) != "kv" {
		t.Skip("helper process only")
	}
	n, _ := strconv.Atoi(os.Getenv(walHelperEnv + "_N"))
	ctx := context.Background()
	db, err := kvdb.Open(ctx, os.Getenv(walHelperEnv+"_DB"), kvdb.Options{WALDir: os.Getenv(walHelperEnv + "_WAL"),
		DB: kv.Options{FlushInterval: -1, RefreshInterval: -1, WriteBufferSize: 1 << 30}})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	for i := range n {
		if err := db.Put(ctx, []byte(walKey(i)), []byte(walValue(i)), nil); err != nil {
			fmt.Println("error", err)
			os.Exit(3)
		}
	}
	fmt.Println("done")
	for {
		time.Sleep(time.Hour)
	}
}

func walKey(i int) string   { return fmt.Sprintf("k%05d", i) }
func walValue(i int) string { return fmt.Sprintf("value-%d", i*7) }

// killedKVWriter leaves n acknowledged puts to the database dir only in
// its write-ahead log under walDir, by killing (SIGKILL) the writer that
// made them, and returns the log's segment.
func killedKVWriter(t *testing.T, dir, walDir string, n int) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWALHelperKV$")
	cmd.Env = append(os.Environ(), walHelperEnv+"=kv", walHelperEnv+"_DB="+dir, walHelperEnv+"_WAL="+walDir,
		walHelperEnv+"_N="+strconv.Itoa(n))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	ok := sc.Scan() && sc.Text() == "done"
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if !ok {
		t.Fatalf("writer: %q", sc.Text())
	}
	uri, err := kvdb.URI(dir)
	if err != nil {
		t.Fatal(err)
	}
	return onlySegment(t, uri, walDir)
}

// onlySegment returns the one segment file of the log keyed by uri.
func onlySegment(t *testing.T, uri, walDir string) string {
	t.Helper()
	base, err := wal.DatasetDir(uri, wal.Options{Dir: walDir})
	if err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(base, "*", "*.seg"))
	if len(segs) != 1 {
		t.Fatalf("segments %q, want one", segs)
	}
	return segs[0]
}

// segmentRecords splits a segment into its records (framing: length u32,
// checksum u64, payload; a zero length ends the used part) and returns
// each record's start offset and payload.
func segmentRecords(t *testing.T, data []byte) ([]int, [][]byte) {
	t.Helper()
	var starts []int
	var payloads [][]byte
	for off := 0; off+12 <= len(data); {
		n := int(binary.LittleEndian.Uint32(data[off:]))
		if n == 0 {
			break
		}
		starts = append(starts, off)
		payloads = append(payloads, data[off+12:off+12+n])
		off += 12 + n
	}
	recs, bad, _ := wal.ReadSegment(data)
	if bad != -1 || len(recs) != len(payloads) {
		t.Fatalf("the pristine segment reads as %d records (bad at %d), framed as %d", len(recs), bad, len(payloads))
	}
	return starts, payloads
}

// snapshotTree returns every file under root (relative path -> contents;
// directories with a trailing slash).
func snapshotTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(path)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// restoreTree makes root hold exactly the files of tree.
func restoreTree(t *testing.T, root string, tree map[string]string) {
	t.Helper()
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	for _, rel := range slices.Sorted(func(yield func(string) bool) {
		for k := range tree {
			if !yield(k) {
				return
			}
		}
	}) {
		p := filepath.Join(root, rel)
		var err error
		if strings.HasSuffix(rel, "/") {
			err = os.MkdirAll(p, 0o755)
		} else {
			err = os.WriteFile(p, []byte(tree[rel]), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// damageCases are the bytes TestWALSalvage* change: for each record its
// boundary (the first byte of its length) and one byte inside it, in turn
// a higher length byte, a checksum byte, a payload byte and the last byte.
func damageCases(starts []int, end int) [][2]int {
	var out [][2]int
	for k, s := range starts {
		e := end
		if k+1 < len(starts) {
			e = starts[k+1]
		}
		inside := []int{s + 1, s + 6, s + 12 + (e-s-12)/2, e - 1}[k%4]
		out = append(out, [2]int{k, s}, [2]int{k, inside})
	}
	return out
}

// walReport runs kv0 wal SUB --json and returns its one report.
func walReport(t *testing.T, sub, loc string, extra ...string) (walJSON, int, string) {
	t.Helper()
	code, out, errOut := runCLI(append([]string{"wal", sub, loc, "--json"}, extra...)...)
	var rep walJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("kv0 wal %s --json: %v: %q (stderr %q)", sub, err, out, errOut)
	}
	return rep, code, errOut
}

// TestWALSalvageKV damages one byte of a key-value database's write-ahead
// log (a killed writer's acknowledged puts), at the boundary of every
// record and inside every record, and for each checks the recovery through
// the CLI: kv0 kv put fails naming the segment and kv0 wal salvage; kv0 wal
// check exits 1 naming the segment, the offset and the intact records;
// kv0 wal salvage moves the segment into damaged/ (byte for byte) and
// reports the bytes lost; the next kv0 kv put works and stores exactly the
// puts before the damage, each once; kv0 wal check is clean after.
func TestWALSalvageKV(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	for _, c := range []struct {
		name  string
		n     int
		cases func(starts []int, end int) [][2]int
	}{
		{"every record", 24, damageCases},
		// As many puts as a minute of a busy writer: the middle record's
		// boundary and a byte inside the last record.
		{"1500 puts", 1500, func(starts []int, end int) [][2]int {
			return [][2]int{{750, starts[750]}, {1499, end - 1}}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			dir, walDir := filepath.Join(base, "db.lance"), filepath.Join(base, "wal")
			seg := killedKVWriter(t, dir, walDir, c.n)
			data, _ := os.ReadFile(seg)
			starts, _ := segmentRecords(t, data)
			if len(starts) != c.n {
				t.Fatalf("%d records for %d puts", len(starts), c.n)
			}
			end := starts[c.n-1] + 12 + int(binary.LittleEndian.Uint32(data[starts[c.n-1]:]))
			dbTree, walTree := snapshotTree(t, dir), snapshotTree(t, walDir)
			salvage := "kv0 wal salvage " + dir + " --wal-dir " + walDir
			for i, dc := range c.cases(starts, end) {
				k, pos := dc[0], dc[1]
				mask := []byte{0xff, 0x01, 0x80, 0x20}[i%4]
				name := fmt.Sprintf("record %d, byte %d ^%#x", k, pos-starts[k], mask)
				restoreTree(t, dir, dbTree)
				restoreTree(t, walDir, walTree)
				damaged := slices.Clone(data)
				damaged[pos] ^= mask
				os.WriteFile(seg, damaged, 0o644)

				code, _, errOut := runCLI("kv", "put", dir, "after", "x", "--wal-dir", walDir)
				if code != 1 || !strings.Contains(errOut, seg) || !strings.Contains(errOut, salvage) {
					t.Fatalf("%s: kv put: exit %d, %q; want a failure naming %s and %q", name, code, errOut, seg, salvage)
				}
				code, out, errOut := runCLI("wal", "check", dir, "--wal-dir", walDir)
				if code != 1 || !strings.Contains(out, seg) || !strings.Contains(out, fmt.Sprintf("at offset %d", starts[k])) ||
					!strings.Contains(out, fmt.Sprintf("intact before it: %d record(s)", k)) || !strings.Contains(errOut, salvage) {
					t.Fatalf("%s: wal check: exit %d\n%s%s", name, code, out, errOut)
				}
				rep, _, _ := walReport(t, "check", dir, "--wal-dir", walDir)
				if rep.Kind != "key-value database" || len(rep.Damaged) != 1 || rep.Damaged[0].Segment != seg ||
					rep.Damaged[0].Offset != int64(starts[k]) || rep.Damaged[0].Intact != k {
					t.Fatalf("%s: wal check --json: %+v", name, rep)
				}
				lost := rep.Damaged[0].LostBytes
				if lost != int64(end-starts[k]) {
					t.Fatalf("%s: %d bytes reported lost, want the %d from the damaged record on", name, lost, end-starts[k])
				}
				code, out, errOut = runCLI("wal", "salvage", dir, "--wal-dir", walDir)
				moved := filepath.Join(filepath.Dir(filepath.Dir(seg)), "damaged", filepath.Base(filepath.Dir(seg)), filepath.Base(seg)+".damaged")
				if code != 0 || !strings.Contains(out, "moved aside: "+seg+" -> "+moved) ||
					!strings.Contains(out, fmt.Sprintf("lost: %d byte(s) from offset %d on", lost, starts[k])) ||
					!strings.Contains(out, fmt.Sprintf("kept: the %d record(s)", k)) {
					t.Fatalf("%s: wal salvage: exit %d\n%s%s", name, code, out, errOut)
				}
				if b, err := os.ReadFile(moved); err != nil || string(b) != string(damaged) {
					t.Fatalf("%s: the damaged segment was not kept byte for byte in %s: %v", name, moved, err)
				}
				if code, _, errOut := runCLI("kv", "put", dir, "after", "x", "--wal-dir", walDir); code != 0 {
					t.Fatalf("%s: kv put after the salvage: %s", name, errOut)
				}
				checkKVKeys(t, name, dir, walDir, k)
				if code, out, errOut := runCLI("wal", "check", dir, "--wal-dir", walDir); code != 0 || !strings.Contains(out, "no damage") ||
					!strings.Contains(out, "set aside by an earlier salvage: "+moved) {
					t.Fatalf("%s: wal check after the salvage: exit %d\n%s%s", name, code, out, errOut)
				}
			}
		})
	}
}

// checkKVKeys checks that the database at dir holds the first k puts of
// the killed writer and the key "after", each once in its operation log.
func checkKVKeys(t *testing.T, name, dir, walDir string, k int) {
	t.Helper()
	code, out, errOut := runCLI("kv", "scan", dir, "--wal-dir", walDir)
	if code != 0 {
		t.Fatalf("%s: kv scan: %s", name, errOut)
	}
	var want []string
	for i := range k {
		want = append(want, walKey(i)+"\t"+walValue(i))
	}
	want = append([]string{"after\tx"}, want...) // "after" sorts first
	if got := strings.Split(strings.TrimSpace(out), "\n"); !slices.Equal(got, want) {
		t.Fatalf("%s: kv scan holds %d keys, want the %d put before the damage and \"after\":\n%q", name, len(got), k, out)
	}
	// Each put once in the operation log: a replay that stored one twice
	// would show here, not in the scan.
	code, out, errOut = runCLI("lance", "cat", dir, "--columns", "key")
	if code != 0 {
		t.Fatalf("%s: lance cat: %s", name, errOut)
	}
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var row struct{ Key []byte } // a binary column: base64 in JSON
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%s: lance cat line %q: %v", name, line, err)
		}
		seen[string(row.Key)]++
	}
	for i := range k {
		if seen[walKey(i)] != 1 {
			t.Fatalf("%s: %s is %d times in the operation log", name, walKey(i), seen[walKey(i)])
		}
	}
}

// TestWALSalvageTrack is TestWALSalvageKV for a tracking repository: a
// killed kv0 track leaves its points in the log; for a changed byte at
// every record boundary and inside every record, kv0 track fails naming
// the segment and kv0 wal salvage, kv0 wal check exits 1, kv0 wal salvage
// recovers, and kv0 track --resume stores exactly the points of the
// records before the damage, each once.
func TestWALSalvageTrack(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	base := t.TempDir()
	repo, walDir := filepath.Join(base, "repo"), filepath.Join(base, "wal")
	env := []string{"KV0_WAL_DIR=" + walDir}
	t.Setenv("KV0_WAL_DIR", walDir) // for the commands run in-process
	p := startKV0(t, base, env, "track", repo, "--run", "killed", "--flush-interval", "1h")
	id := p.runID(t)
	const points = 8
	for s := range points {
		p.send(t, fmt.Sprintf(`{"name": "m", "value": %g, "step": %d}`+"\n", float64(s)*1.5, s))
	}
	p.send(t, `{"params": {"marker": 1}}`+"\n")
	waitWAL(t, walDir, "marker")
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t)

	key, err := location.RepoWALKey(repo)
	if err != nil {
		t.Fatal(err)
	}
	seg := onlySegment(t, key, walDir)
	data, _ := os.ReadFile(seg)
	starts, payloads := segmentRecords(t, data)
	// The steps of the points each record holds (core/tracking/wal.go:
	// kind 23 | seq | count u32 | count x 49-byte points, step at 8).
	stepsIn := make([][]int64, len(payloads))
	total := 0
	for i, pl := range payloads {
		if pl[0] != 23 {
			continue
		}
		n := int(binary.LittleEndian.Uint32(pl[9:]))
		for j := range n {
			pt := pl[13+49*j:]
			stepsIn[i] = append(stepsIn[i], int64(binary.LittleEndian.Uint64(pt[8:])))
			if v := math.Float64frombits(binary.LittleEndian.Uint64(pt[33:])); v != float64(stepsIn[i][len(stepsIn[i])-1])*1.5 {
				t.Fatalf("record %d: point value %g", i, v)
			}
			total++
		}
	}
	if total != points {
		t.Fatalf("%d points in the log, want %d", total, points)
	}
	t.Logf("records %d, steps %v", len(starts), stepsIn)
	end := starts[len(starts)-1] + 12 + len(payloads[len(payloads)-1])
	repoTree, walTree := snapshotTree(t, repo), snapshotTree(t, walDir)
	salvage := "kv0 wal salvage " + repo
	for i, dc := range damageCases(starts, end) {
		k, pos := dc[0], dc[1]
		mask := []byte{0xff, 0x01, 0x80, 0x20}[i%4]
		name := fmt.Sprintf("record %d, byte %d ^%#x", k, pos-starts[k], mask)
		restoreTree(t, repo, repoTree)
		restoreTree(t, walDir, walTree)
		damaged := slices.Clone(data)
		damaged[pos] ^= mask
		os.WriteFile(seg, damaged, 0o644)

		if _, errOut, code := runKV0(t, base, env, "", "track", repo, "--run", "other"); code != 1 ||
			!strings.Contains(errOut, seg) || !strings.Contains(errOut, salvage) {
			t.Fatalf("%s: kv0 track: exit %d, %q; want a failure naming %s and %q", name, code, errOut, seg, salvage)
		}
		rep, code, errOut := walReport(t, "check", repo)
		if code != 1 || !strings.Contains(errOut, salvage) || rep.Kind != "tracking repository" || len(rep.Damaged) != 1 ||
			rep.Damaged[0].Segment != seg || rep.Damaged[0].Offset != int64(starts[k]) || rep.Damaged[0].Intact != k {
			t.Fatalf("%s: wal check: exit %d, %+v, %s", name, code, rep, errOut)
		}
		if code, out, errOut := runCLI("wal", "salvage", repo); code != 0 || !strings.Contains(out, "moved aside: "+seg) {
			t.Fatalf("%s: wal salvage: exit %d\n%s%s", name, code, out, errOut)
		}
		if _, errOut, code := runKV0(t, base, env, "", "track", repo, "--resume", id, "--finish"); code != 0 {
			t.Fatalf("%s: kv0 track --resume after the salvage: exit %d: %s", name, code, errOut)
		}
		var want []int64
		for _, s := range stepsIn[:k] {
			want = append(want, s...)
		}
		if got := trackedSteps(t, repo, id); !slices.Equal(got, want) {
			t.Fatalf("%s: steps %v stored, want %v (the points before the damage, once each)", name, got, want)
		}
		if code, out, errOut := runCLI("wal", "check", repo); code != 0 || !strings.Contains(out, "no damage") {
			t.Fatalf("%s: wal check after the salvage: exit %d\n%s%s", name, code, out, errOut)
		}
	}
}

// trackedSteps returns the steps of series m of run id, checking each
// value.
func trackedSteps(t *testing.T, repo, id string) []int64 {
	t.Helper()
	code, out, errOut := runCLI("metrics", repo, id, "m", "--csv")
	if code != 0 {
		if strings.Contains(errOut, "no series") || strings.Contains(errOut, "not found") {
			return nil
		}
		t.Fatalf("kv0 metrics: %s", errOut)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var steps []int64
	for _, r := range rows[1:] { // name,context,step,epoch,timestamp,value
		s, _ := strconv.ParseInt(r[2], 10, 64)
		if v, _ := strconv.ParseFloat(r[5], 64); v != float64(s)*1.5 {
			t.Fatalf("step %d holds %s", s, r[5])
		}
		steps = append(steps, s)
	}
	return steps
}

// TestWALCheckHealthyAndTorn: on a killed writer's healthy log, kv0 wal
// check exits 0 and kv0 wal salvage changes no file; with a torn tail (the
// last append cut short: the file ends inside it, or its checksum, stored
// last in a mapped segment, is still zero) the same holds, check reports
// the torn tail, and the next kv0 kv put keeps every put before it.
func TestWALCheckHealthyAndTorn(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	base := t.TempDir()
	dir, walDir := filepath.Join(base, "db.lance"), filepath.Join(base, "wal")
	const n = 30
	seg := killedKVWriter(t, dir, walDir, n)
	data, _ := os.ReadFile(seg)
	starts, _ := segmentRecords(t, data)
	last := starts[n-1]
	dbTree, walTree := snapshotTree(t, dir), snapshotTree(t, walDir)
	for _, c := range []struct {
		name string
		tear func() []byte
		kept int
	}{
		{"healthy", func() []byte { return data }, n},
		{"file ends inside the last record", func() []byte { return data[:last+20] }, n - 1},
		{"mapped append without its checksum", func() []byte {
			d := slices.Clone(data)
			clear(d[last+4 : last+12])
			return d
		}, n - 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			restoreTree(t, dir, dbTree)
			restoreTree(t, walDir, walTree)
			os.WriteFile(seg, c.tear(), 0o644)
			before := snapshotTree(t, walDir)
			rep, code, errOut := walReport(t, "check", dir, "--wal-dir", walDir)
			if code != 0 || len(rep.Damaged) != 0 || rep.Records != c.kept {
				t.Fatalf("check: exit %d, %+v, %s", code, rep, errOut)
			}
			if torn := c.kept < n; torn != (len(rep.Torn) == 1) || torn && rep.Torn[0].Offset != int64(last) {
				t.Fatalf("check reports torn tails %+v", rep.Torn)
			}
			if code, out, errOut := runCLI("wal", "salvage", dir, "--wal-dir", walDir); code != 0 || !strings.Contains(out, "no damage: nothing changed") {
				t.Fatalf("salvage: exit %d\n%s%s", code, out, errOut)
			}
			after := snapshotTree(t, walDir)
			if len(after) != len(before) {
				t.Fatalf("salvage changed the files: %d before, %d after", len(before), len(after))
			}
			for k, v := range before {
				if after[k] != v {
					t.Fatalf("salvage changed %s", k)
				}
			}
			if code, _, errOut := runCLI("kv", "put", dir, "after", "x", "--wal-dir", walDir); code != 0 {
				t.Fatalf("kv put: %s", errOut)
			}
			checkKVKeys(t, c.name, dir, walDir, c.kept)
		})
	}
}
