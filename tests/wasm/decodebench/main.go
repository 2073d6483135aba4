// Command decodebench times the decoding of one series read with no I/O:
// it copies a repository folder into a memory store, then reads the series
// with tracking.Repo.ReadMany N times and prints the best time, and the
// best time of the conversion wasm/repo.go makes for JavaScript (columns to
// one []float64). Built natively and for js/wasm (run by Node), it gives
// the wasm/native ratio of the decoder alone (docs/benchmarks.md):
//
//	go run ./tests/wasm/decodebench DIR SERIES_ID
//	GOOS=js GOARCH=wasm go build -tags kv0_readonly -o bin/decodebench.wasm ./tests/wasm/decodebench
//	node "$(go env GOROOT)/lib/wasm/wasm_exec_node.js" bin/decodebench.wasm DIR SERIES_ID
package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/kv0/kv0/core/inspect"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/tracking"
)

var sink []float64

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: decodebench DIR SERIES_ID [N]")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2], os.Args[3:]); err != nil {
		fmt.Fprintln(os.Stderr, "decodebench:", err)
		os.Exit(1)
	}
}

func run(root, id string, rest []string) error {
	ctx := context.Background()
	sid, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return err
	}
	n := 20
	if len(rest) > 0 {
		if n, err = strconv.Atoi(rest[0]); err != nil {
			return err
		}
	}
	st := store.NewMemory()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		return st.Put(ctx, filepath.ToSlash(rel), b)
	})
	if err != nil {
		return err
	}
	r, err := tracking.OpenRepo(ctx, st, "", tracking.RepoOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer r.Close()
	ids := []tracking.SeriesID{tracking.SeriesID(sid)}
	if _, err := r.ReadMany(ctx, ids, tracking.ReadOptions{}); err != nil {
		return err
	}
	var read, conv time.Duration
	points := 0
	for range n {
		t := time.Now()
		d, err := r.ReadMany(ctx, ids, tracking.ReadOptions{})
		if err != nil {
			return err
		}
		if el := time.Since(t); read == 0 || el < read {
			read = el
		}
		t = time.Now()
		sink = columns(d[0])
		if el := time.Since(t); conv == 0 || el < conv {
			conv = el
		}
		points = d[0].Len()
	}
	fmt.Printf(`{"goos":%q,"points":%d,"read_ms":%.3f,"convert_ms":%.3f}`+"\n", runtime.GOOS, points, read.Seconds()*1000, conv.Seconds()*1000)
	return nil
}

// columns is repoRead's conversion (inspect.PointColumns) into a new
// slice.
func columns(m tracking.MetricData) []float64 {
	buf := make([]float64, 4*m.Len())
	inspect.PointColumns(buf, m)
	return buf
}
