// Package interop checks kv0 against lancedb 0.31.0 (lance 8.0.0) and
// lancedb 0.39.0 (lance 12.0.0): gen.mjs writes datasets with lancedb and
// records, for every version, the rows that lancedb reads in kv0's
// canonical JSON Lines; the tests run the kv0 binary on the same datasets
// and compare byte for byte. The other tests have kv0 write and lancedb
// read, change and compact what kv0 wrote, and kv0 read it again.
package interop

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kv0/kv0/core/lance"
)

// lanceInstall is one pinned lancedb the suite runs against: a folder with
// a package.json and a package-lock.json, where npm ci installs it. The
// scripts load it through lancedb.mjs, told by KV0_LANCEDB which folder.
type lanceInstall struct {
	name    string // lance8, lance12: subtest names, KV0_INTEROP_DATA subfolders
	dir     string // the folder, relative to this one
	lancedb string // the @lancedb/lancedb release its lock pins

	// Set up once by TestMain.
	setupErr error  // why its tests cannot run (a failure)
	skipWhy  string // why its tests are skipped (outside CI only)
	dataDir  string // gen.mjs's datasets and expectations
}

// installs are the lancedb releases every test runs against.
var installs = []*lanceInstall{
	{name: "lance8", dir: ".", lancedb: "0.31.0"},
	{name: "lance12", dir: "lance12", lancedb: "0.39.0"},
}

// formats are the data file formats kv0 writes in the tests that have an
// install read kv0's datasets, each test checking that kv0 wrote that
// format: lance 8 reads 2.1 only (its 2.2 was unstable); lance 12 gets
// kv0's default, 2.2 (kv0's 2.1 files are lance 8's to check).
func (in *lanceInstall) formats() []string {
	if in.name == "lance8" {
		return []string{lance.DataFormat21}
	}
	return []string{lance.DataFormat22}
}

// Set up once by TestMain.
var (
	buildErr  error  // the kv0 binary could not be built
	node      string // the node command, when found
	kv0Binary string // path of the built kv0 command
)

func inCI() bool { return os.Getenv("CI") == "true" }

func TestMain(m *testing.M) {
	flag.Parse() // testing.Short is read in setup
	tmp, err := os.MkdirTemp("", "kv0-interop-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	setup()
	if b := os.Getenv("KV0_BINARY"); b != "" {
		kv0Binary = b // a prebuilt binary, e.g. while the tree does not build
	} else {
		kv0Binary = filepath.Join(tmp, "kv0")
		build := exec.Command("go", "build", "-o", kv0Binary, "./native/cmd/kv0")
		build.Dir = filepath.Join("..", "..")
		if out, err := build.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./native/cmd/kv0: %v\n%s", err, out)
		}
	}
	code := m.Run()
	os.RemoveAll(tmp)
	os.Exit(code)
}

// setup installs each lancedb (npm ci) when it is missing and generates (or
// reuses) its interop data, the installs concurrently.
func setup() {
	if testing.Short() {
		for _, in := range installs {
			in.skipWhy = "-short: skipping the lancedb interop suite"
		}
		return
	}
	nodePath, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		for _, in := range installs {
			if inCI() {
				in.setupErr = fmt.Errorf("CI=true but node or npm is missing (node: %v, npm: %v)", errNode, errNpm)
			} else {
				in.skipWhy = "node or npm not found: skipping the lancedb interop suite (it fails instead when CI=true)"
			}
		}
		return
	}
	node = nodePath
	var keep []string // the .data folders of this generator
	var wg sync.WaitGroup
	for _, in := range installs {
		if _, err := os.Stat(filepath.Join(in.dir, "node_modules", "@lancedb", "lancedb")); err != nil {
			cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund")
			cmd.Dir = in.dir
			if out, err := cmd.CombinedOutput(); err != nil {
				in.setupErr = fmt.Errorf("npm ci in %s: %v\n%s", in.dir, err, out)
				continue
			}
		}
		key, err := in.dataKey()
		if err != nil {
			in.setupErr = err
			continue
		}
		keep = append(keep, key)
		wg.Add(1)
		go func() {
			defer wg.Done()
			in.dataDir, in.setupErr = in.generate(key)
		}()
	}
	wg.Wait()
	dropOldData(keep)
}

