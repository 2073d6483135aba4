// Command kv0 is the command-line interface of kv0.
//
// Usage:
//
//	kv0 lance info PATH [--version N | --tag T] [--json]
//	kv0 lance log  PATH [--json]
//	kv0 lance cat  PATH [--version N | --tag T] [--columns a,b] [--limit N]
//
// PATH is a Lance dataset folder (later also s3:// and http(s):// URIs).
// Flags may come before or after PATH. Data goes to stdout; errors go to
// stderr as "kv0: <message>" with exit status 1, usage errors with status 2.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kv0/kv0/core/inspect"
	"github.com/kv0/kv0/core/jsonl"
	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/native/location"
)

const usageText = `usage:
  kv0 lance info PATH [--version N | --tag T] [--json]
  kv0 lance log  PATH [--json]
  kv0 lance cat  PATH [--version N | --tag T] [--columns a,b] [--limit N] [--where EXPR]
` + writeUsageText + trackingUsageText + serveUsageText

// usageError is a mistake in the command line; it exits with status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := dispatch(ctx, args, stdout, stderr)
	if err == nil {
		return 0
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "kv0: %v\n", err)
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprint(stderr, usageText)
		return 2
	}
	return 1
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("missing command")
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usageText)
		return nil
	case "sign-server":
		return cmdSignServer(ctx, args[1:], stdout, stderr)
	case "serve":
		return cmdServe(ctx, args[1:], stdout, stderr)
	case "runs", "run", "params", "series", "metrics", "track", "optimize", "delete-runs", "demo":
		return cmdTracking(ctx, args[0], args[1:], stdout, stderr)
	case "kv":
		return cmdKV(ctx, args[1:], stdout, stderr)
	case "lance":
	default:
		return usagef("unknown command %q", args[0])
	}
	if len(args) < 2 {
		return usagef("missing lance subcommand (info, log or cat)")
	}
	sub, rest := args[1], args[2:]
	switch sub {
	case "info":
		return cmdInfo(ctx, rest, stdout, stderr)
	case "log":
		return cmdLog(ctx, rest, stdout, stderr)
	case "cat":
		return cmdCat(ctx, rest, stdout, stderr)
	case "write", "delete", "compact", "tag", "restore", "cleanup":
		return cmdLanceWrite(ctx, sub, rest, stdout, stderr)
	}
	return usagef("unknown lance subcommand %q", sub)
}

// parseArgs parses flags that may appear before, between or after the
// positional arguments, and returns the positional ones.
func parseArgs(fs *flag.FlagSet, args []string, stderr io.Writer) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintf(stderr, "usage of %s:\n", fs.Name())
				fs.SetOutput(stderr)
				fs.PrintDefaults()
				return nil, err
			}
			return nil, &usageError{err.Error()}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// After "--" every remaining argument is positional.
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// newFlagSet returns a flag set that reports errors to the caller instead
// of printing them and exiting; parseArgs prints the defaults on -h.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("kv0 lance "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// onePath checks that exactly one positional argument was given.
func onePath(pos []string) (string, error) {
	switch len(pos) {
	case 0:
		return "", usagef("missing PATH")
	case 1:
		return pos[0], nil
	}
	return "", usagef("expected one PATH, got %d arguments: %s", len(pos), strings.Join(pos, " "))
}

// versionFlags are --version and --tag, shared by info and cat.
type versionFlags struct {
	version uint64
	tag     string
}

func (v *versionFlags) register(fs *flag.FlagSet) {
	fs.Uint64Var(&v.version, "version", 0, "read version `N` (default: latest)")
	fs.StringVar(&v.tag, "tag", "", "read the version tagged `T`")
}

func (v *versionFlags) options(fs *flag.FlagSet) (lance.OpenOptions, error) {
	versionSet := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "version" {
			versionSet = true
		}
	})
	if versionSet && v.version == 0 {
		return lance.OpenOptions{}, usagef("--version: versions start at 1")
	}
	if versionSet && v.tag != "" {
		return lance.OpenOptions{}, usagef("--version and --tag exclude each other")
	}
	return lance.OpenOptions{Version: v.version, Tag: v.tag}, nil
}

// openLocation resolves a dataset location given on the command line into a
// store and the dataset's root key within it: a local folder, memory://name,
// s3://bucket/prefix (options from the environment) or http(s):// (read-only).
func openLocation(loc string) (store.Store, string, error) {
	st, root, err := location.Open(context.Background(), loc, location.Options{})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, "", fmt.Errorf("%s: no such folder", loc)
		}
		return nil, "", err
	}
	return st, root, nil
}

