package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
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

	"github.com/kv0/kv0/core/inspect"
	"github.com/kv0/kv0/core/tracking"
)

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
	var tags, params repeated
	fs.Var(&tags, "tag", "only runs tagged `T` (repeatable: every tag given)")
	archived := fs.String("archived", "", "only archived runs (`true`) or active ones (false)")
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
	if tracking.CheckStatusFilter(*status) != nil {
		return usagef("--status: %q is none of running, finished, failed, aborted, crashed", *status)
	}
	switch *archived {
	case "":
	case "true", "false":
		a := *archived == "true"
		f.Archived = &a
	default:
		return usagef("--archived: want true or false, got %q", *archived)
	}
	for _, p := range params {
		pf, err := tracking.ParseParamFilter(p)
		if err != nil {
			return usagef("--param: %v", err)
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

// repeated collects the values of a flag given several times.
type repeated []string

func (r *repeated) String() string { return strings.Join(*r, ",") }

// Set adds one value.
func (r *repeated) Set(v string) error {
	*r = append(*r, v)
	return nil
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
	return inspect.ResolveRun(ctx, r, arg)
}

// resolveRuns resolves run ids or unique names (resolveRun) to ids, each
// run once, in the order first given.
func resolveRuns(ctx context.Context, r *tracking.Repo, args []string) ([]string, error) {
	var ids []string
	for _, a := range args {
		in, err := resolveRun(ctx, r, a)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(ids, in.ID) {
			ids = append(ids, in.ID)
		}
	}
	return ids, nil
}

func runArgs(name string, args []string, stderr io.Writer) (*flag.FlagSet, *bool, []string, error) {
	fs := trackingFlags(name)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseArgs(fs, args, stderr)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(pos) != 2 {
		return nil, nil, nil, argsError(len(pos))
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

// metricsDetails is the help text of kv0 metrics.
const metricsDetails = `Each NAME selects the run's series of that name: without --context every
one of them (one per context), with --context only the one with that
context. The table and the CSV have one row per point, with the series'
name and context (canonical JSON, "-" or empty when it has none) before
step, epoch, timestamp and value. --json prints an array with one object
per series:

  [{"name": "loss", "context": {"subset": "train"}, "series_id": 1234,
    "run_id": "...", "steps": [0, 1], "epochs": [0, null],
    "timestamps": ["2026-01-02T03:04:05.5Z", ...], "values": [2.3, "NaN"]}]

series_id is a number; an epoch is null when the point has none; values
that JSON cannot hold are the strings "NaN", "Infinity" and "-Infinity".
`

// metricsJSON is one series in the --json output of kv0 metrics.
type metricsJSON struct {
	Name       string            `json:"name"`
	Context    json.RawMessage   `json:"context"`
	SeriesID   tracking.SeriesID `json:"series_id"`
	RunID      string            `json:"run_id"`
	Steps      []int64           `json:"steps"`
	Epochs     []*int64          `json:"epochs"`
	Timestamps []string          `json:"timestamps"`
	Values     []jsonFloat       `json:"values"`
}

// jsonFloat is a float64 that encodes NaN and ±Inf as the strings "NaN",
// "Infinity" and "-Infinity".
type jsonFloat float64

// MarshalJSON implements json.Marshaler.
func (f jsonFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return []byte(`"NaN"`), nil
	case math.IsInf(v, 1):
		return []byte(`"Infinity"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Infinity"`), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

func cmdMetrics(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := trackingFlags("metrics")
	maxPoints := intFlag(fs, "max-points", 0, 0, math.MaxInt, "downsample each series to at most `N` points: the first, the last and each bucket's finite min and max (0: every point)")
	asCSV := fs.Bool("csv", false, "print CSV (name,context,step,epoch,timestamp,value)")
	asJSON := fs.Bool("json", false, "print a JSON array with one object per series")
	ctxJSON := fs.String("context", "", "only the series with this context, a JSON object")
	pos, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(pos) < 3 {
		return argsError(len(pos))
	}
	if *asCSV && *asJSON {
		return usagef("give --csv or --json, not both")
	}
	var mctx map[string]any
	ctxGiven := *ctxJSON != ""
	if ctxGiven {
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
	all, err := r.AllSeries(ctx, in.ID)
	if err != nil {
		return err
	}
	sel, err := selectSeries(in.ID, all, pos[2:], ctxGiven, mctx)
	if err != nil {
		return err
	}
	ids := make([]tracking.SeriesID, len(sel))
	for i, s := range sel {
		ids[i] = s.ID
	}
	data, err := r.ReadMany(ctx, ids, tracking.ReadOptions{MaxPoints: *maxPoints})
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(stdout)
	switch {
	case *asJSON:
		out := make([]metricsJSON, len(sel))
		for i, s := range sel {
			m := &data[i]
			o := metricsJSON{Name: s.Name, Context: json.RawMessage(s.Context), SeriesID: s.ID, RunID: s.RunID,
				Steps: m.Steps, Epochs: make([]*int64, m.Len()), Timestamps: make([]string, m.Len()), Values: make([]jsonFloat, m.Len())}
			if o.Steps == nil {
				o.Steps = []int64{}
			}
			for j := range m.Steps {
				if m.Epochs[j] != tracking.NoEpoch {
					o.Epochs[j] = &m.Epochs[j]
				}
				o.Timestamps[j] = m.Timestamps[j].UTC().Format(time.RFC3339Nano)
				o.Values[j] = jsonFloat(m.Values[j])
			}
			out[i] = o
		}
		enc := json.NewEncoder(bw)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			return err
		}
	case *asCSV:
		w := csv.NewWriter(bw)
		_ = w.Write([]string{"name", "context", "step", "epoch", "timestamp", "value"})
		for i, s := range sel {
			m := &data[i]
			c := s.Context
			if c == "{}" {
				c = ""
			}
			for j := range m.Steps {
				_ = w.Write([]string{s.Name, c, strconv.FormatInt(m.Steps[j], 10), epochString(m.Epochs[j]),
					m.Timestamps[j].Format(time.RFC3339Nano), strconv.FormatFloat(m.Values[j], 'g', -1, 64)})
			}
		}
		w.Flush()
		if err := w.Error(); err != nil {
			return err
		}
	default:
		tw := tabwriter.NewWriter(bw, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tCONTEXT\tSTEP\tEPOCH\tTIMESTAMP\tVALUE")
		for i, s := range sel {
			m := &data[i]
			c := s.Context
			if c == "{}" {
				c = "-"
			}
			for j := range m.Steps {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", s.Name, c, m.Steps[j], orDash(epochString(m.Epochs[j])),
					m.Timestamps[j].Format(time.RFC3339Nano), strconv.FormatFloat(m.Values[j], 'g', -1, 64))
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func epochString(e int64) string {
	if e == tracking.NoEpoch {
		return ""
	}
	return strconv.FormatInt(e, 10)
}

// selectSeries picks, for each name in order (once each), the series of
// the run with that name: all of them, or with ctxGiven the one whose
// context is mctx. A name that selects nothing is an error listing what
// exists.
func selectSeries(runID string, all []tracking.SeriesInfo, names []string, ctxGiven bool, mctx map[string]any) ([]tracking.SeriesInfo, error) {
	var sel []tracking.SeriesInfo
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] {
			continue
		}
		seen[name] = true
		var contexts []string
		var want tracking.SeriesID
		if ctxGiven {
			id, err := tracking.NewSeriesID(runID, name, mctx)
			if err != nil {
				return nil, usagef("--context: %v", err)
			}
			want = id
		}
		n := len(sel)
		for _, s := range all {
			if s.Name != name {
				continue
			}
			contexts = append(contexts, s.Context)
			if !ctxGiven || s.ID == want {
				sel = append(sel, s)
			}
		}
		if len(sel) > n {
			continue
		}
		if len(contexts) > 0 {
			c, _ := tracking.CanonicalContext(mctx)
			return nil, fmt.Errorf("run %s has no series %q with context %s; its contexts are %s", runID, name, c, strings.Join(contexts, ", "))
		}
		var have []string
		for _, s := range all {
			if len(have) == 0 || have[len(have)-1] != s.Name {
				have = append(have, s.Name)
			}
		}
		if len(have) == 0 {
			return nil, fmt.Errorf("run %s has no series %q (it has no series)", runID, name)
		}
		return nil, fmt.Errorf("run %s has no series %q; its series are %s", runID, name, strings.Join(have, ", "))
	}
	return sel, nil
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
		return argsError(len(pos))
	}
	r, err := openRepoWith(ctx, pos[0], repoOpen{writable: true, create: *create})
	if err != nil {
		return err
	}
	ids, err := resolveRuns(ctx, r, pos[1:])
	if err != nil {
		r.Close()
		return err
	}
	if err := r.DeleteRuns(ctx, ids); err != nil {
		r.Close()
		return err
	}
	fmt.Fprintf(stdout, "deleted %d runs\n", len(ids))
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