// dataKey names the .data folder of the install's generated data: a hash
// of the generator, the scripts it loads and the install's lock.
func (in *lanceInstall) dataKey() (string, error) {
	h := sha256.New()
	for _, f := range []string{"gen.mjs", "jsonl.mjs", "lancedb.mjs", filepath.Join(in.dir, "package-lock.json")} {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	return in.name + "-" + hex.EncodeToString(h.Sum(nil))[:16], nil
}

// generate runs gen.mjs into .data/<key>, unless a complete run is
// already there, and returns the folder.
func (in *lanceInstall) generate(key string) (string, error) {
	if d := os.Getenv("KV0_INTEROP_DATA"); d != "" {
		// An explicit folder (one subfolder per install), reused as it is
		// when complete.
		d = filepath.Join(d, in.name)
		if _, err := os.Stat(filepath.Join(d, "done.json")); err == nil {
			return d, nil
		}
		return d, in.runGen(d)
	}
	dir := filepath.Join(".data", key)
	if _, err := os.Stat(filepath.Join(dir, "done.json")); err == nil {
		return dir, nil
	}
	// Several test processes may share the checkout: generate into a private
	// folder and rename it into place; the first complete one wins.
	if err := os.MkdirAll(".data", 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(".data", key+".tmp-")
	if err != nil {
		return "", err
	}
	if err := in.runGen(tmp); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		if _, serr := os.Stat(filepath.Join(dir, "done.json")); serr != nil {
			return "", err
		}
	}
	return dir, nil
}

// dropOldData removes the data of other generator versions from .data (it
// is a cache) unless it was touched in the last hour: another process may
// still be using or writing it.
func dropOldData(keep []string) {
	entries, err := os.ReadDir(".data")
	if err != nil {
		return
	}
	for _, e := range entries {
		if slices.Contains(keep, e.Name()) {
			continue
		}
		if info, err := e.Info(); err != nil || time.Since(info.ModTime()) < time.Hour {
			continue
		}
		os.RemoveAll(filepath.Join(".data", e.Name()))
	}
}

func (in *lanceInstall) runGen(dir string) error {
	cmd := in.command("gen.mjs", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("KV0_LANCEDB=%s node gen.mjs %s: %v\n%s", in.dir, dir, err, tail(stderr.String(), 4000))
	}
	return nil
}

// command runs one of this folder's scripts with node against the
// install's lancedb.
func (in *lanceInstall) command(script string, args ...string) *exec.Cmd {
	cmd := exec.Command(node, append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), "KV0_LANCEDB="+in.dir, "RUST_LOG=error")
	return cmd
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// forEachInstall runs f as a subtest per lancedb install, failing or
// skipping those whose setup failed or was skipped.
func forEachInstall(t *testing.T, f func(t *testing.T, in *lanceInstall)) {
	for _, in := range installs {
		t.Run(in.name, func(t *testing.T) {
			requireInstall(t, in)
			f(t, in)
		})
	}
}

// forEachFormat runs f as a subtest per data file format kv0 writes.
func forEachFormat(t *testing.T, in *lanceInstall, f func(t *testing.T, format string)) {
	for _, format := range in.formats() {
		t.Run("kv0_"+format, func(t *testing.T) { f(t, format) })
	}
}

// requireInstall fails or skips t when the install could not be set up.
func requireInstall(t *testing.T, in *lanceInstall) {
	t.Helper()
	requireBinary(t)
	if in.setupErr != nil {
		t.Fatal(in.setupErr)
	}
	if in.skipWhy != "" {
		t.Skip(in.skipWhy)
	}
}

// requireBinary fails t when kv0 could not be built.
func requireBinary(t *testing.T) {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
}

// kv0 runs the binary and returns stdout; a non-zero exit is an error that
// carries stderr.
func kv0(args ...string) ([]byte, error) {
	cmd := exec.Command(kv0Binary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.Bytes(), fmt.Errorf("kv0 %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(tail(stderr.String(), 2000)))
	}
	return stdout.Bytes(), nil
}

type versionRow struct {
	Version uint64 `json:"version"`
	Rows    uint64 `json:"rows"`
}

type logEntry struct {
	Version          uint64   `json:"version"`
	Timestamp        string   `json:"timestamp"`
	Operation        string   `json:"operation"`
	RowsAdded        uint64   `json:"rows_added"`
	RowsRemoved      uint64   `json:"rows_removed"`
	FragmentsAdded   int      `json:"fragments_added"`
	FragmentsRemoved int      `json:"fragments_removed"`
	Predicate        string   `json:"predicate"`
	Tags             []string `json:"tags"`
	Rows             uint64   `json:"rows"`
}

type infoOut struct {
	Version    uint64 `json:"version"`
	Rows       uint64 `json:"rows"`
	DataFormat string `json:"data_format"`
}

func readJSON(t *testing.T, path string, v any) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return true
}

// TestLanceToGo compares kv0 lance cat with lancedb's reads, for every
// lancedb, case and version, and checks info, log and tags on the way.
func TestLanceToGo(t *testing.T) {
	forEachInstall(t, testLanceToGo)
}

func testLanceToGo(t *testing.T, in *lanceInstall) {
	var done struct {
		Lancedb string   `json:"lancedb"`
		Cases   []string `json:"cases"`
	}
	readJSON(t, filepath.Join(in.dataDir, "done.json"), &done)
	if len(done.Cases) == 0 {
		t.Fatal("gen.mjs produced no cases")
	}
	if done.Lancedb != in.lancedb {
		t.Fatalf("%s was generated by lancedb %s, want %s", in.dataDir, done.Lancedb, in.lancedb)
	}
	for _, name := range done.Cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root := filepath.Join(in.dataDir, name)
			ds := filepath.Join(root, "t.lance")
			exp := filepath.Join(root, "expected")
			var versions []versionRow
			readJSON(t, filepath.Join(exp, "versions.json"), &versions)
			tags := map[string]uint64{}
			readJSON(t, filepath.Join(exp, "tags.json"), &tags)

			t.Run("log", func(t *testing.T) {
				out, err := kv0("lance", "log", ds, "--json")
				if err != nil {
					t.Fatal(err)
				}
				var log []logEntry
				if err := json.Unmarshal(out, &log); err != nil {
					t.Fatalf("log --json: %v\n%s", err, tail(string(out), 500))
				}
				var got, want []uint64
				for _, e := range log {
					got = append(got, e.Version)
				}
				for _, v := range versions {
					want = append(want, v.Version)
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("log versions = %v, want %v", got, want)
				}
				rows := map[uint64]uint64{}
				for _, v := range versions {
					rows[v.Version] = v.Rows
				}
				for _, e := range log {
					if want, ok := rows[e.Version]; ok && e.Rows != want {
						t.Errorf("log: version %d has %d rows, want %d", e.Version, e.Rows, want)
					}
				}
				gotTags := map[string]uint64{}
				for _, e := range log {
					for _, tag := range e.Tags {
						gotTags[tag] = e.Version
					}
					if e.Operation == "Unknown" {
						t.Errorf("log: kv0 does not know the operation of version %d", e.Version)
					}
				}
				if fmt.Sprint(gotTags) != fmt.Sprint(tags) {
					t.Errorf("log tags = %v, want %v", gotTags, tags)
				}
			})
			diagnosed := false // per-column diagnosis runs once per case
			for _, v := range versions {
				t.Run("v"+strconv.FormatUint(v.Version, 10), func(t *testing.T) {
					vs := strconv.FormatUint(v.Version, 10)
					out, err := kv0("lance", "info", ds, "--version", vs, "--json")
					if err != nil {
						t.Error(err)
					} else {
						var info infoOut
						if err := json.Unmarshal(out, &info); err != nil {
							t.Errorf("info --json: %v", err)
						} else if info.Version != v.Version || info.Rows != v.Rows {
							t.Errorf("info: version %d rows %d, want version %d rows %d", info.Version, info.Rows, v.Version, v.Rows)
						}
					}
					want := filepath.Join(exp, "v"+vs+".jsonl")
					if !compareCat(t, want, "lance", "cat", ds, "--version", vs) && !diagnosed {
						diagnosed = true
						diagnoseColumns(t, want, ds, "--version", vs)
					}
				})
			}
			for tag, v := range tags {
				t.Run("tag_"+tag, func(t *testing.T) {
					_ = compareCat(t, filepath.Join(exp, fmt.Sprintf("v%d.jsonl", v)), "lance", "cat", "--tag", tag, ds)
				})
			}
		})
	}
}

