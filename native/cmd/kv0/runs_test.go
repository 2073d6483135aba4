package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kv0/kv0/core/tracking"
)

// TestRunsFilters: kv0 runs --tag/--archived/--param select the runs a
// filter written out by hand selects, on the demo repository.
func TestRunsFilters(t *testing.T) {
	ctx := context.Background()
	repo := filepath.Join(t.TempDir(), "repo")
	kv0 := func(args ...string) (string, int) {
		var out, errOut bytes.Buffer
		code := run(ctx, args, &out, &errOut)
		if code == 1 {
			t.Fatalf("kv0 %v: %s", args, errOut.String())
		}
		return out.String(), code
	}
	kv0("demo", repo, "--runs", "2", "--steps", "50")
	all := func() []tracking.RunInfo {
		out, _ := kv0("runs", repo, "--json")
		var runs []tracking.RunInfo
		if err := json.Unmarshal([]byte(out), &runs); err != nil {
			t.Fatal(err)
		}
		return runs
	}()
	params := map[string]map[string]any{}
	for _, r := range all {
		out, _ := kv0("params", repo, r.ID, "--json")
		var p map[string]any
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatal(err)
		}
		params[r.ID] = p
	}
	for _, c := range []struct {
		flags []string
		keep  func(r tracking.RunInfo) bool
	}{
		{[]string{"--tag", all[0].Tags[0]}, func(r tracking.RunInfo) bool { return slices.Contains(r.Tags, all[0].Tags[0]) }},
		{[]string{"--tag", all[0].Tags[0], "--tag", "baseline"}, func(r tracking.RunInfo) bool {
			return slices.Contains(r.Tags, all[0].Tags[0]) && slices.Contains(r.Tags, "baseline")
		}},
		{[]string{"--archived", "false"}, func(r tracking.RunInfo) bool { return !r.Archived }},
		{[]string{"--archived", "true"}, func(r tracking.RunInfo) bool { return r.Archived }},
		{[]string{"--param", "batch_size>=128"}, func(r tracking.RunInfo) bool { v, ok := params[r.ID]["batch_size"].(float64); return ok && v >= 128 }},
		{[]string{"--param", "model.name=resnet18", "--param", "amp=true"}, func(r tracking.RunInfo) bool {
			return params[r.ID]["model.name"] == "resnet18" && params[r.ID]["amp"] == true
		}},
	} {
		var want []string
		for _, r := range all {
			if c.keep(r) {
				want = append(want, r.ID)
			}
		}
		out, _ := kv0(append([]string{"runs", repo, "--json"}, c.flags...)...)
		var got []tracking.RunInfo
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range got {
			ids = append(ids, r.ID)
		}
		if !slices.Equal(ids, want) {
			t.Errorf("%v: %v, want %v", c.flags, ids, want)
		}
	}
	for _, bad := range [][]string{{"--archived", "maybe"}, {"--param", "lr"}} {
		if _, code := kv0(append([]string{"runs", repo}, bad...)...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)", bad, code)
		}
	}
	// A status that no run can have is an error, not an empty list.
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"runs", repo, "--status", "finshed"}, &out, &errOut); code != 2 || out.Len() != 0 ||
		!strings.Contains(errOut.String(), `--status: "finshed"`) {
		t.Errorf("--status finshed: exit %d, %q %q", code, out.String(), errOut.String())
	}
	for _, s := range []string{"running", "finished", "failed", "aborted", "crashed"} {
		if _, code := kv0("runs", repo, "--status", s); code != 0 {
			t.Errorf("--status %s: exit %d", s, code)
		}
	}
}
