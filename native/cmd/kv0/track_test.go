package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kv0/kv0/core/tracking"
)

// trackIn runs kv0 track in-process on input and returns its stdout,
// stderr and exit status.
func trackIn(t *testing.T, input string, args ...string) (string, string, int) {
	t.Helper()
	old := stdin
	stdin = strings.NewReader(input)
	defer func() { stdin = old }()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"track"}, args...), &out, &errb)
	return out.String(), errb.String(), code
}

// readSeries returns the points of series name (no context) of the only run.
func readSeries(t *testing.T, repo, name string) (tracking.RunInfo, tracking.MetricData) {
	t.Helper()
	ctx := context.Background()
	r, err := openRepo(ctx, repo, false, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	runs, err := r.Runs(ctx, tracking.RunFilter{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs: %v %v", runs, err)
	}
	id, _ := tracking.NewSeriesID(runs[0].ID, name, nil)
	md, err := r.ReadMany(ctx, []tracking.SeriesID{id}, tracking.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return runs[0], md[0]
}

// TestTrackInput checks what kv0 track accepts: non-finite values bare and
// quoted, explicit timestamps; and what it reports by line number and
// skips: malformed JSON, unknown fields, points without name or value,
// unknown statuses, lines over 16 MiB.
func TestTrackInput(t *testing.T) {
	t.Setenv("KV0_WAL_DIR", t.TempDir())
	repo := filepath.Join(t.TempDir(), "repo")
	long := `{"name": "m", "value": 1, "context": {"pad": "` + strings.Repeat("x", 17<<20) + `"}}`
	input := strings.Join([]string{
		`{"name": "m", "value": NaN, "step": 0}`,             // 1
		`{"name": "m", "value": Infinity}`,                   // 2
		`{"name": "m", "value": -Infinity}`,                  // 3
		`{"name": "m", "value": "NaN"}`,                      // 4
		`{"name": "m", "value": "-Infinity", "context": {}}`, // 5
		`{"name": "m", "stpe": 6, "value": 1}`,               // 6 unknown field
		`{"value": 1, "step": 7}`,                            // 7 no name
		`{"name": "m"}`,                                      // 8 no value
		`{"status": "done"}`,                                 // 9 unknown status
		`{"name": "m", "value": 1`,                           // 10 malformed
		long,                                                 // 11 too long
		`{"name": "m", "value": "many"}`,                     // 12 bad value
		`{"name": "m", "value": 2, "timestamp": "2020-05-06T07:08:09.5Z"}`, // 13
		`{"name": "m", "value": 3, "timestamp": 1588748889.25}`,            // 14
		``,                                       // 15
		`{"name": "m", "value": 4, "step": 1.5}`, // 16 bad step
		`{"name": "NaN", "value": 5, "context": {"k": "Infinity"}}`, // 17 strings stay strings
		`{"status": "failed"}`, // 18
	}, "\n") + "\n"
	out, errOut, code := trackIn(t, input, repo, "--run", "input", "--ack")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if out != "18\n" {
		t.Errorf("acks %q, want the last line", out)
	}
	for _, want := range []string{
		`line 6: unknown field "stpe"`,
		`line 7: a point without "name"`,
		`line 8: point "m" without "value"`,
		`line 9: unknown "status" "done"`,
		`line 10: malformed JSON`,
		`line 11 is longer than 16 MiB`,
		`line 12: field "value": want a number, NaN, Infinity or -Infinity, got the string "many"`,
		`line 16: field "step": want an integer`,
		`skipped 8 bad lines`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	in, m := readSeries(t, repo, "m")
	if in.Status != tracking.StatusFailed {
		t.Errorf("status %s, want the failed the input asked for", in.Status)
	}
	want := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.NaN(), math.Inf(-1), 2, 3}
	if m.Len() != len(want) {
		t.Fatalf("%d points, want %d: %v", m.Len(), len(want), m.Values)
	}
	for i, w := range want {
		if v := m.Values[i]; v != w && !(math.IsNaN(v) && math.IsNaN(w)) || m.Steps[i] != int64(i) {
			t.Errorf("point %d: step %d value %v, want %v", i, m.Steps[i], v, w)
		}
	}
	if ts := m.Timestamps[5]; !ts.Equal(time.Date(2020, 5, 6, 7, 8, 9, 5e8, time.UTC)) {
		t.Errorf("RFC 3339 timestamp read as %v", ts)
	}
	if ts := m.Timestamps[6]; !ts.Equal(time.Unix(1588748889, 25e7)) {
		t.Errorf("epoch-seconds timestamp read as %v", ts)
	}

	// --strict stops at the first bad line, fails the run and exits 1.
	repo2 := filepath.Join(t.TempDir(), "repo")
	_, errOut, code = trackIn(t, "{\"name\": \"m\", \"value\": 1}\n{\"name\": \"m\", \"valeu\": 2}\n{\"name\": \"m\", \"value\": 3}\n",
		repo2, "--run", "strict", "--strict")
	if code != 1 || !strings.Contains(errOut, `line 2: unknown field "valeu"`) {
		t.Fatalf("--strict: exit %d: %s", code, errOut)
	}
	if in, m := readSeries(t, repo2, "m"); in.Status != tracking.StatusFailed || m.Len() != 1 {
		t.Fatalf("--strict: status %s, %d points", in.Status, m.Len())
	}
}

// FuzzTrackLine feeds parseTrackLine arbitrary lines: it never panics,
// and what it accepts is exactly one kind of line, complete.
func FuzzTrackLine(f *testing.F) {
	for _, s := range []string{`{"name": "m", "value": NaN}`, `{"name":"m","value":-Infinity,"step":3,"epoch":1,"context":{"a":"NaN"}}`,
		`{"params": {"a": {"b": 1}}}`, `{"status": "aborted"}`, `{"name": "m", "value": 1, "timestamp": "2020-01-01T00:00:00Z"}`,
		`{"name": "m", "value": 1, "timestamp": 1.5e9}`, `"NaN"`, `[NaN]`, `{"name": "NaNa", "value": Infinityx}`, ``, `{"NAME": "m", "Value": 1}`, `{"n\u0061me": "m", "value": 1}`,
		`{"name": "m", "value": 1, "context": {"stpe": [1, {"x": "}"}]}}`, `{"stpe": 1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		// unknownField agrees with encoding/json's own check.
		var probe trackLine
		if q := quoteNonFinite(bytes.TrimSpace(line)); json.Unmarshal(q, &probe) == nil {
			dec := json.NewDecoder(bytes.NewReader(q))
			dec.DisallowUnknownFields()
			derr := dec.Decode(&trackLine{})
			if got, unknown := unknownField(q); unknown != (derr != nil) {
				t.Fatalf("%q: unknownField %q, json.Decoder %v", q, got, derr)
			}
		}
		tl, blank, err := parseTrackLine(line)
		if err != nil || blank {
			return
		}
		kinds := 0
		if tl.Params != nil {
			kinds++
		}
		if tl.Status != nil {
			kinds++
		}
		if tl.Name != nil || tl.Value != nil {
			kinds++
			if tl.Name == nil || tl.Value == nil {
				t.Fatalf("accepted an incomplete point: %q", line)
			}
		}
		if kinds != 1 {
			t.Fatalf("accepted %d kinds in %q", kinds, line)
		}
	})
}

func TestQuoteNonFinite(t *testing.T) {
	for in, want := range map[string]string{
		`{"value": NaN}`:                   `{"value": "NaN"}`,
		`{"value":-Infinity,"x":Infinity}`: `{"value":"-Infinity","x":"Infinity"}`,
		`{"name": "NaN", "v": "a\"NaN"}`:   `{"name": "NaN", "v": "a\"NaN"}`,
		`{"v": [NaN, 1, -Infinity]}`:       `{"v": ["NaN", 1, "-Infinity"]}`,
		`{"v": NaNx}`:                      `{"v": NaNx}`,
		`{"s": "\\", "v": NaN}`:            `{"s": "\\", "v": "NaN"}`,
	} {
		if got := string(quoteNonFinite([]byte(in))); got != want {
			t.Errorf("%s: got %s, want %s", in, got, want)
		}
	}
}

// TestTrackHelp checks that kv0 track --help documents the input format
// and the flags, and exits 0.
func TestTrackHelp(t *testing.T) {
	out, _, code := trackIn(t, "", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{`"name"`, `"value"`, `"step"`, `"epoch"`, `"context"`, `"timestamp"`, `"params"`, `"status"`,
		"NaN", "RFC 3339", "16 MiB", "--strict", "--ack", "--flush-interval", "--flush-rows", "--finish", "KV0_CRASHED_AFTER", "SIGTERM"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %s", want)
		}
	}
}

// TestWritesNeedARepository checks that writing commands do not create a
// repository where there is none unless asked (--create; track and demo
// by default), refuse locations inside a Lance dataset and read-only
// locations before writing a WAL, and that demo refuses an existing
// repository wherever it is (checked through the store).
func TestWritesNeedARepository(t *testing.T) {
	walDir := t.TempDir()
	t.Setenv("KV0_WAL_DIR", walDir)
	base := t.TempDir()
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	runCmd := func(args ...string) (string, int) {
		t.Helper()
		old := stdin
		stdin = strings.NewReader("")
		defer func() { stdin = old }()
		var out, errb bytes.Buffer
		code := run(context.Background(), args, &out, &errb)
		return out.String() + errb.String(), code
	}
	for _, args := range [][]string{
		{"optimize", filepath.Join(base, "typo1")},
		{"delete-runs", filepath.Join(base, "typo2"), "someid"},
		{"track", filepath.Join(base, "typo3"), "--run", "x", "--create=false"},
		{"demo", filepath.Join(base, "typo4"), "--create=false", "--runs", "1", "--steps", "10"},
	} {
		out, code := runCmd(args...)
		if code != 1 || !strings.Contains(out, "not a tracking repository") {
			t.Errorf("%v: exit %d: %s", args, code, out)
		}
		if exists(args[1]) {
			t.Errorf("%v created %s", args, args[1])
		}
	}
	if out, code := runCmd("optimize", filepath.Join(base, "made"), "--create"); code != 0 || !exists(filepath.Join(base, "made", tracking.RunsTable)) {
		t.Errorf("optimize --create: exit %d: %s", code, out)
	}
	if out, code := runCmd("track", filepath.Join(base, "new"), "--run", "x"); code != 0 || !exists(filepath.Join(base, "new", tracking.RunsTable)) {
		t.Errorf("track creates by default: exit %d: %s", code, out)
	}

	// Inside a Lance dataset: a kv database, and a *.lance folder.
	db := filepath.Join(base, "db.lance")
	if out, code := runCmd("kv", "put", db, "k", "v"); code != 0 {
		t.Fatal(out)
	}
	for _, loc := range []string{filepath.Join(db, "repo"), filepath.Join(db, "data", "deeper"), filepath.Join(base, "t.lance", "repo")} {
		out, code := runCmd("track", loc, "--run", "x")
		if code != 1 || !strings.Contains(out, "inside the Lance dataset") {
			t.Errorf("track in %s: exit %d: %s", loc, code, out)
		}
		if exists(loc) {
			t.Errorf("track created %s", loc)
		}
	}
	if out, code := runCmd("track", db, "--run", "x"); code != 1 || !strings.Contains(out, "is a Lance dataset") {
		t.Errorf("track on a dataset: exit %d: %s", code, out)
	}

	// Read-only locations fail before a WAL is opened.
	before, _ := os.ReadDir(walDir)
	for _, args := range [][]string{{"track", "http://127.0.0.1:1/repo", "--run", "x"}, {"optimize", "https://example.invalid/r"},
		{"demo", "http://127.0.0.1:1/d"}} {
		out, code := runCmd(args...)
		if code != 1 || !strings.Contains(out, "read-only") {
			t.Errorf("%v: exit %d: %s", args, code, out)
		}
	}
	if after, _ := os.ReadDir(walDir); len(after) != len(before) {
		t.Errorf("a read-only location got a WAL: %d entries, were %d", len(after), len(before))
	}

	// demo refuses an existing repository, local or on S3.
	for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "KV0_S3_PATH_STYLE", "KV0_S3_ALLOW_HTTP"} {
		t.Setenv(k, "")
	}
	for _, kv := range fakeS3Env(t) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	for _, loc := range []string{filepath.Join(base, "demo"), "s3://kv0-test/demo"} {
		if out, code := runCmd("demo", loc, "--runs", "1", "--steps", "10"); code != 0 {
			t.Fatalf("demo %s: exit %d: %s", loc, code, out)
		}
		if out, code := runCmd("demo", loc, "--runs", "1", "--steps", "10"); code != 1 || !strings.Contains(out, "already holds a repository") {
			t.Errorf("second demo %s: exit %d: %s", loc, code, out)
		}
	}
}

// A params line keeps its numbers exactly: an integer above 2^53 (a seed)
// is stored as written, as kv0 params --json prints it back.
func TestTrackParamsExact(t *testing.T) {
	t.Setenv("KV0_WAL_DIR", t.TempDir())
	repo := filepath.Join(t.TempDir(), "repo")
	if _, stderr, code := trackIn(t, `{"params": {"seed": 1152921504606846977, "opt": {"ids": [12345678901234567891]}}}`+"\n", repo, "--run", "p"); code != 0 {
		t.Fatalf("kv0 track: exit %d: %s", code, stderr)
	}
	in, _ := readSeries(t, repo, "none")
	code, out, stderr := runCLI("params", repo, in.ID, "--json")
	if code != 0 {
		t.Fatalf("kv0 params: exit %d: %s", code, stderr)
	}
	for _, want := range []string{`"seed": 1152921504606846977`, `"opt.ids": [`, `12345678901234567891`} {
		if !strings.Contains(out, want) {
			t.Errorf("kv0 params --json: %s\nwant %s in it", out, want)
		}
	}
}
