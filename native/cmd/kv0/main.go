// Command kv0 is the command-line interface of kv0: it inspects and changes
// Lance datasets (kv0 lance ...), key-value databases (kv0 kv ...) and
// tracking repositories (kv0 runs, metrics, track, ...), and serves
// presigned URLs (kv0 sign-server). `kv0 --help` lists the commands; the
// table `commands` drives dispatch and every help text.
//
// Flags may come before or after the positional arguments. Data goes to
// stdout; errors go to stderr as "kv0: <message>" with exit status 1, usage
// errors with status 2 and the usage of the command they concern.
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
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kv0/kv0/core/inspect"
	"github.com/kv0/kv0/core/jsonl"
	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/native/location"
)

// command is one kv0 command: the table below drives dispatch, `kv0
// --help`, group help (`kv0 lance --help`), per-command help and the usage
// line printed with a usage error, so a command cannot be missing from any
// of them.
type command struct {
	name    string // "lance cat", "runs"; the first word of a two-word name is its group
	args    string // synopsis of the positional arguments and required flags
	summary string // one line for the command lists
	details string // more text for `kv0 NAME --help` (may be empty)
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// group is a family of commands listed together in `kv0 --help`.
type group struct {
	name    string // "lance", "kv", or "" for one-word commands
	title   string
	details string
}

var groups = []group{
	{"lance", "Lance datasets", ""},
	{"kv", "Key-value databases", kvDetails},
	{"wal", "Write-ahead logs (recovery from damage)", walGroupDetails},
	{"", "Experiment tracking and serving", ""},
}

// commands lists every command; init fills it (the functions it names
// refer back to it through parseArgs).
var commands []command

func init() {
	kvSub := func(sub string) func(context.Context, []string, io.Writer, io.Writer) error {
		return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			return runKV(ctx, append([]string{sub}, args...), stdout, stderr)
		}
	}
	commands = []command{
		{"lance info", "PATH [--version N | --tag T] [--json]", "describe a version: schema, rows, fragments and files", "", cmdInfo},
		{"lance log", "PATH [--json]", "list the versions with their operations, row counts and tags", "", cmdLog},
		{"lance cat", "PATH [--version N | --tag T] [--columns a,b] [--limit N] [--where EXPR]", "print rows as JSON Lines", "", cmdCat},
		{"lance write", "PATH --mode create|append|overwrite [--input FILE] [--format 2.1|2.2]", "write an Arrow IPC stream or file as a new version", "", cmdWrite},
		{"lance delete", "PATH --where EXPR", "delete the rows matching a filter", "", cmdDelete},
		{"lance compact", "PATH [--target-rows N]", "rewrite small fragments into larger ones", "", cmdCompact},
		{"lance tag", "create|delete|list PATH [NAME] [--version N]", "create, delete or list tags", "", cmdTag},
		{"lance restore", "PATH --version N", "commit an old version again as the latest", "", cmdRestore},
		{"lance cleanup", "PATH --older-than DURATION", "remove old untagged versions and the files only they use",
			"DURATION is a Go duration (90m, 36h) or a number of days (14d) or weeks (2w).", cmdCleanup},

		{"kv get", "PATH KEY [--version N]", "print the value of a key", "", kvSub("get")},
		{"kv put", "PATH KEY VALUE [--format 2.1|2.2]", "set a key", "", kvSub("put")},
		{"kv delete", "PATH KEY [--end END] [--format 2.1|2.2]", "delete a key, or with --end every key in [KEY, END)", "", kvSub("delete")},
		{"kv scan", "PATH [--start K] [--end K] [--prefix P] [--reverse] [--limit N] [--version N] [--keys-only]", "print keys and values in order", "", kvSub("scan")},
		{"kv versions", "PATH [--json]", "list the database's versions and their tags", "", kvSub("versions")},
		{"kv compact", "PATH", "rewrite the operation log without overwritten and deleted entries", "", kvSub("compact")},
		{"kv cleanup", "PATH [--older-than DURATION]", "remove versions older than DURATION (default 7d; Go durations, plus d and w)", "", kvSub("cleanup")},
		{"kv purge", "PATH [--force]", "remove deleted data from every version", "", kvSub("purge")},
		{"kv tag", "PATH NAME [--version N]", "name a version so cleanup keeps it", "", kvSub("tag")},

		{"wal check", "LOCATION [--wal-dir DIR] [--json]", "report the damage of the write-ahead logs of a database or repository", walCheckDetails, cmdWALCheck},
		{"wal salvage", "LOCATION [--wal-dir DIR] [--json]", "keep the records before a damaged segment and move it aside", walSalvageDetails, cmdWALSalvage},

		{"runs", "REPO [--experiment E] [--status S] [--tag T]... [--archived true|false] [--param 'KEY<V']... [--json]", "list runs", "", cmdRuns},
		{"run", "REPO RUN [--json]", "show one run (RUN is an id or a unique name)", "", cmdRun},
		{"params", "REPO RUN [--json]", "show a run's parameters", "", cmdParams},
		{"series", "REPO RUN [--json]", "list a run's metric series with their statistics", "", cmdSeries},
		{"metrics", "REPO RUN NAME... [--context JSON] [--max-points N] [--csv | --json]", "print the points of metric series", metricsDetails, cmdMetrics},
		{"track", "REPO (--run NAME [--experiment E] | --resume RUN [--finish]) [--flush-interval D] [--flush-rows N] [--ack] [--strict] [--format 2.1|2.2] < points.jsonl",
			"record a run from JSON Lines on stdin", trackDetails, cmdTrack},
		{"optimize", "REPO [--create]", "compact the repository's tables and sort the metrics", "", cmdOptimize},
		{"delete-runs", "REPO RUN... [--create]", "delete runs (ids or unique names) and their data", "", cmdDeleteRuns},
		{"demo", "REPO [--runs N] [--steps N] [--create=false] [--format 2.1|2.2] [--live [--interval D] [--serve ADDR [--web DIR] [--wasm DIR]]]",
			"write a demo repository of training runs; --live keeps two runs appending", demoDetails, cmdDemo},
		{"sign-server", "--bucket-uri (s3|gs|az)://BUCKET/PREFIX --token-file FILE [--listen ADDR]", "hand out presigned read URLs of one repository", signServerDetails, cmdSignServer},
		{"serve", "ROOT [--listen ADDR] [--token-file FILE] [--allow-origin ORIGIN] [--open] [--web DIR] [--wasm DIR]",
			"serve the HTTP read API, ROOT's files, the dashboard and the wasm module", serveDetails, cmdServe},
		{"version", "", "print kv0's version", versionDetails, cmdVersion},
	}
}

