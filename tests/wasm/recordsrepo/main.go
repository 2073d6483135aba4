// Command recordsrepo writes the tracking repository with records tables
// that tests/wasm/node.test.mjs reads (the CLI writes no records):
//
//	go run ./tests/wasm/recordsrepo DIR [FORMAT]
//
// FORMAT is the data file format of its tables: 2.2 (the default) or 2.1.
// Runs a and b live, c deleted after writing records. Table evals:
// (a, i1) written twice (the second wins), (a, i2), (b, i1), (b, i2) then
// deleted, ("", shared) of no run, (a, ids) whose data has a series_id
// key, (c, i1) of the deleted run. Table samples-2: (b, s). It prints
// {"a": ID, "b": ID, "c": ID}.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/kv0/kv0/core/tracking"
	"github.com/kv0/kv0/native/fsstore"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "recordsrepo:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 2 && len(os.Args) != 3 {
		return fmt.Errorf("usage: recordsrepo DIR [FORMAT]")
	}
	format := ""
	if len(os.Args) == 3 {
		format = os.Args[2]
	}
	ctx := context.Background()
	st, err := fsstore.Open(os.Args[1])
	if err != nil {
		return err
	}
	r, err := tracking.OpenRepo(ctx, st, "", tracking.RepoOptions{FlushInterval: -1, DataFormat: format})
	if err != nil {
		return err
	}
	ids := map[string]string{}
	for _, name := range []string{"a", "b", "c"} {
		run, err := r.StartRun(ctx, tracking.RunSpec{Name: name})
		if err != nil {
			return err
		}
		if err := run.Track(1, "loss"); err != nil {
			return err
		}
		ids[name] = run.ID()
	}
	puts := []struct {
		table, run, item string
		data             any
	}{
		{"evals", ids["a"], "i1", map[string]any{"score": 0.25, "v": 1}},
		{"evals", ids["a"], "i2", map[string]any{"prompt": "2+2 <b> & \"q\"", "answer": "4"}},
		{"evals", ids["b"], "i1", []any{1, "two", nil, true}},
		{"evals", ids["b"], "i2", "to be deleted"},
		{"evals", "", "shared", 42},
		{"evals", ids["a"], "ids", map[string]any{"series_id": 7, "nested": map[string]any{"series_id": 8}}},
		{"evals", ids["c"], "i1", "of a deleted run"},
		{"samples-2", ids["b"], "s", map[string]any{"text": "é"}},
	}
	for _, p := range puts {
		if err := r.PutRecord(p.table, p.run, p.item, p.data); err != nil {
			return err
		}
	}
	if err := r.Flush(ctx); err != nil {
		return err
	}
	if err := r.PutRecord("evals", ids["a"], "i1", map[string]any{"score": 0.75, "v": 2}); err != nil {
		return err
	}
	if err := r.DeleteRecord("evals", ids["b"], "i2"); err != nil {
		return err
	}
	if err := r.Flush(ctx); err != nil {
		return err
	}
	if err := r.DeleteRuns(ctx, []string{ids["c"]}); err != nil {
		return err
	}
	if err := r.Close(); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(ids)
}
