package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kv0/kv0/core/tracking"
)

// TestMakeRunPrintsEachSummaryOnce runs the kv0 commands of the Makefile's
// `run` recipe in-process (a smaller demo) and checks that no line of
// output is printed by two of them: the demo prints the runs and each
// run's series, so the recipe must not print them again.
func TestMakeRunPrintsEachSummaryOnce(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join("..", "..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var recipe []string
	in := false
	for _, line := range strings.Split(string(mk), "\n") {
		switch {
		case strings.HasPrefix(line, "run:"):
			in = true
		case in && strings.HasPrefix(line, "\t"):
			if cmd, ok := strings.CutPrefix(strings.TrimSpace(line), "$(KV0) "); ok {
				recipe = append(recipe, cmd)
			}
		case in:
			in = false
		}
	}
	if len(recipe) == 0 || !strings.HasPrefix(recipe[0], "demo ") {
		t.Fatalf("the run recipe's kv0 commands: %q", recipe)
	}
	demo := filepath.Join(t.TempDir(), "demo")
	seen := map[string]int{} // line -> index of the command that printed it
	for i, cmd := range recipe {
		cmd = strings.NewReplacer("$(DEMO_FLAGS)", "--runs 1 --steps 600", "$(DEMO)", demo).Replace(cmd)
		args := shellWords(t, cmd)
		code, out, errOut := runCLI(args...)
		if code != 0 {
			t.Fatalf("kv0 %s: exit %d: %s", cmd, code, errOut)
		}
		if i == 0 && (!strings.Contains(out, "resnet-cifar10-1") || !strings.Contains(out, "NON-FINITE")) {
			t.Errorf("the demo prints no summaries:\n%s", out)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			if j, ok := seen[line]; ok && j != i {
				t.Errorf("printed by %q and again by %q: %s", recipe[j], recipe[i], line)
			}
			seen[line] = i
		}
	}
}

// shellWords splits a recipe line into words, honouring single quotes.
func shellWords(t *testing.T, s string) []string {
	var out []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case quoted && r == '\'':
			quoted = false
		case quoted:
			cur.WriteRune(r)
		case r == '\'':
			quoted, inWord = true, true
		case r == ' ' || r == '\t':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		case strings.ContainsRune(`"$\`+"`", r):
			t.Fatalf("recipe line %q needs a real shell", s)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

// TestDemoTimestamps: every point of every demo run lies between the run's
// creation and its end, and none lies in the future.
func TestDemoTimestamps(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "demo")
	if code, _, errOut := runCLI("demo", dir, "--runs", "1", "--steps", "700"); code != 0 {
		t.Fatalf("demo: %s", errOut)
	}
	after := time.Now()
	r, err := openRepo(ctx, dir, false, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	runs, err := r.Runs(ctx, tracking.RunFilter{})
	if err != nil || len(runs) != len(demoExperiments) {
		t.Fatalf("%d runs, %v", len(runs), err)
	}
	for _, in := range runs {
		series, err := r.AllSeries(ctx, in.ID)
		if err != nil || len(series) == 0 {
			t.Fatalf("%s: %d series, %v", in.Name, len(series), err)
		}
		ids := make([]tracking.SeriesID, len(series))
		for i, s := range series {
			ids[i] = s.ID
		}
		data, err := r.ReadMany(ctx, ids, tracking.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if in.EndedAt.Before(in.CreatedAt) || in.EndedAt.After(after) {
			t.Errorf("%s: created %v, ended %v", in.Name, in.CreatedAt, in.EndedAt)
		}
		for i, m := range data {
			for j, ts := range m.Timestamps {
				if ts.Before(in.CreatedAt) || ts.After(in.EndedAt) {
					t.Fatalf("%s/%s: point %d at %v, outside the run [%v, %v]", in.Name, series[i].Name, j, ts, in.CreatedAt, in.EndedAt)
				}
			}
		}
	}
}
