package main

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/kv0/kv0/core/kv"
	"github.com/kv0/kv0/native/kvdb"
)

// kvDetails is the help text of the kv group.
const kvDetails = `Keys and values are taken and printed as text unless --hex or --base64 is
given; scan prints "key<TAB>value" lines, quoting (Go syntax) text that is
not printable. --wal-dir sets the root of the write-ahead logs.
`

// kvFormatUsage is the help of kv put/delete --format.
const kvFormatUsage = "data file format `F` of a new database: 2.1 (read by lance 8 and older) or 2.2 (the default); a database keeps its format"

// kvFlags are the flags every kv subcommand takes.
type kvFlags struct {
	hex, b64 bool
	walDir   string
	format   string      // --format: the data file format of a new database
	warn     func(error) // where warnings of the Lance layer go
}

func (f *kvFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.hex, "hex", false, "keys and values in hexadecimal")
	fs.BoolVar(&f.b64, "base64", false, "keys and values in standard base64")
	fs.StringVar(&f.walDir, "wal-dir", "", "root of the write-ahead logs (default $KV0_WAL_DIR or the user cache)")
}

// decode turns a command-line key or value into bytes.
func (f *kvFlags) decode(what, s string) ([]byte, error) {
	switch {
	case f.hex && f.b64:
		return nil, usagef("give --hex or --base64, not both")
	case f.hex:
		b, err := hex.DecodeString(s)
		if err != nil {
			return nil, usagef("%s %q is not hexadecimal: %v", what, s, err)
		}
		return b, nil
	case f.b64:
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, usagef("%s %q is not base64: %v", what, s, err)
		}
		return b, nil
	}
	return []byte(s), nil
}

// encode formats bytes for output.
func (f *kvFlags) encode(b []byte) string {
	switch {
	case f.hex:
		return hex.EncodeToString(b)
	case f.b64:
		return base64.StdEncoding.EncodeToString(b)
	}
	if printable(b) {
		return string(b)
	}
	return strconv.Quote(string(b))
}

// printable reports whether b prints as itself on one line and cannot be
// mistaken for a quoted string.
func printable(b []byte) bool {
	if !utf8.Valid(b) || (len(b) > 0 && b[0] == '"') {
		return false
	}
	for _, r := range string(b) {
		if !strconv.IsPrint(r) || r == '\t' {
			return false
		}
	}
	return true
}

func (f *kvFlags) options(readOnly bool, version uint64) kvdb.Options {
	o := kvdb.Options{WALDir: f.walDir, Location: locationOptions, DB: kv.Options{ReadOnly: readOnly, Version: version,
		FlushInterval: -1, RefreshInterval: -1}}
	o.Log.Warn = f.warn
	if !readOnly {
		o.Log.DataFormat = f.format
	}
	return o
}

