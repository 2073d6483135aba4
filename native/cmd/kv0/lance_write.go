package main

// The write side of "kv0 lance": write, delete, compact, tag, restore,
// cleanup, and cat --where.
//
//	kv0 lance write   PATH --mode create|append|overwrite [--input FILE]
//	kv0 lance delete  PATH --where EXPR
//	kv0 lance compact PATH [--target-rows N]
//	kv0 lance tag     create|delete|list PATH [NAME] [--version N]
//	kv0 lance restore PATH --version N
//	kv0 lance cleanup PATH --older-than DURATION

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/expr"
	"github.com/kv0/kv0/core/jsonl"
	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/native/fsstore"
)

const writeUsageText = `  kv0 lance write   PATH --mode create|append|overwrite [--input FILE]
  kv0 lance delete  PATH --where EXPR
  kv0 lance compact PATH [--target-rows N]
  kv0 lance tag     create|delete|list PATH [NAME] [--version N]
  kv0 lance restore PATH --version N
  kv0 lance cleanup PATH --older-than DURATION   (Go durations, plus d and w)
  kv0 lance cat     PATH ... [--where EXPR]
`

// cmdLanceWrite runs the write subcommands.
func cmdLanceWrite(ctx context.Context, sub string, args []string, stdout, stderr io.Writer) error {
	switch sub {
	case "write":
		return cmdWrite(ctx, args, stdout, stderr)
	case "delete":
		return cmdDelete(ctx, args, stdout, stderr)
	case "compact":
		return cmdCompact(ctx, args, stdout, stderr)
	case "tag":
		return cmdTag(ctx, args, stdout, stderr)
	case "restore":
		return cmdRestore(ctx, args, stdout, stderr)
	case "cleanup":
		return cmdCleanup(ctx, args, stdout, stderr)
	}
	return usagef("unknown lance subcommand %q", sub)
}

// mtimeStore adds modification times to a folder store, so cleanup can
// age files no manifest references.
type mtimeStore struct {
	*fsstore.Store
}

func (s mtimeStore) ModTime(ctx context.Context, key string) (time.Time, error) {
	fi, err := os.Stat(filepath.Join(s.Root(), filepath.FromSlash(key)))
	if errors.Is(err, os.ErrNotExist) {
		return time.Time{}, store.ErrNotFound
	}
	if err != nil {
		return time.Time{}, err
	}
	return fi.ModTime(), nil
}