// compareCat runs kv0 with args and compares its output with the file want.
// It reports whether they matched.
func compareCat(t *testing.T, want string, args ...string) bool {
	t.Helper()
	exp, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := kv0(args...)
	if err != nil {
		t.Error(err)
		return false
	}
	if bytes.Equal(got, exp) {
		return true
	}
	t.Error(describeMismatch(got, exp))
	return false
}

// diagnoseColumns reads each column of a failing version on its own and
// logs which columns fail and how, so that one broken column does not hide
// the state of the others.
func diagnoseColumns(t *testing.T, want, ds string, args ...string) {
	t.Helper()
	exp, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	lines := splitLines(exp)
	if len(lines) == 0 {
		return
	}
	keys, _, err := rawObject(lines[0])
	if err != nil {
		return
	}
	var ok, bad []string
	var report strings.Builder
	for _, k := range keys {
		var w bytes.Buffer
		kj, _ := json.Marshal(k)
		for _, line := range lines {
			_, vals, err := rawObject(line)
			if err != nil {
				t.Fatalf("expected line does not parse: %v", err)
			}
			fmt.Fprintf(&w, "{%s:%s}\n", kj, vals[k])
		}
		got, err := kv0(append([]string{"lance", "cat", ds, "--columns", k}, args...)...)
		switch {
		case err != nil:
			bad = append(bad, k)
			fmt.Fprintf(&report, "column %s: %v\n", k, err)
		case !bytes.Equal(got, w.Bytes()):
			bad = append(bad, k)
			fmt.Fprintf(&report, "column %s: %s", k, describeMismatch(got, w.Bytes()))
		default:
			ok = append(ok, k)
		}
	}
	t.Logf("per-column diagnosis: %d columns read correctly, %d fail: %v\n%s", len(ok), len(bad), bad, report.String())
}