// readCommands are the commands that only read; they work on signed
// locations (--signer, kv0+signer://).
var readCommands = map[string]bool{
	"lance info": true, "lance log": true, "lance cat": true,
	"kv get": true, "kv scan": true, "kv versions": true,
	"runs": true, "run": true, "params": true, "series": true, "metrics": true,
}

const usageFooter = `Locations: a local folder, memory://NAME, s3://BUCKET/PREFIX, http(s)://HOST/PATH
(read-only), or kv0+signer://HOST:PORT/KEY: KEY of the repository a kv0
sign-server at HOST:PORT signs reads of (read-only; kv0+signers:// for https).
Also gs://BUCKET/PREFIX (Google Cloud Storage) and az://CONTAINER/PREFIX (Azure Blob Storage).
` + signedFlagsText + `
Flags may come before or after the arguments. Data goes to stdout; errors go
to stderr as "kv0: MESSAGE" with exit status 1, usage errors with status 2.
Run "kv0 COMMAND --help" for a command's flags.
`

// signedFlagsText describes the flags of signed reads, which every read
// command takes.
const signedFlagsText = `Signed reads take two more flags: --signer URL (the sign server; locations
without a scheme are then keys of its repository) and --token-file FILE (its
bearer token; default $KV0_SIGNER_TOKEN or the file $KV0_SIGNER_TOKEN_FILE).
`

// locationOptions are the options every location of the current command
// line is opened with (--signer, --token-file); run sets them.
var locationOptions location.Options

// signedFlags removes --signer URL and --token-file FILE (also -signer,
// --signer=URL, ...) from args, anywhere before "--", and returns the
// location options they set. sign-server and serve keep their own
// --token-file.
func signedFlags(args []string) ([]string, location.Options, error) {
	var lo location.Options
	if len(args) == 0 || args[0] == "sign-server" || args[0] == "serve" {
		return args, lo, nil
	}
	out := make([]string, 0, len(args))
	tokenFile := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		name, val, hasVal := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if !strings.HasPrefix(a, "-") || (name != "signer" && name != "token-file") {
			out = append(out, a)
			continue
		}
		if !hasVal {
			if i+1 == len(args) {
				return nil, lo, usagef("flag needs an argument: %s", a)
			}
			i++
			val = args[i]
		}
		if val == "" {
			return nil, lo, usagef("%s: empty value", a)
		}
		if name == "signer" {
			lo.Signer = val
		} else {
			tokenFile = val
		}
	}
	if tokenFile != "" {
		tok, err := location.ReadToken(tokenFile)
		if err != nil {
			return nil, lo, fmt.Errorf("--token-file: %w", err)
		}
		lo.SignerToken = tok
	}
	return out, lo, nil
}

