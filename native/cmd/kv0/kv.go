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
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/kv0/kv0/core/kv"
	"github.com/kv0/kv0/native/kvdb"
)

const kvUsageText = `  kv0 kv get      PATH KEY [--version N]
  kv0 kv put      PATH KEY VALUE
  kv0 kv delete   PATH KEY [--end END]     (with --end: every key in [KEY, END))
  kv0 kv scan     PATH [--start K] [--end K] [--prefix P] [--reverse] [--limit N] [--version N] [--keys-only]
  kv0 kv versions PATH [--json]
  kv0 kv compact  PATH
  kv0 kv cleanup  PATH [--older-than DURATION]   (default 168h)
  kv0 kv purge    PATH [--force]
  kv0 kv tag      PATH NAME [--version N]
  Keys and values are taken and printed as text unless --hex or --base64 is
  given; scan prints "key<TAB>value" lines, quoting (Go syntax) text that is
  not printable. --wal-dir sets the WAL root.
`

// kvFlags are the flags every kv subcommand takes.
type kvFlags struct {
	hex, b64 bool
	walDir   string
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
	o := kvdb.Options{WALDir: f.walDir, DB: kv.Options{ReadOnly: readOnly, Version: version,
		FlushInterval: -1, RefreshInterval: -1}}
	o.Log.Warn = f.warn
	return o
}

// cmdKV runs `kv0 kv SUB ...`; usage errors also print the kv usage.
func cmdKV(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 1 && (args[0] == "help" || args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(stdout, "usage:\n"+kvUsageText)
		return nil
	}
	err := runKV(ctx, args, stdout, stderr)
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprint(stderr, "usage:\n"+kvUsageText)
	}
	return err
}

func runKV(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("missing kv subcommand (get, put, delete, scan, versions, compact, cleanup, purge or tag)")
	}
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
		fs.Uint64Var(&version, "version", 0, "read this version")
		nargs = 2
	case "put":
		nargs = 3
	case "delete":
		fs.Func("end", "delete the range [KEY, END)", func(s string) error { end, haveEnd = s, true; return nil })
		nargs = 2
	case "scan":
		fs.Func("start", "first key (inclusive)", func(s string) error { start, haveStart = s, true; return nil })
		fs.Func("end", "end key (exclusive)", func(s string) error { end, haveEnd = s, true; return nil })
		fs.StringVar(&prefix, "prefix", "", "only keys with this prefix")
		fs.BoolVar(&reverse, "reverse", false, "largest key first")
		fs.IntVar(&limit, "limit", 0, "at most this many keys (0: all)")
		fs.Uint64Var(&version, "version", 0, "read this version")
		fs.BoolVar(&keysOnly, "keys-only", false, "print keys only")
		nargs = 1
	case "versions":
		fs.BoolVar(&asJSON, "json", false, "JSON Lines output")
		nargs = 1
	case "compact":
		nargs = 1
	case "cleanup":
		fs.DurationVar(&olderThan, "older-than", 7*24*time.Hour, "remove versions older than this")
		nargs = 1
	case "purge":
		fs.BoolVar(&force, "force", false, "delete tags that keep deleted keys instead of failing")
		nargs = 1
	case "tag":
		fs.Uint64Var(&version, "version", 0, "version to tag (default: the latest)")
		nargs = 2
	default:
		return usagef("unknown kv subcommand %q", sub)
	}
	pos, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("missing PATH")
	}
	if len(pos) != nargs {
		return usagef("kv %s takes %d arguments, got %d: %s", sub, nargs, len(pos), strings.Join(pos, " "))
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
		err = kvWrite(ctx, db, sub, key, value, end, haveEnd, &f, olderThan, force, stdout)
		if cerr := db.Close(); err == nil {
			err = cerr
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
		if asJSON {
			enc := json.NewEncoder(stdout)
			for _, v := range vs {
				if err := enc.Encode(map[string]any{"version": v.Version, "timestamp": v.Timestamp.UTC().Format(time.RFC3339Nano)}); err != nil {
					return err
				}
			}
			return nil
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "VERSION\tTIMESTAMP")
		for _, v := range vs {
			fmt.Fprintf(tw, "%d\t%s\n", v.Version, v.Timestamp.UTC().Format(time.RFC3339))
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