// describeMismatch explains the first differing line: its number, the
// differing keys with both values, and the line counts.
func describeMismatch(got, want []byte) string {
	gl := splitLines(got)
	wl := splitLines(want)
	var b strings.Builder
	fmt.Fprintf(&b, "output differs: %d lines, want %d\n", len(gl), len(wl))
	for i := 0; i < len(gl) || i < len(wl); i++ {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g == w {
			continue
		}
		fmt.Fprintf(&b, "first difference at line %d (row %d)\n", i+1, i)
		diffKeys(&b, g, w)
		break
	}
	return b.String()
}

func splitLines(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// diffKeys lists the top-level keys whose raw JSON differs between two
// lines, in order; lines that do not parse are shown whole (abridged).
func diffKeys(b *strings.Builder, got, want string) {
	gk, gv, gerr := rawObject(got)
	wk, wv, werr := rawObject(want)
	if gerr != nil || werr != nil {
		fmt.Fprintf(b, "  got:  %s\n  want: %s\n", abridge(got), abridge(want))
		return
	}
	keys := append([]string(nil), wk...)
	for _, k := range gk {
		if _, ok := wv[k]; !ok {
			keys = append(keys, k)
		}
	}
	if fmt.Sprint(gk) != fmt.Sprint(wk) {
		fmt.Fprintf(b, "  keys: got %v\n        want %v\n", gk, wk)
	}
	n := 0
	for _, k := range keys {
		g, w := gv[k], wv[k]
		if g == w {
			continue
		}
		if n++; n > 8 {
			fmt.Fprintf(b, "  … more columns differ\n")
			break
		}
		fmt.Fprintf(b, "  column %q:\n    got:  %s\n    want: %s\n", k, abridge(g), abridge(w))
	}
}

// rawObject splits a JSON object into its keys (in order) and raw values.
func rawObject(line string) ([]string, map[string]string, error) {
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, nil, fmt.Errorf("not an object")
	}
	var keys []string
	vals := map[string]string{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, err
		}
		keys = append(keys, k)
		vals[k] = string(raw)
	}
	return keys, vals, nil
}

func abridge(s string) string {
	if len(s) <= 300 {
		return s
	}
	return s[:300] + fmt.Sprintf("… (%d bytes)", len(s))
}

// fixturesDir is the repository's Lance sample datasets (tests/testdata/lance-samples).
func fixturesDir(t *testing.T) string {
	t.Helper()
	d := filepath.Join("..", "testdata", "lance-samples")
	if _, err := os.Stat(d); err != nil {
		t.Fatalf("the lance-samples fixtures are missing: %v", err)
	}
	return d
}

