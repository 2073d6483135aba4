package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kv0/kv0/core/inspect"
	"github.com/kv0/kv0/core/tracking"
	"github.com/kv0/kv0/native/wal"
)

const trackingUsageText = `  kv0 runs    REPO [--experiment E] [--status S] [--tag T]... [--archived true|false] [--param 'KEY<V']... [--json]
  kv0 run     REPO ID [--json]
  kv0 params  REPO ID [--json]
  kv0 series  REPO ID [--json]
  kv0 metrics REPO RUN NAME [--max-points N] [--csv] [--context JSON]
  kv0 track   REPO --run NAME [--experiment E] [--resume ID] [--no-wal]   (JSON Lines on stdin)
  kv0 optimize REPO
  kv0 delete-runs REPO ID...
  kv0 demo    REPO [--runs N] [--steps N]
`

// stdin is where kv0 track reads; tests replace it.
var stdin io.Reader = os.Stdin

// cmdTracking runs one tracking command.
func cmdTracking(ctx context.Context, cmd string, args []string, stdout, stderr io.Writer) error {
	switch cmd {
	case "runs":
		return cmdRuns(ctx, args, stdout, stderr)
	case "run":
		return cmdRun(ctx, args, stdout, stderr)
	case "params":
		return cmdParams(ctx, args, stdout, stderr)
	case "series":
		return cmdSeries(ctx, args, stdout, stderr)
	case "metrics":
		return cmdMetrics(ctx, args, stdout, stderr)
	case "track":
		return cmdTrack(ctx, args, stdout, stderr)
	case "optimize":
		return cmdOptimize(ctx, args, stdout, stderr)
	case "delete-runs":
		return cmdDeleteRuns(ctx, args, stdout, stderr)
	case "demo":
		return cmdDemo(ctx, args, stdout, stderr)
	}
	return usagef("unknown command %q", cmd)
}

func trackingFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("kv0 "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// openRepo opens the repository at loc. A writable open creates the folder
// and, with useWAL, logs writes in the local WAL (native/wal).
func openRepo(ctx context.Context, loc string, writable, useWAL bool) (*tracking.Repo, error) {
	if writable && !strings.Contains(loc, "://") {
		if err := os.MkdirAll(loc, 0o755); err != nil {
			return nil, err
		}
	}
	st, root, err := openLocation(loc)
	if err != nil {
		return nil, err
	}
	opts := tracking.RepoOptions{ReadOnly: !writable}
	if writable && useWAL {
		abs, err := filepath.Abs(loc)
		if err != nil {
			return nil, err
		}
		l, err := wal.Open("repo:"+abs, wal.Options{})
		if err != nil {
			return nil, fmt.Errorf("wal: %w", err)
		}
		opts.WAL = l
	}
	r, err := tracking.OpenRepo(ctx, st, root, opts)
	if err != nil {
		if errors.Is(err, tracking.ErrNotFound) {
			return nil, fmt.Errorf("%s: not a tracking repository", loc)
		}
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	return r, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

func fmtFloat(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return "-"
	}
	return strconv.FormatFloat(f, 'g', 6, 64)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func cmdRuns(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := trackingFlags("runs")
	exp := fs.String("experiment", "", "only runs of experiment `E`")
	status := fs.String("status", "", "only runs with status `S`")
	var tags, params repeated
	fs.Var(&tags, "tag", "only runs tagged `T` (repeatable: every tag)")
	archived := fs.String("archived", "", "only archived (`true`) or active (false) runs")
	fs.Var(&params, "param", "only runs whose parameter compares so, e.g. `'optimizer.lr<0.01'` (repeatable)")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	loc, err := onePath(pos)
	if err != nil {
		return err
	}
	f := tracking.RunFilter{Experiment: *exp, Status: *status, Tags: tags}
	switch *archived {
	case "":
	case "true", "false":
		b := *archived == "true"
		f.Archived = &b
	default:
		return usagef("--archived: want true or false, not %q", *archived)
	}
	for _, p := range params {
		pf, err := inspect.ParseParamFilter(p)
		if err != nil {
			return usagef("--%v", err)
		}
		f.Params = append(f.Params, pf)
	}
	r, err := openRepo(ctx, loc, false, false)
	if err != nil {
		return err
	}
	defer r.Close()
	return cmdRunsOn(ctx, r, f, *asJSON, stdout)
}

// repeated is a flag given any number of times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

// cmdRunsOn prints the runs f selects as a table or JSON.
func cmdRunsOn(ctx context.Context, r *tracking.Repo, f tracking.RunFilter, asJSON bool, stdout io.Writer) error {
	runs, err := r.Runs(ctx, f)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(stdout, runs)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tEXPERIMENT\tSTATUS\tTAGS\tCREATED\tENDED")
	for _, in := range runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", in.ID, orDash(in.Name), orDash(in.Experiment), in.Status,
			orDash(strings.Join(in.Tags, ",")), fmtTime(in.CreatedAt), fmtTime(in.EndedAt))
	}
	return tw.Flush()
}

// resolveRun accepts a run id or a unique run name.
func resolveRun(ctx context.Context, r *tracking.Repo, arg string) (tracking.RunInfo, error) {
	return inspect.ResolveRun(ctx, r, arg)
}

func runArgs(name string, args []string, stderr io.Writer) (*flag.FlagSet, *bool, []string, error) {
	fs := trackingFlags(name)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseArgs(fs, args, stderr)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(pos) != 2 {
		return nil, nil, nil, usagef("kv0 %s: want REPO ID", name)
	}
	return fs, asJSON, pos, nil
}

// openRunArgs parses `kv0 NAME REPO ID [--json]`, opens the repository
// read-only and resolves the run. The caller closes the repository.
func openRunArgs(ctx context.Context, name string, args []string, stderr io.Writer) (*tracking.Repo, tracking.RunInfo, *bool, error) {
	_, asJSON, pos, err := runArgs(name, args, stderr)
	if err != nil {
		return nil, tracking.RunInfo{}, nil, err
	}
	r, err := openRepo(ctx, pos[0], false, false)
	if err != nil {
		return nil, tracking.RunInfo{}, nil, err
	}
	in, err := resolveRun(ctx, r, pos[1])
	if err != nil {
		r.Close()
		return nil, tracking.RunInfo{}, nil, err
	}
	return r, in, asJSON, nil
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	r, in, asJSON, err := openRunArgs(ctx, "run", args, stderr)
	if err != nil {
		return err
	}
	defer r.Close()
	if *asJSON {
		return writeJSON(stdout, in)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	for _, kv := range [][2]string{{"id", in.ID}, {"name", orDash(in.Name)}, {"experiment", orDash(in.Experiment)},
		{"description", orDash(in.Description)}, {"tags", orDash(strings.Join(in.Tags, ","))}, {"status", in.Status},
		{"archived", strconv.FormatBool(in.Archived)}, {"kind", orDash(in.Kind)}, {"target", orDash(in.Target)},
		{"created", fmtTime(in.CreatedAt)}, {"updated", fmtTime(in.UpdatedAt)}, {"ended", fmtTime(in.EndedAt)}} {
		fmt.Fprintf(tw, "%s\t%s\n", kv[0], kv[1])
	}
	return tw.Flush()
}

func cmdParams(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	r, in, asJSON, err := openRunArgs(ctx, "params", args, stderr)
	if err != nil {
		return err
	}
	defer r.Close()
	ps, err := inspect.RunParams(ctx, r, in.ID)
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(ps))
	for k := range ps {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if *asJSON {
		return writeJSON(stdout, ps)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\n", k, ps[k])
	}
	return tw.Flush()
}

func cmdSeries(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	r, in, asJSON, err := openRunArgs(ctx, "series", args, stderr)
	if err != nil {
		return err
	}
	defer r.Close()
	return printSeries(ctx, r, in, *asJSON, stdout)
}

// printSeries prints a run's series with their statistics.
func printSeries(ctx context.Context, r *tracking.Repo, in tracking.RunInfo, asJSON bool, stdout io.Writer) error {
	series, err := inspect.RunSeries(ctx, r, in.ID)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(stdout, series)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCONTEXT\tPOINTS\tSTEPS\tLAST\tMIN (STEP)\tMAX (STEP)\tNON-FINITE")
	for _, s := range series {
		var st tracking.SeriesStats
		if s.Stats != nil {
			st = *s.Stats
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d..%d\t%s\t%s (%d)\t%s (%d)\t%d\n", s.Name, s.Context, st.Count, st.FirstStep, st.LastStep,
			fmtFloat(st.LastValue), fmtFloat(st.Min), st.MinStep, fmtFloat(st.Max), st.MaxStep, st.NonFinite)
	}
	return tw.Flush()
}

func cmdMetrics(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := trackingFlags("metrics")
	maxPoints := fs.Int("max-points", 0, "downsample to at most `N` points (first, last and each bucket's min and max)")
	asCSV := fs.Bool("csv", false, "print CSV (step,epoch,timestamp,value)")
	ctxJSON := fs.String("context", "", "the series' context as a JSON object")
	pos, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(pos) != 3 {
		return usagef("kv0 metrics: want REPO RUN NAME")
	}
	var mctx map[string]any
	if *ctxJSON != "" {
		if err := json.Unmarshal([]byte(*ctxJSON), &mctx); err != nil {
			return usagef("--context: %v", err)
		}
	}
	r, err := openRepo(ctx, pos[0], false, false)
	if err != nil {
		return err
	}
	defer r.Close()
	in, err := resolveRun(ctx, r, pos[1])
	if err != nil {
		return err
	}
	id, err := tracking.NewSeriesID(in.ID, pos[2], mctx)
	if err != nil {
		return err
	}
	data, err := r.ReadMany(ctx, []tracking.SeriesID{id}, tracking.ReadOptions{MaxPoints: *maxPoints})
	if err != nil {
		return err
	}
	m := data[0]
	if m.Len() == 0 {
		return fmt.Errorf("run %s has no points of %q with context %s", in.ID, pos[2], orDash(*ctxJSON))
	}
	epoch := func(i int) string {
		if m.Epochs[i] == tracking.NoEpoch {
			return ""
		}
		return strconv.FormatInt(m.Epochs[i], 10)
	}
	if *asCSV {
		w := csv.NewWriter(stdout)
		_ = w.Write([]string{"step", "epoch", "timestamp", "value"})
		for i := range m.Steps {
			_ = w.Write([]string{strconv.FormatInt(m.Steps[i], 10), epoch(i), m.Timestamps[i].Format(time.RFC3339Nano),
				strconv.FormatFloat(m.Values[i], 'g', -1, 64)})
		}
		w.Flush()
		return w.Error()
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tEPOCH\tTIMESTAMP\tVALUE")
	for i := range m.Steps {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", m.Steps[i], orDash(epoch(i)), m.Timestamps[i].Format(time.RFC3339Nano),
			strconv.FormatFloat(m.Values[i], 'g', -1, 64))
	}
	return tw.Flush()
}

// trackLine is one line of kv0 track's input: a point, or a parameter set.
//
//	{"name": "loss", "value": 0.25, "step": 10, "epoch": 1, "context": {"subset": "train"}}
//	{"params": {"optimizer": {"lr": 0.001}, "batch_size": 32}}
//	{"status": "failed"}                         (ends the run with that status)
type trackLine struct {
	Name    *string         `json:"name"`
	Value   *float64        `json:"value"`
	Step    *int64          `json:"step"`
	Epoch   *int64          `json:"epoch"`
	Context map[string]any  `json:"context"`
	Params  map[string]any  `json:"params"`
	Status  string          `json:"status"`
	Raw     json.RawMessage `json:"-"`
}

func cmdTrack(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := trackingFlags("track")
	name := fs.String("run", "", "name of the new run `NAME`")
	exp := fs.String("experiment", "", "experiment `E` of the new run")
	resume := fs.String("resume", "", "append to the existing run `ID` instead of starting one")
	noWAL := fs.Bool("no-wal", false, "do not log writes in the local write-ahead log")
	pos, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	loc, err := onePath(pos)
	if err != nil {
		return err
	}
	if *name == "" && *resume == "" {
		return usagef("kv0 track: --run NAME or --resume ID is required")
	}
	r, err := openRepo(ctx, loc, true, !*noWAL)
	if err != nil {
		return err
	}
	var run *tracking.Run
	if *resume != "" {
		run, err = r.ResumeRun(ctx, *resume)
	} else {
		run, err = r.StartRun(ctx, tracking.RunSpec{Name: *name, Experiment: *exp})
	}
	if err != nil {
		r.Close()
		return err
	}
	fmt.Fprintln(stderr, "run", run.ID())
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	status := tracking.StatusFinished
	var n, lineNo int
	fail := func(err error) error {
		s := tracking.StatusFailed
		_ = run.Finish(ctx, s)
		_ = r.Close()
		return err
	}
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var tl trackLine
		if err := json.Unmarshal([]byte(line), &tl); err != nil {
			return fail(fmt.Errorf("stdin line %d: %v", lineNo, err))
		}
		switch {
		case tl.Params != nil:
			if err := run.SetParams(tl.Params); err != nil {
				return fail(fmt.Errorf("stdin line %d: %w", lineNo, err))
			}
		case tl.Name != nil && tl.Value != nil:
			if err := run.Track(*tl.Value, *tl.Name, tracking.TrackOptions{Step: tl.Step, Epoch: tl.Epoch, Context: tl.Context}); err != nil {
				return fail(fmt.Errorf("stdin line %d: %w", lineNo, err))
			}
			n++
		case tl.Status != "":
			status = tl.Status
		default:
			return fail(fmt.Errorf("stdin line %d: want {\"name\", \"value\"}, {\"params\"} or {\"status\"}", lineNo))
		}
		if ctx.Err() != nil {
			status = tracking.StatusAborted
			break
		}
	}
	if err := sc.Err(); err != nil {
		return fail(err)
	}
	if err := run.Finish(context.Background(), status); err != nil {
		r.Close()
		return err
	}
	fmt.Fprintf(stderr, "tracked %d points\n", n)
	return r.Close()
}

func cmdOptimize(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := trackingFlags("optimize")
	pos, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	loc, err := onePath(pos)
	if err != nil {
		return err
	}
	r, err := openRepo(ctx, loc, true, false)
	if err != nil {
		return err
	}
	stop := spinner(stderr, "optimizing")
	st, err := r.Optimize(ctx)
	stop()
	if err != nil {
		r.Close()
		return err
	}
	full := "incremental"
	if st.MetricsFull {
		full = "full"
	}
	fmt.Fprintf(stdout, "runs: %d rows, params: %d rows, series: %d rows, metrics: %d rows rewritten sorted (%s), records: %d rows\n",
		st.RunRows, st.ParamRows, st.SeriesRows, st.MetricsRewritten, full, st.RecordRows)
	return r.Close()
}

func cmdDeleteRuns(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := trackingFlags("delete-runs")
	pos, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return usagef("kv0 delete-runs: want REPO ID...")
	}
	r, err := openRepo(ctx, pos[0], true, false)
	if err != nil {
		return err
	}
	if err := r.DeleteRuns(ctx, pos[1:]); err != nil {
		r.Close()
		return err
	}
	fmt.Fprintf(stdout, "deleted %d runs\n", len(pos)-1)
	return r.Close()
}