// writeUsage prints the list of commands of group g ("" for all groups).
func writeUsage(w io.Writer, only string) {
	fmt.Fprintln(w, "usage: kv0 COMMAND ARGS [FLAGS]")
	for _, g := range groups {
		if only != "" && g.name != only {
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", g.title)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, c := range commands {
			if c.group() == g.name {
				fmt.Fprintf(tw, "  kv0 %s %s\t%s\n", c.name, c.positional(), c.summary)
			}
		}
		tw.Flush()
		if only != "" && g.details != "" {
			fmt.Fprintf(w, "\n%s", g.details)
		}
	}
	fmt.Fprintf(w, "\n%s", usageFooter)
}

// group returns the group of c: the first word of a two-word name.
func (c *command) group() string {
	g, _, ok := strings.Cut(c.name, " ")
	if !ok {
		return ""
	}
	return g
}

// positional is the part of c's synopsis before its first optional
// argument, flag, alternative or redirection: "PATH", "REPO RUN NAME...".
func (c *command) positional() string {
	var out []string
	for _, w := range strings.Fields(c.args) {
		if strings.HasPrefix(w, "[") || strings.HasPrefix(w, "-") || strings.HasPrefix(w, "(") || w == "<" {
			break
		}
		out = append(out, w)
	}
	return strings.Join(out, " ")
}

// usageLine is the one-line synopsis of c.
func (c *command) usageLine() string {
	if c.args == "" {
		return "usage: kv0 " + c.name
	}
	return "usage: kv0 " + c.name + " " + c.args
}

// lookup finds the command args start with and returns it with the
// remaining arguments; a known group without a known subcommand returns
// the group's name.
func lookup(args []string) (*command, string, []string) {
	if len(args) == 0 {
		return nil, "", nil
	}
	for i := range commands {
		c := &commands[i]
		words := strings.Fields(c.name)
		if len(args) >= len(words) && slices.Equal(args[:len(words)], words) {
			return c, "", args[len(words):]
		}
	}
	for _, g := range groups {
		if g.name != "" && g.name == args[0] {
			return nil, g.name, args[1:]
		}
	}
	return nil, "", args
}

// commandNamed returns the command a flag set name ("kv0 lance cat",
// "kv0 lance tag create") belongs to: the longest command name it starts
// with.
func commandNamed(fsName string) *command {
	name := strings.TrimPrefix(fsName, "kv0 ")
	var best *command
	for i := range commands {
		c := &commands[i]
		if (name == c.name || strings.HasPrefix(name, c.name+" ")) && (best == nil || len(c.name) > len(best.name)) {
			best = c
		}
	}
	return best
}

// wantsHelp reports whether args ask for help (-h, -help, --help before
// any "--").
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// usageError is a mistake in the command line; it exits with status 2.
// badArgs marks positional arguments that do not fit the command's
// synopsis (gotArgs of them), which run words with the synopsis itself:
// "missing REPO RUN", "want REPO RUN, got 3 arguments".
type usageError struct {
	msg     string
	badArgs bool
	gotArgs int
}

// argsError is the usage error of a command given n positional arguments
// that its synopsis does not take.
func argsError(n int) error {
	return &usageError{msg: fmt.Sprintf("wrong number of arguments (%d)", n), badArgs: true, gotArgs: n}
}

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line and returns the exit status. A usage
// error prints the usage of the command it concerns: its synopsis, or the
// list of a group's commands, or of every command.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c *command
	var grp string
	args, lo, err := signedFlags(args)
	if err == nil {
		locationOptions = lo
		c, grp, err = dispatch(ctx, args, stdout, stderr)
		locationOptions = location.Options{}
	}
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var ue *usageError
	if !errors.As(err, &ue) {
		fmt.Fprintf(stderr, "kv0: %v\n", err)
		return 1
	}
	switch want := ""; {
	case ue.badArgs && c != nil:
		want = c.positional()
		if ue.gotArgs == 0 {
			fmt.Fprintf(stderr, "kv0: missing %s\n", want)
		} else {
			fmt.Fprintf(stderr, "kv0: want %s, got %s\n", want, plural(ue.gotArgs, "argument"))
		}
	default:
		fmt.Fprintf(stderr, "kv0: %v\n", err)
	}
	if c != nil {
		fmt.Fprintf(stderr, "%s\nRun \"kv0 %s --help\" for its flags.\n", c.usageLine(), c.name)
	} else {
		writeUsage(stderr, grp)
	}
	return 2
}