// TestSharedFixtures is a smoke test over the small datasets of
// tests/testdata/lance-samples (see their README).
func TestSharedFixtures(t *testing.T) {
	requireBinary(t)
	d := fixturesDir(t)
	kvRows := map[uint64]uint64{1: 100, 2: 200, 3: 190, 4: 189, 5: 189, 6: 189}
	cases := []struct {
		name string
		path string
		rows map[uint64]uint64
	}{
		{"default", "default/kv.lance", kvRows},
		{"v2_0", "v2_0/kv.lance", kvRows},
		{"v1paths", "v1paths/kv.lance", kvRows},
		{"v2_2", "v2_2/kv.lance", kvRows},
		{"bigdel_t", "bigdel/t.lance", map[uint64]uint64{1: 20000, 2: 10000}},
		{"bigdel_t2", "bigdel/t2.lance", map[uint64]uint64{1: 1000, 2: 990}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ds := filepath.Join(d, tc.path)
			out, err := kv0("lance", "log", ds, "--json")
			if err != nil {
				t.Fatal(err)
			}
			var log []logEntry
			if err := json.Unmarshal(out, &log); err != nil {
				t.Fatal(err)
			}
			var versions []uint64
			for _, e := range log {
				versions = append(versions, e.Version)
			}
			var want []uint64
			for v := range tc.rows {
				want = append(want, v)
			}
			sort.Slice(want, func(i, j int) bool { return want[i] < want[j] })
			if fmt.Sprint(versions) != fmt.Sprint(want) {
				t.Errorf("versions %v, want %v", versions, want)
			}
			for _, v := range want {
				vs := strconv.FormatUint(v, 10)
				out, err := kv0("lance", "info", "--version", vs, "--json", ds)
				if err != nil {
					t.Error(err)
					continue
				}
				var info infoOut
				if err := json.Unmarshal(out, &info); err != nil {
					t.Fatal(err)
				}
				if info.Rows != tc.rows[v] {
					t.Errorf("v%d: info rows %d, want %d", v, info.Rows, tc.rows[v])
				}
				out, err = kv0("lance", "cat", ds, "--version", vs)
				if err != nil {
					t.Error(err)
					continue
				}
				if n := uint64(bytes.Count(out, []byte("\n"))); n != tc.rows[v] {
					t.Errorf("v%d: cat printed %d rows, want %d", v, n, tc.rows[v])
				}
			}
		})
	}
	for _, tc := range []struct{ name, version string }{{"legacy", "0.2"}} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := kv0("lance", "cat", filepath.Join(d, tc.name, "kv.lance"))
			if err == nil {
				t.Fatalf("cat of a %s dataset succeeded; want an error naming the format version", tc.version)
			}
			if !strings.Contains(err.Error(), tc.version) {
				t.Errorf("error does not name version %s: %v", tc.version, err)
			}
		})
	}
}

// TestCLIUsage pins the exit statuses and the flag placement rules.
func TestCLIUsage(t *testing.T) {
	requireBinary(t)
	for _, tc := range []struct {
		args []string
		code int
	}{
		{nil, 2},
		{[]string{"nope"}, 2},
		{[]string{"lance"}, 2},
		{[]string{"lance", "cat"}, 2},
		{[]string{"lance", "cat", "a", "b"}, 2},
		{[]string{"lance", "cat", "--bogus", "x"}, 2},
		{[]string{"lance", "cat", "x", "--version", "0"}, 2},
		{[]string{"lance", "cat", "x", "--version", "1", "--tag", "t"}, 2},
		{[]string{"lance", "cat", filepath.Join(t.TempDir(), "missing")}, 1},
		{[]string{"lance", "info", "s3://bucket/t.lance"}, 1},
	} {
		cmd := exec.Command(kv0Binary, tc.args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code {
			t.Errorf("kv0 %v: exit %d, want %d (stderr %q)", tc.args, code, tc.code, stderr.String())
		}
		if stdout.Len() != 0 {
			t.Errorf("kv0 %v: wrote %q to stdout", tc.args, stdout.String())
		}
		if !strings.HasPrefix(stderr.String(), "kv0: ") {
			t.Errorf("kv0 %v: stderr %q does not start with \"kv0: \"", tc.args, stderr.String())
		}
	}
}
