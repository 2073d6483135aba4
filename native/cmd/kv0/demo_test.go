package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kv0/kv0/core/tracking"
)

// makeRecipe returns the kv0 commands of the Makefile's recipe of target
// (the words after "$(KV0) " of each line).
func makeRecipe(t *testing.T, target string) []string {
	t.Helper()
	mk, err := os.ReadFile(filepath.Join("..", "..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var recipe []string
	in := false
	for _, line := range strings.Split(string(mk), "\n") {
		switch {
		case strings.HasPrefix(line, target+":"):
			in = true
		case in && strings.HasPrefix(line, "\t"):
			if cmd, ok := strings.CutPrefix(strings.TrimSpace(line), "$(KV0) "); ok {
				recipe = append(recipe, cmd)
			}
		case in:
			in = false
		}
	}
	return recipe
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestMakeRunPrintsEachSummaryOnce runs the kv0 commands of the Makefile's
// `run` recipe in-process (a smaller demo) and checks that no line of
// output is printed by two of them: the demo prints the runs and each
// run's series, so the recipe must not print them again. Its last command
// serves the demo with live runs until stopped: it is stopped once it has
// printed its URL and its live runs. `make demo` is `make run` without
// that last command.
func TestMakeRunPrintsEachSummaryOnce(t *testing.T) {
	t.Setenv("KV0_WAL_DIR", t.TempDir())
	recipe := makeRecipe(t, "run")
	if len(recipe) < 2 || !strings.HasPrefix(recipe[0], "demo ") || !strings.Contains(recipe[len(recipe)-1], "--live") {
		t.Fatalf("the run recipe's kv0 commands: %q", recipe)
	}
	if demo := makeRecipe(t, "demo"); !slices.Equal(demo, recipe[:len(recipe)-1]) {
		t.Errorf("make demo runs %q, want make run's %q without serving", demo, recipe[:len(recipe)-1])
	}
	demo := filepath.Join(t.TempDir(), "demo")
	webDir, wasmDir := t.TempDir(), t.TempDir() // make run serves what make web built
	seen := map[string]int{}                    // line -> index of the command that printed it
	for i, cmd := range recipe {
		cmd = strings.NewReplacer("$(DEMO_FLAGS)", "--runs 1 --steps 600", "$(DEMO)", demo, "$(LISTEN)", "127.0.0.1:0",
			"$(WEB_OUT)", webDir, "$(WASM_OUT)", wasmDir).Replace(cmd)
		args := shellWords(t, cmd)
		var out string
		if !slices.Contains(args, "--live") {
			code, o, errOut := runCLI(args...)
			if code != 0 {
				t.Fatalf("kv0 %s: exit %d: %s", cmd, code, errOut)
			}
			out = o
		} else {
			ctx, stop := context.WithCancel(context.Background())
			var o, e syncBuffer
			codes := make(chan int, 1)
			go func() { codes <- run(ctx, args, &o, &e) }()
			deadline := time.Now().Add(30 * time.Second)
			for !strings.Contains(o.String(), "demo: the runs live-") && time.Now().Before(deadline) {
				select {
				case code := <-codes:
					stop()
					t.Fatalf("kv0 %s: exit %d before serving: %s", cmd, code, e.String())
				case <-time.After(10 * time.Millisecond): // polling the command's output
				}
			}
			stop()
			if code := <-codes; code != 0 {
				t.Fatalf("kv0 %s: exit %d: %s", cmd, code, e.String())
			}
			out = o.String()
			if !strings.Contains(out, "kv0 serve: "+demo+" at http://127.0.0.1:") {
				t.Errorf("kv0 %s printed no URL:\n%s", cmd, out)
			}
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