// dispatch runs the command args name. It returns the command (or the
// group) it resolved, for run to print the right usage.
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) (*command, string, error) {
	if len(args) == 0 {
		return nil, "", usagef("missing command")
	}
	help := false
	if args[0] == "help" {
		help, args = true, args[1:]
		if len(args) == 0 {
			writeUsage(stdout, "")
			return nil, "", nil
		}
	}
	if !help && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		writeUsage(stdout, "")
		return nil, "", nil
	}
	if !help && args[0] == "--version" {
		args = append([]string{"version"}, args[1:]...)
	}
	c, grp, rest := lookup(args)
	if c == nil {
		switch {
		case grp != "" && (help || len(rest) == 0 || wantsHelp(rest[:1])):
			if help || len(rest) > 0 {
				writeUsage(stdout, grp)
				return nil, grp, nil
			}
			return nil, grp, usagef("missing %s subcommand", grp)
		case grp != "":
			return nil, grp, usagef("unknown %s subcommand %q", grp, rest[0])
		}
		return nil, "", usagef("unknown command %q", args[0])
	}
	if !help && !wantsHelp(rest) && locationOptions.Signer != "" && !readCommands[c.name] {
		return c, "", usagef("--signer: kv0 %s writes; signed locations are read-only", c.name)
	}
	if help || wantsHelp(rest) {
		// The command's own flag set prints its flags (parseArgs), to
		// stdout since help was asked for.
		err := c.run(ctx, []string{"-h"}, stdout, stdout)
		if err != nil && !errors.Is(err, flag.ErrHelp) {
			return c, "", err
		}
		return c, "", nil
	}
	return c, "", c.run(ctx, rest, stdout, stderr)
}

// writeHelp prints the help of the command fs belongs to: synopsis,
// description and flags.
func writeHelp(w io.Writer, fs *flag.FlagSet) {
	c := commandNamed(fs.Name())
	if c == nil {
		fmt.Fprintf(w, "usage of %s:\n", fs.Name())
	} else {
		fmt.Fprintf(w, "%s\n\n%s.\n", c.usageLine(), strings.ToUpper(c.summary[:1])+c.summary[1:])
		if c.details != "" {
			fmt.Fprintf(w, "\n%s", c.details)
		}
		if readCommands[c.name] {
			fmt.Fprintf(w, "\n%s", signedFlagsText)
		}
	}
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintln(w, "\nflags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
}

// parseArgs parses flags that may appear before, between or after the
// positional arguments, and returns the positional ones.
func parseArgs(fs *flag.FlagSet, args []string, stderr io.Writer) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				writeHelp(stderr, fs)
				return nil, err
			}
			return nil, &usageError{msg: err.Error()}
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
		return "", argsError(0)
	case 1:
		return pos[0], nil
	}
	return "", argsError(len(pos))
}

// versionFlags are --version and --tag, shared by info and cat.
type versionFlags struct {
	version uint64
	tag     string
}

func (v *versionFlags) register(fs *flag.FlagSet) {
	versionVar(fs, &v.version, "version", "read version `N`, from 1 (default: latest)")
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
	st, root, err := location.Open(context.Background(), loc, locationOptions)
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
	limit := limitFlag(fs, "limit", "print at most `N` rows (0 prints none; default: all)")
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
	opts.Warn = warnTo(stderr)
	var cols []string
	if *columns != "" {
		for _, c := range strings.Split(*columns, ",") {
			if c = strings.TrimSpace(c); c == "" {
				return usagef("--columns: empty column name")
			}
			if slices.Contains(cols, c) {
				return usagef("--columns: column %q is named twice", c)
			}
			cols = append(cols, c)
		}
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
	opts.Warn = warnTo(stderr)
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
	out, err := inspect.DatasetLog(ctx, st, root, lance.ListOptions{Warn: warnTo(stderr)})
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
