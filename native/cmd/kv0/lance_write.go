package main

// The write side of "kv0 lance": write, delete, compact, tag, restore,
// cleanup, and cat --where.
//
//	kv0 lance write   PATH --mode create|append|overwrite [--input FILE] [--format 2.1|2.2]
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
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/expr"
	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/native/fsstore"
	"github.com/kv0/kv0/native/location"
)

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

// writableLocation opens PATH for writing; create makes a missing local
// folder. Local folders get modification times (mtimeStore); read-only
// locations are refused before anything is written.
func writableLocation(loc string, create bool) (store.Store, string, error) {
	if location.ReadOnly(loc, locationOptions) {
		return nil, "", fmt.Errorf("%s: the location is read-only", loc)
	}
	var st store.Store
	var root string
	var err error
	if create {
		lo := locationOptions
		lo.Create = true
		st, root, err = location.Open(context.Background(), loc, lo)
	} else {
		st, root, err = openLocation(loc)
	}
	if err != nil {
		return nil, "", err
	}
	if fs, ok := st.(*fsstore.Store); ok {
		return mtimeStore{fs}, root, nil
	}
	return st, root, nil
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
	maxRows := intFlag(fs, "max-rows-per-file", 0, 0, maxRowCount, "`N` rows per data file, up to 2^32-1 (0: the default, 1Mi)")
	var format string
	formatVar(fs, &format, "data file format `F`, 2.1 (read by lance 8 and older) or 2.2 (default for a new dataset; append and overwrite keep the dataset's)")
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
	opts := lance.WriteOptions{MaxRowsPerFile: *maxRows, Progress: prog, DataFormat: format}
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
	target := intFlag(fs, "target-rows", 0, 0, maxRowCount, "target `N` rows per fragment, up to 2^32-1 (0: the default, 1Mi)")
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
	if strings.HasPrefix(action, "-") {
		// Flags before the action: only help makes sense there.
		fs := newFlagSet("tag")
		fs.Uint64("version", 0, "version `N` to tag (create; default: latest)")
		if _, err := parseArgs(fs, args, stderr); err != nil {
			return err
		}
		return usagef("tag needs create, delete or list before its flags")
	}
	fs := newFlagSet("tag " + action)
	var version uint64
	versionVar(fs, &version, "version", "version `N` to tag, from 1 (default: latest)")
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
			return d.CreateTag(ctx, pos[1], version)
		}
		return d.DeleteTag(ctx, pos[1])
	}
	return usagef("unknown tag action %q (create, delete or list)", action)
}

func cmdRestore(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("restore")
	var version uint64
	versionVar(fs, &version, "version", "version `N` to restore, from 1")
	pos, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	loc, err := onePath(pos)
	if err != nil {
		return err
	}
	if version == 0 {
		return usagef("restore needs --version N")
	}
	d, err := openLatestForWrite(ctx, loc)
	if err != nil {
		return err
	}
	nd, err := d.Restore(ctx, version)
	if err != nil {
		return fmt.Errorf("%s: %w", loc, err)
	}
	fmt.Fprintf(stdout, "version %d restores version %d\n", nd.Version(), version)
	return nil
}

func cmdCleanup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cleanup")
	olderThan := durationFlag(fs, "older-than", 0, 0, 0, "remove versions older than `DURATION` (e.g. 14d, 36h; 0 leaves only the latest and tagged ones)")
	retain := intFlag(fs, "retain-versions", 0, 0, math.MaxInt32, "always keep the `N` newest versions (0: no minimum)")
	pos, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	loc, err := onePath(pos)
	if err != nil {
		return err
	}
	if !flagGiven(fs, "older-than") {
		return usagef("cleanup needs --older-than DURATION")
	}
	dur := *olderThan
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
