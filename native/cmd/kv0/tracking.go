package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kv0/kv0/core/tracking"
)

const trackingUsageText = `  kv0 runs    REPO [--experiment E] [--status S] [--json]
  kv0 run     REPO ID [--json]
  kv0 params  REPO ID [--json]
  kv0 series  REPO ID [--json]
  kv0 metrics REPO RUN NAME [--max-points N] [--csv] [--context JSON]
  kv0 track   REPO (--run NAME [--experiment E] | --resume RUN [--finish]) [--flush-interval D] [--flush-rows N]
              [--ack] [--strict] [--create=false] [--no-wal]   (JSON Lines on stdin; kv0 track --help)
  kv0 optimize REPO [--create]
  kv0 delete-runs REPO [--create] ID...
  kv0 demo    REPO [--runs N] [--steps N] [--create=false]
`

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
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	loc, err := onePath(pos)
	if err != nil {
		return err
	}
	r, err := openRepo(ctx, loc, false, false)
	if err != nil {
		return err
	}
	defer r.Close()
	return cmdRunsOn(ctx, r, tracking.RunFilter{Experiment: *exp, Status: *status}, *asJSON, stdout)
}

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
	in, err := r.Run(ctx, arg)
	if err == nil || !errors.Is(err, tracking.ErrNotFound) {
		return in, err
	}
	runs, err2 := r.Runs(ctx, tracking.RunFilter{})
	if err2 != nil {
		return in, err2
	}
	var found []tracking.RunInfo
	for _, x := range runs {
		if x.Name == arg {
			found = append(found, x)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return in, fmt.Errorf("no run with id or name %q", arg)
	}
	return in, fmt.Errorf("%d runs are named %q; give an id", len(found), arg)
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
		{"created", fmtTime(in.CreatedAt)}, {"updated", fmtTime(in.UpdatedAt)}, {"ended", fmtTime(in.EndedAt)},
		{"heartbeat", fmtTime(in.HeartbeatAt)}} {
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
	ps, err := r.AllParams(ctx, in.ID)
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(ps))
	for k := range ps {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if *asJSON {
		m := map[string]json.RawMessage{}
		for k, p := range ps {
			m[k] = p.Value
		}
		return writeJSON(stdout, m)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\n", k, ps[k].Value)
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
	series, err := r.AllSeries(ctx, in.ID)
	if err != nil {
		return err
	}
	ids := make([]tracking.SeriesID, len(series))
	for i, s := range series {
		ids[i] = s.ID
	}
	stats, err := r.SeriesStats(ctx, ids)
	if err != nil {
		return err
	}
	if asJSON {
		type row struct {
			tracking.SeriesInfo
			Stats *tracking.SeriesStats `json:"stats,omitempty"`
		}
		out := make([]row, len(series))
		for i, s := range series {
			out[i].SeriesInfo = s
			if st, ok := stats[s.ID]; ok {
				out[i].Stats = &st
			}
		}
		return writeJSON(stdout, out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCONTEXT\tPOINTS\tSTEPS\tLAST\tMIN (STEP)\tMAX (STEP)\tNON-FINITE")
	for _, s := range series {
		st := stats[s.ID]
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

func cmdOptimize(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := trackingFlags("optimize")
	create := fs.Bool("create", false, "create the repository when there is none")
	pos, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	loc, err := onePath(pos)
	if err != nil {
		return err
	}
	r, err := openRepoWith(ctx, loc, repoOpen{writable: true, create: *create})
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
	create := fs.Bool("create", false, "create the repository when there is none")
	pos, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return usagef("kv0 delete-runs: want REPO ID...")
	}
	r, err := openRepoWith(ctx, pos[0], repoOpen{writable: true, create: *create})
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