// runKV runs `kv0 kv SUB ...`.
func runKV(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("kv0 kv "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	f := kvFlags{warn: warnTo(stderr)}
	f.register(fs)
	var (
		version   uint64
		end       string
		start     string
		prefix    string
		reverse   bool
		limit     int
		keysOnly  bool
		asJSON    bool
		olderThan time.Duration
		force     bool
		haveEnd   bool
		haveStart bool
	)
	nargs := 0
	switch sub {
	case "get":
		versionVar(fs, &version, "version", "read version `N`, from 1 (default: latest)")
		nargs = 2
	case "put":
		formatVar(fs, &f.format, kvFormatUsage)
		nargs = 3
	case "delete":
		fs.Func("end", "delete the range [KEY, END)", func(s string) error { end, haveEnd = s, true; return nil })
		formatVar(fs, &f.format, kvFormatUsage)
		nargs = 2
	case "scan":
		fs.Func("start", "first key (inclusive)", func(s string) error { start, haveStart = s, true; return nil })
		fs.Func("end", "end key (exclusive)", func(s string) error { end, haveEnd = s, true; return nil })
		fs.StringVar(&prefix, "prefix", "", "only keys with this prefix")
		fs.BoolVar(&reverse, "reverse", false, "largest key first")
		intVar(fs, &limit, "limit", 0, math.MaxInt, "at most `N` keys (0: all)")
		versionVar(fs, &version, "version", "read version `N`, from 1 (default: latest)")
		fs.BoolVar(&keysOnly, "keys-only", false, "print keys only")
		nargs = 1
	case "versions":
		fs.BoolVar(&asJSON, "json", false, "JSON Lines output")
		nargs = 1
	case "compact":
		nargs = 1
	case "cleanup":
		olderThan = 7 * 24 * time.Hour
		durationVar(fs, &olderThan, "older-than", 0, 0, "remove versions older than `DURATION` (e.g. 14d, 36h; 0 leaves only the latest and tagged ones)")
		nargs = 1
	case "purge":
		fs.BoolVar(&force, "force", false, "delete tags that keep deleted keys instead of failing")
		nargs = 1
	case "tag":
		versionVar(fs, &version, "version", "version `N` to tag, from 1 (default: the latest)")
		nargs = 2
	default:
		return usagef("unknown kv subcommand %q", sub)
	}
	pos, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return argsError(0)
	}
	if len(pos) != nargs {
		return argsError(len(pos))
	}
	path := pos[0]
	var key, value []byte
	if nargs >= 2 && sub != "tag" {
		if key, err = f.decode("key", pos[1]); err != nil {
			return err
		}
	}
	if nargs == 3 {
		if value, err = f.decode("value", pos[2]); err != nil {
			return err
		}
	}

	switch sub {
	case "tag":
		return kvdb.Tag(ctx, path, pos[1], version, f.options(false, 0))
	case "put", "delete", "compact", "purge", "cleanup":
		db, err := kvdb.Open(ctx, path, f.options(false, 0))
		if err != nil {
			return err
		}
		var before logState
		if sub == "compact" {
			before, err = readLogState(ctx, path, &f)
		}
		if err == nil {
			err = kvWrite(ctx, db, sub, key, value, end, haveEnd, &f, olderThan, force, stdout)
		}
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err == nil && sub == "compact" {
			var after logState
			if after, err = readLogState(ctx, path, &f); err == nil {
				printCompaction(stdout, before, after)
			}
		}
		return err
	}

	// Read-only commands.
	db, err := kvdb.Open(ctx, path, f.options(true, version))
	if err != nil {
		return err
	}
	defer db.Close()
	switch sub {
	case "get":
		v, err := db.Get(ctx, key)
		if errors.Is(err, kv.ErrNotFound) {
			return fmt.Errorf("key %s: not found", f.encode(key))
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, f.encode(v))
		return nil
	case "versions":
		vs, err := db.Versions(ctx)
		if err != nil {
			return err
		}
		log, _, err := kvdb.OpenLog(ctx, path, false, f.options(true, 0))
		if err != nil {
			return err
		}
		ts, err := log.Tags(ctx)
		if err != nil {
			return err
		}
		tags := map[uint64][]string{}
		for _, t := range ts {
			tags[t.Version] = append(tags[t.Version], t.Name)
		}
		if asJSON {
			enc := json.NewEncoder(stdout)
			for _, v := range vs {
				vt := tags[v.Version]
				if vt == nil {
					vt = []string{}
				}
				if err := enc.Encode(map[string]any{"version": v.Version, "timestamp": v.Timestamp.UTC().Format(time.RFC3339Nano), "tags": vt}); err != nil {
					return err
				}
			}
			return nil
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "VERSION\tTIMESTAMP\tTAGS")
		for _, v := range vs {
			fmt.Fprintf(tw, "%d\t%s\t%s\n", v.Version, v.Timestamp.UTC().Format(time.RFC3339), orDash(strings.Join(tags[v.Version], ",")))
		}
		return tw.Flush()
	}
	// scan
	var o kv.IterOptions
	if haveStart {
		if o.LowerBound, err = f.decode("--start", start); err != nil {
			return err
		}
	}
	if haveEnd {
		if o.UpperBound, err = f.decode("--end", end); err != nil {
			return err
		}
	}
	if prefix != "" {
		p, err := f.decode("--prefix", prefix)
		if err != nil {
			return err
		}
		if o.LowerBound == nil || string(o.LowerBound) < string(p) {
			o.LowerBound = p
		}
		if pe := prefixEnd(p); pe != nil && (o.UpperBound == nil || string(pe) < string(o.UpperBound)) {
			o.UpperBound = pe
		}
	}
	it, err := db.NewIter(ctx, &o)
	if err != nil {
		return err
	}
	defer it.Close()
	move, ok := it.Next, it.First()
	if reverse {
		move, ok = it.Prev, it.Last()
	}
	w := newLineWriter(stdout)
	for n := 0; ok && (limit <= 0 || n < limit); n++ {
		if keysOnly {
			w.line(f.encode(it.Key()))
		} else {
			w.line(f.encode(it.Key()) + "\t" + f.encode(it.Value()))
		}
		ok = move()
	}
	if err := it.Error(); err != nil {
		return err
	}
	return w.flush()
}