// openDataset opens PATH at the version chosen by flags.
func openDataset(ctx context.Context, loc string, opts lance.OpenOptions) (*lance.Dataset, error) {
	st, root, err := openLocation(loc)
	if err != nil {
		return nil, err
	}
	d, err := lance.Open(ctx, st, root, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	return d, nil
}

// ---------------------------------------------------------------- cat

func cmdCat(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cat")
	var vf versionFlags
	vf.register(fs)
	columns := fs.String("columns", "", "comma-separated `list` of columns to print (default: all)")
	limit := fs.Int64("limit", -1, "print at most `N` rows")
	where := fs.String("where", "", "print only rows matching the filter `EXPR`")
	pos, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	loc, err := onePath(pos)
	if err != nil {
		return err
	}
	opts, err := vf.options(fs)
	if err != nil {
		return err
	}
	var cols []string
	if *columns != "" {
		for _, c := range strings.Split(*columns, ",") {
			if c = strings.TrimSpace(c); c == "" {
				return usagef("--columns: empty column name")
			}
			cols = append(cols, c)
		}
	}
	if *limit == 0 {
		return nil
	}
	d, err := openDataset(ctx, loc, opts)
	if err != nil {
		return err
	}
	rows, err := inspect.ScanRows(ctx, d, inspect.RowsOptions{Columns: cols, Limit: *limit, Where: *where})
	if err != nil {
		return viewError(loc, err)
	}
	defer rows.Close()
	bw := bufio.NewWriterSize(stdout, 256<<10)
	w := jsonl.NewWriter(bw)
	for rows.Next() {
		if err := w.Write(rows.Record()); err != nil {
			return fmt.Errorf("%s: %w", loc, err)
		}
	}
	if err := rows.Err(); err != nil {
		bw.Flush()
		return fmt.Errorf("%s: %w", loc, err)
	}
	return bw.Flush()
}

// viewError turns a bad argument of a view into a usage error naming its
// flag, and prefixes other errors with the location.
func viewError(loc string, err error) error {
	var ae *inspect.ArgError
	if errors.As(err, &ae) {
		if ae.Caret != "" {
			return usagef("--%s: %v\n%s", ae.Arg, ae.Err, ae.Caret)
		}
		return usagef("--%s: %v", ae.Arg, ae.Err)
	}
	return fmt.Errorf("%s: %w", loc, err)
}

// ---------------------------------------------------------------- info

func cmdInfo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("info")
	var vf versionFlags
	vf.register(fs)
	asJSON := fs.Bool("json", false, "print one JSON object")
	pos, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	loc, err := onePath(pos)
	if err != nil {
		return err
	}
	opts, err := vf.options(fs)
	if err != nil {
		return err
	}
	d, err := openDataset(ctx, loc, opts)
	if err != nil {
		return err
	}
	info, err := inspect.DatasetInfo(ctx, d, loc)
	if err != nil {
		return fmt.Errorf("%s: %w", loc, err)
	}
	bw := bufio.NewWriter(stdout)
	if *asJSON {
		enc := json.NewEncoder(bw)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(info); err != nil {
			return err
		}
		return bw.Flush()
	}
	fmt.Fprintf(bw, "path:        %s\n", info.Path)
	fmt.Fprintf(bw, "version:     %d\n", info.Version)
	fmt.Fprintf(bw, "timestamp:   %s\n", info.Timestamp)
	fmt.Fprintf(bw, "data format: %s\n", info.DataFormat)
	fmt.Fprintf(bw, "rows:        %d\n", info.Rows)
	fmt.Fprintf(bw, "schema:      %d fields\n", len(info.Schema))
	tw := tabwriter.NewWriter(bw, 0, 4, 2, ' ', 0)
	for _, f := range info.Schema {
		null := "not null"
		if f.Nullable {
			null = "nullable"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", f.Name, f.Type, null)
	}
	tw.Flush()
	fmt.Fprintf(bw, "fragments:   %d\n", len(info.Fragments))
	for _, f := range info.Fragments {
		fmt.Fprintf(bw, "  #%d: %d rows, %d deleted", f.ID, f.PhysicalRows, f.DeletedRows)
		if f.DeletionFile != "" {
			fmt.Fprintf(bw, " (%s)", f.DeletionFile)
		}
		fmt.Fprintln(bw)
		for _, df := range f.Files {
			fmt.Fprintf(bw, "      %s  %d bytes, format %s\n", df.Path, df.Size, df.Version)
		}
	}
	return bw.Flush()
}

// formatTime renders a commit time in RFC 3339 UTC with the precision it has.
func formatTime(t time.Time) string { return inspect.FormatTime(t) }

// ---------------------------------------------------------------- log

func cmdLog(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("log")
	asJSON := fs.Bool("json", false, "print a JSON array")
	pos, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	loc, err := onePath(pos)
	if err != nil {
		return err
	}
	st, root, err := openLocation(loc)
	if err != nil {
		return err
	}
	out, err := inspect.DatasetLog(ctx, st, root)
	if err != nil {
		return fmt.Errorf("%s: %w", loc, err)
	}
	bw := bufio.NewWriter(stdout)
	if *asJSON {
		enc := json.NewEncoder(bw)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			return err
		}
		return bw.Flush()
	}
	tw := tabwriter.NewWriter(bw, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tTIMESTAMP\tOPERATION\tROWS\tFRAGMENTS\tPREDICATE\tTAGS")
	for _, v := range out {
		fmt.Fprintf(tw, "%d\t%s\t%s\t+%d -%d\t+%d -%d\t%s\t%s\n", v.Version, v.Timestamp, v.Operation,
			v.RowsAdded, v.RowsRemoved, v.FragmentsAdded, v.FragmentsRemoved, v.Predicate, strings.Join(v.Tags, ","))
	}
	tw.Flush()
	return bw.Flush()
}