// isTTY reports whether w is a terminal.
func isTTY(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progressBar returns a function drawing a bar on stderr when it is a
// terminal (a no-op otherwise) and one ending it.
func progressBar(stderr io.Writer, what string) (func(done, total int64), func()) {
	if !isTTY(stderr) {
		return func(int64, int64) {}, func() {}
	}
	var last time.Time
	drawn := false
	return func(done, total int64) {
			if time.Since(last) < 100*time.Millisecond && done != total {
				return
			}
			last, drawn = time.Now(), true
			const width = 30
			frac := 0.0
			if total > 0 {
				frac = float64(done) / float64(total)
			}
			n := int(frac * width)
			fmt.Fprintf(stderr, "\r%s [%s%s] %3.0f%% %d/%d ", what, strings.Repeat("#", n), strings.Repeat(".", width-n), 100*frac, done, total)
		}, func() {
			if drawn {
				fmt.Fprintln(stderr)
			}
		}
}

// spinner shows that long work without a known total is going on, on a
// terminal only.
func spinner(stderr io.Writer, what string) func() {
	if !isTTY(stderr) {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(150 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-done:
				fmt.Fprintf(stderr, "\r%s done   \n", what)
				return
			case <-t.C:
				fmt.Fprintf(stderr, "\r%s %c ", what, `|/-\`[i%4])
			}
		}
	}()
	return func() { close(done); <-finished }
}