func kvWrite(ctx context.Context, db *kv.DB, sub string, key, value []byte, end string, haveEnd bool, f *kvFlags, olderThan time.Duration, force bool, stdout io.Writer) error {
	sync := &kv.WriteOptions{Sync: true}
	switch sub {
	case "put":
		return db.Put(ctx, key, value, sync)
	case "delete":
		if haveEnd {
			e, err := f.decode("--end", end)
			if err != nil {
				return err
			}
			return db.DeleteRange(ctx, key, e, sync)
		}
		return db.Delete(ctx, key, sync)
	case "compact":
		return db.CompactRange(ctx, nil, nil)
	case "purge":
		return db.Purge(ctx, force)
	}
	n, err := db.CleanupOldVersions(ctx, olderThan)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "removed %d versions\n", n)
	return nil
}

// logState is what kv compact reports of a database's operation log.
type logState struct {
	version   uint64
	fragments int
	rows      uint64 // physical rows, deleted ones included
}

func readLogState(ctx context.Context, path string, f *kvFlags) (logState, error) {
	log, _, err := kvdb.OpenLog(ctx, path, false, f.options(true, 0))
	if err != nil {
		return logState{}, err
	}
	v, err := log.Latest(ctx)
	if err != nil || v == 0 {
		return logState{}, err
	}
	frags, err := log.Fragments(ctx, v)
	if err != nil {
		return logState{}, err
	}
	st := logState{version: v, fragments: len(frags)}
	for _, fr := range frags {
		st.rows += fr.Rows
	}
	return st, nil
}

// printCompaction says what kv compact did.
func printCompaction(w io.Writer, before, after logState) {
	if after.version == before.version {
		fmt.Fprintf(w, "version %d: nothing to compact (%s, %s)\n", after.version, plural(after.fragments, "fragment"), plural(int(after.rows), "row"))
		return
	}
	fmt.Fprintf(w, "version %d: %s (%s) compacted into %s (%s) at version %d\n",
		before.version, plural(before.fragments, "fragment"), plural(int(before.rows), "row"),
		plural(after.fragments, "fragment"), plural(int(after.rows), "row"), after.version)
}

// plural returns "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

// prefixEnd returns the smallest key above every key with prefix p, or nil
// when there is none (p is empty or all 0xff).
func prefixEnd(p []byte) []byte {
	e := append([]byte(nil), p...)
	for i := len(e) - 1; i >= 0; i-- {
		if e[i] != 0xff {
			e[i]++
			return e[:i+1]
		}
	}
	return nil
}

// lineWriter buffers output lines.
type lineWriter struct {
	w   io.Writer
	buf []byte
	err error
}

func newLineWriter(w io.Writer) *lineWriter { return &lineWriter{w: w} }

func (l *lineWriter) line(s string) {
	l.buf = append(append(l.buf, s...), '\n')
	if len(l.buf) > 64<<10 {
		_ = l.flush()
	}
}

func (l *lineWriter) flush() error {
	if l.err == nil && len(l.buf) > 0 {
		_, l.err = l.w.Write(l.buf)
	}
	l.buf = l.buf[:0]
	return l.err
}