// writableLocation opens PATH for writing; create makes the folder.
func writableLocation(loc string, create bool) (store.Store, string, error) {
	if !create {
		st, root, err := openLocation(loc)
		if err != nil {
			return nil, "", err
		}
		if fs, ok := st.(*fsstore.Store); ok {
			return mtimeStore{fs}, root, nil
		}
		return st, root, nil
	}
	if i := strings.Index(loc, "://"); i > 0 && !strings.ContainsAny(loc[:i], `/\`) {
		return nil, "", fmt.Errorf("%s: unsupported location scheme %q (only local folders so far)", loc, loc[:i])
	}
	st, err := fsstore.Open(loc)
	if err != nil {
		return nil, "", err
	}
	return mtimeStore{st}, "", nil
}

func openLatestForWrite(ctx context.Context, loc string) (*lance.Dataset, error) {
	st, root, err := writableLocation(loc, false)
	if err != nil {
		return nil, err
	}
	d, err := lance.Open(ctx, st, root, lance.OpenOptions{})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	return d, nil
}

// progress returns a progress printer for stderr when it is a terminal,
// else nil.
func progress(stderr io.Writer, what string) (fn func(done, total int64), end func()) {
	f, ok := stderr.(*os.File)
	if !ok {
		return nil, func() {}
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return nil, func() {}
	}
	var last time.Time
	printed := false
	fn = func(done, total int64) {
		if time.Since(last) < 100*time.Millisecond && done != total {
			return
		}
		last = time.Now()
		printed = true
		if total > 0 {
			fmt.Fprintf(f, "\r%s: %d / %d (%.0f%%)   ", what, done, total, 100*float64(done)/float64(total))
		} else {
			fmt.Fprintf(f, "\r%s: %d   ", what, done)
		}
	}
	return fn, func() {
		if printed {
			fmt.Fprintln(f)
		}
	}
}

// ipcInput is an Arrow IPC stream or file as a lance.RecordReader.
type ipcInput struct {
	schema *arrow.Schema
	stream *ipc.Reader
	file   *ipc.FileReader
	i      int
	cur    arrow.RecordBatch
	err    error
}

// openIPC reads an Arrow IPC file (magic "ARROW1") or stream from r.
func openIPC(r io.Reader) (*ipcInput, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	head, _ := br.Peek(6)
	if string(head) == "ARROW1" {
		data, err := io.ReadAll(br)
		if err != nil {
			return nil, err
		}
		f, err := ipc.NewFileReader(bytes.NewReader(data), ipc.WithAllocator(memory.DefaultAllocator))
		if err != nil {
			return nil, fmt.Errorf("reading Arrow IPC file: %w", err)
		}
		return &ipcInput{schema: f.Schema(), file: f}, nil
	}
	s, err := ipc.NewReader(br, ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return nil, fmt.Errorf("reading Arrow IPC stream: %w", err)
	}
	return &ipcInput{schema: s.Schema(), stream: s}, nil
}

func (in *ipcInput) Next() bool {
	if in.stream != nil {
		return in.stream.Next()
	}
	if in.cur != nil {
		in.cur.Release()
		in.cur = nil
	}
	if in.i >= in.file.NumRecords() {
		return false
	}
	in.cur, in.err = in.file.RecordBatch(in.i)
	if in.err == nil {
		in.cur.Retain()
	}
	in.i++
	return in.err == nil
}

func (in *ipcInput) RecordBatch() arrow.RecordBatch {
	if in.stream != nil {
		return in.stream.RecordBatch()
	}
	return in.cur
}

func (in *ipcInput) Err() error {
	if in.stream != nil {
		return in.stream.Err()
	}
	return in.err
}

func cmdWrite(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("write")
	mode := fs.String("mode", "", "create, append or overwrite")
	input := fs.String("input", "-", "Arrow IPC stream or file to read (`FILE`, - for stdin)")
	maxRows := fs.Int("max-rows-per-file", 0, "rows per data file (default 1Mi)")
	pos, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	loc, err := onePath(pos)
	if err != nil {
		return err
	}
	if *mode != "create" && *mode != "append" && *mode != "overwrite" {
		return usagef("--mode must be create, append or overwrite")
	}
	var r io.Reader = os.Stdin
	if *input != "-" {
		f, err := os.Open(*input)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	in, err := openIPC(r)
	if err != nil {
		return err
	}
	prog, end := progress(stderr, "rows written")
	defer end()
	opts := lance.WriteOptions{MaxRowsPerFile: *maxRows, Progress: prog}
	var d *lance.Dataset
	switch *mode {
	case "create", "overwrite":
		st, root, err := writableLocation(loc, true)
		if err != nil {
			return err
		}
		if *mode == "create" {
			d, err = lance.Create(ctx, st, root, in.schema, in, opts)
		} else {
			d, err = lance.Overwrite(ctx, st, root, in.schema, in, opts)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", loc, err)
		}
	case "append":
		base, err := openLatestForWrite(ctx, loc)
		if err != nil {
			return err
		}
		if d, err = base.Append(ctx, in, opts); err != nil {
			return fmt.Errorf("%s: %w", loc, err)
		}
	}
	n, err := d.CountRows(ctx)
	if err != nil {
		return err
	}
	end()
	fmt.Fprintf(stdout, "version %d, %d rows\n", d.Version(), n)
	return nil
}

func cmdDelete(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("delete")
	where := fs.String("where", "", "filter `EXPR` selecting the rows to delete")
	pos, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	loc, err := onePath(pos)
	if err != nil {
		return err
	}
	if *where == "" {
		return usagef("delete needs --where")
	}
	if _, err := expr.Parse(*where); err != nil {
		return exprError(*where, err)
	}
	d, err := openLatestForWrite(ctx, loc)
	if err != nil {
		return err
	}
	nd, stats, err := d.Delete(ctx, *where)
	if err != nil {
		return fmt.Errorf("%s: %w", loc, err)
	}
	fmt.Fprintf(stdout, "version %d, %d rows deleted (%d fragments updated, %d removed)\n",
		nd.Version(), stats.RowsDeleted, stats.FragmentsUpdated, stats.FragmentsRemoved)
	return nil
}

// exprError shows a syntax error with a caret under the offending token.
func exprError(src string, err error) error {
	var se *expr.SyntaxError
	if errors.As(err, &se) {
		return usagef("--where: %v\n%s", err, se.Caret(src))
	}
	return usagef("--where: %v", err)
}

func cmdCompact(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("compact")
	target := fs.Int("target-rows", 0, "target rows per fragment (default 1Mi)")
	keep := fs.Bool("keep-deletions", false, "do not rewrite fragments just to drop deleted rows")
	pos, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	loc, err := onePath(pos)
	if err != nil {
		return err
	}
	d, err := openLatestForWrite(ctx, loc)
	if err != nil {
		return err
	}
	prog, end := progress(stderr, "rows rewritten")
	defer end()
	nd, stats, err := d.Compact(ctx, lance.CompactOptions{TargetRowsPerFragment: *target, KeepDeletions: *keep, Progress: prog})
	if err != nil {
		return fmt.Errorf("%s: %w", loc, err)
	}
	end()
	fmt.Fprintf(stdout, "version %d, %d fragments replaced by %d (%d rows rewritten)\n",
		nd.Version(), stats.FragmentsRemoved, stats.FragmentsAdded, stats.RowsRewritten)
	return nil
}

func cmdTag(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("tag needs create, delete or list")
	}
	action := args[0]
	fs := newFlagSet("tag " + action)
	version := fs.Uint64("version", 0, "version `N` to tag (default: latest)")
	pos, err := parseArgs(fs, args[1:], stderr)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("missing PATH")
	}
	d, err := openLatestForWrite(ctx, pos[0])
	if err != nil {
		return err
	}
	switch action {
	case "list":
		if len(pos) != 1 {
			return usagef("tag list takes only PATH")
		}
		tags, err := d.ListTags(ctx)
		if err != nil {
			return err
		}
		for _, t := range tags {
			fmt.Fprintf(stdout, "%s\t%d\n", t.Name, t.Version)
		}
		return nil
	case "create", "delete":
		if len(pos) != 2 {
			return usagef("tag %s takes PATH NAME", action)
		}
		if action == "create" {
			return d.CreateTag(ctx, pos[1], *version)
		}
		return d.DeleteTag(ctx, pos[1])
	}
	return usagef("unknown tag action %q (create, delete or list)", action)
}

func cmdRestore(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("restore")
	version := fs.Uint64("version", 0, "version `N` to restore")
	pos, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	loc, err := onePath(pos)
	if err != nil {
		return err
	}
	if *version == 0 {
		return usagef("restore needs --version N")
	}
	d, err := openLatestForWrite(ctx, loc)
	if err != nil {
		return err
	}
	nd, err := d.Restore(ctx, *version)
	if err != nil {
		return fmt.Errorf("%s: %w", loc, err)
	}
	fmt.Fprintf(stdout, "version %d restores version %d\n", nd.Version(), *version)
	return nil
}

func cmdCleanup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cleanup")
	olderThan := fs.String("older-than", "", "remove versions older than `DURATION` (e.g. 14d, 36h)")
	retain := fs.Int("retain-versions", 0, "always keep this many newest versions")
	pos, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	loc, err := onePath(pos)
	if err != nil {
		return err
	}
	if *olderThan == "" {
		return usagef("cleanup needs --older-than DURATION")
	}
	dur, err := lance.ParseDuration(*olderThan)
	if err != nil {
		return usagef("--older-than: %v", err)
	}
	st, root, err := writableLocation(loc, false)
	if err != nil {
		return err
	}
	prog, end := progress(stderr, "files examined")
	defer end()
	stats, err := lance.CleanupOldVersions(ctx, st, root, dur, lance.CleanupOptions{RetainVersions: *retain, Progress: prog, Warn: warnTo(stderr)})
	if err != nil {
		return fmt.Errorf("%s: %w", loc, err)
	}
	end()
	fmt.Fprintf(stdout, "removed %d versions, %d data files, %d deletion files, %d transaction files, %d index files (%d bytes)\n",
		stats.VersionsRemoved, stats.DataFilesRemoved, stats.DeletionFilesRemoved, stats.TransactionFilesRemoved,
		stats.IndexFilesRemoved, stats.BytesRemoved)
	return nil
}

// catWhere prints the rows of d matching where, projected to cols (all
// when empty), at most limit rows (no limit when negative).
func catWhere(ctx context.Context, d *lance.Dataset, loc string, cols []string, limit int64, where string, stdout io.Writer) error {
	e, err := expr.Parse(where)
	if err != nil {
		return exprError(where, err)
	}
	b, err := e.Bind(d.ArrowSchema())
	if err != nil {
		return usagef("--where: %v", err)
	}
	out := cols
	if len(out) == 0 {
		for _, f := range d.ArrowSchema().Fields() {
			out = append(out, f.Name)
		}
	}
	read := append([]string(nil), out...)
	for _, c := range b.Columns() {
		found := false
		for _, o := range read {
			found = found || o == c
		}
		if !found {
			read = append(read, c)
		}
	}
	sc, err := d.Scan(ctx, lance.ScanOptions{Columns: read})
	if err != nil {
		return fmt.Errorf("%s: %w", loc, err)
	}
	defer sc.Close()
	bw := bufio.NewWriterSize(stdout, 256<<10)
	w := jsonl.NewWriter(bw)
	var mask []bool
	var printed int64
	for sc.Next() && (limit < 0 || printed < limit) {
		rec := sc.Record()
		if mask, err = b.Filter(rec, mask); err != nil {
			return err
		}
		for i := 0; i < len(mask) && (limit < 0 || printed < limit); {
			if !mask[i] {
				i++
				continue
			}
			j := i
			for j < len(mask) && mask[j] && (limit < 0 || printed+int64(j-i) < limit) {
				j++
			}
			part := rec.NewSlice(int64(i), int64(j))
			proj := array.NewRecordBatch(arrow.NewSchema(part.Schema().Fields()[:len(out)], nil), part.Columns()[:len(out)], part.NumRows())
			err := w.Write(proj)
			proj.Release()
			part.Release()
			if err != nil {
				return err
			}
			printed += int64(j - i)
			i = j
		}
	}
	if err := sc.Err(); err != nil {
		bw.Flush()
		return fmt.Errorf("%s: %w", loc, err)
	}
	return bw.Flush()
}
