package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kv0/kv0/core/tracking"
	"github.com/kv0/kv0/httpstore/api"
	"github.com/kv0/kv0/native/fsstore"
)

// startServeProcess runs `kv0 serve dir` as a process of its own (the
// test binary as kv0, see TestHelperServe) and returns its URL; the
// process is killed when the test ends.
func startServeProcess(t *testing.T, dir string) string {
	t.Helper()
	args := []string{"serve", dir, "--listen", "127.0.0.1:0"}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperServe$")
	cmd.Env = append(os.Environ(), serveHelperEnv+"="+strings.Join(args, "\x1f"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if i := strings.Index(sc.Text(), "http://"); i >= 0 {
				urls <- strings.TrimSuffix(strings.Fields(sc.Text()[i:])[0], "/")
			}
		}
		close(urls)
		_ = cmd.Wait()
		close(exited)
	}()
	select {
	case u, ok := <-urls:
		if !ok {
			t.Fatalf("kv0 serve printed no URL: %s", stderr.String())
		}
		return u
	case <-time.After(30 * time.Second):
		t.Fatalf("kv0 serve printed no URL in 30s: %s", stderr.String())
	}
	return ""
}

// servedAnswer is a status, the headers that say how it may be cached, and a
// body.
type servedAnswer struct {
	code       int
	etag, cc   string
	body       []byte
	retryAfter string
}

func serveGet(t *testing.T, c *http.Client, url string) servedAnswer {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	return servedAnswer{code: resp.StatusCode, etag: resp.Header.Get("ETag"), cc: resp.Header.Get("Cache-Control"), body: b,
		retryAfter: resp.Header.Get("Retry-After")}
}

// TestServeAfterPurgeAndRewrite runs kv0 serve as a process over a folder
// and rewrites the folder under it: the sequence (a secret put,
// overwritten by a delete, read at an explicit version, then purged), the
// dataset deleted and written again with as many versions and with more,
// the repository's tables cleaned up, a run deleted and purged, and the
// repository deleted and written again. After every step each route
// answers what a handler with empty caches answers over the same folder,
// a purged secret is never served, and no answer is immutable.
func TestServeAfterPurgeAndRewrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "p.lance")
	cli(t, "kv", "put", p, "secret", "PASSWORD123")
	cli(t, "kv", "put", p, "other", "ok")
	cli(t, "kv", "delete", p, "secret")
	cli(t, "demo", dir, "--runs", "1", "--steps", "300")
	base := startServeProcess(t, dir)
	client := &http.Client{Transport: &http.Transport{}}
	st, err := fsstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The secret as the rows answer it: JSON Lines hold bytes in base64,
	// Arrow streams as they are.
	secrets := [][]byte{[]byte("PASSWORD123"), []byte(base64.StdEncoding.EncodeToString([]byte("PASSWORD123")))}
	var runs, series []string // every run and series id seen
	seen := map[string]bool{}
	purged := false
	check := func(step string) {
		t.Helper()
		ref := api.New(st, "", api.Options{Files: true})
		defer ref.Close()
		refGet := func(target string) servedAnswer {
			w := httptest.NewRecorder()
			ref.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
			return servedAnswer{code: w.Code, body: w.Body.Bytes()}
		}
		// The ids to ask for: those the fresh handler lists now, and every
		// one seen before (gone ones must be 404 now).
		var listed []tracking.RunInfo
		if a := refGet("/api/v1/runs"); a.code == 200 {
			if err := json.Unmarshal(a.body, &listed); err != nil {
				t.Fatal(err)
			}
		}
		for _, in := range listed {
			if !seen[in.ID] {
				seen[in.ID] = true
				runs = append(runs, in.ID)
			}
			var ss []struct {
				ID string `json:"series_id"`
			}
			if err := json.Unmarshal(refGet("/api/v1/runs/"+in.ID+"/series").body, &ss); err != nil {
				t.Fatal(err)
			}
			for _, s := range ss {
				if !seen[s.ID] {
					seen[s.ID] = true
					series = append(series, s.ID)
				}
			}
		}
		targets := []string{"/api/v1/datasets/p.lance/rows", "/api/v1/datasets/p.lance/rows?format=arrow", "/api/v1/datasets/p.lance/info",
			"/api/v1/datasets/p.lance/log", "/api/v1/runs", "/api/v1/versions", "/api/v1/series?newest=3", "/api/v1/records"}
		for v := 1; v <= 12; v++ {
			targets = append(targets, fmt.Sprintf("/api/v1/datasets/p.lance/rows?version=%d", v), fmt.Sprintf("/api/v1/datasets/p.lance/info?version=%d", v))
		}
		for _, id := range runs {
			targets = append(targets, "/api/v1/runs/"+id, "/api/v1/runs/"+id+"/params", "/api/v1/runs/"+id+"/series")
		}
		for _, id := range series {
			targets = append(targets, "/api/v1/series/points?ids="+id, "/api/v1/stats?ids="+id)
		}
		if entries, err := os.ReadDir(filepath.Join(p, "_versions")); err == nil {
			for _, e := range entries {
				targets = append(targets, "/files/p.lance/_versions/"+e.Name())
			}
		}
		for _, target := range targets {
			got := serveGet(t, client, base+target)
			want := refGet(target)
			if got.code != want.code || !bytes.Equal(got.body, want.body) {
				i := 0
				for i < len(got.body) && i < len(want.body) && got.body[i] == want.body[i] {
					i++
				}
				i = max(0, i-100)
				t.Fatalf("%s: %s: kv0 serve answers\n%d …%.400s\na handler with empty caches\n%d …%.400s", step, target,
					got.code, got.body[min(i, len(got.body)):], want.code, want.body[min(i, len(want.body)):])
			}
			if strings.Contains(got.cc, "immutable") {
				t.Fatalf("%s: %s: Cache-Control %q", step, target, got.cc)
			}
			for _, s := range secrets {
				if purged && strings.Contains(target, "p.lance") && bytes.Contains(got.body, s) {
					t.Fatalf("%s: %s serves the purged secret: %.400s", step, target, got.body)
				}
			}
		}
	}

	check("start")
	// The reproduction: version 3 holds the secret's put (the
	// log keeps it until a purge), and the server has read it.
	v3 := serveGet(t, client, base+"/api/v1/datasets/p.lance/rows?version=3")
	if v3.code != 200 || !bytes.Contains(v3.body, secrets[1]) {
		t.Fatalf("rows?version=3 before the purge: %d %s", v3.code, v3.body)
	}
	cli(t, "kv", "purge", p)
	purged = true
	check("kv purge")
	if a := serveGet(t, client, base+"/api/v1/datasets/p.lance/rows?version=3"); a.code != 404 {
		t.Fatalf("rows?version=3 after the purge: %d %s", a.code, a.body)
	}

	// Deleted and written again with as many commands (so versions of
	// the same numbers), then with more.
	rewrite := func(puts int) {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
		for i := range puts {
			cli(t, "kv", "put", p, fmt.Sprintf("new-%d", i), fmt.Sprintf("v%d", i))
		}
		cli(t, "kv", "delete", p, "new-0")
	}
	rewrite(2)
	check("p.lance deleted and written again")
	rewrite(6)
	check("p.lance deleted and written again, larger")
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
	check("p.lance deleted")

	// The repository: a cleanup of its metrics table, a run deleted and
	// purged, then every table deleted and the demo written again.
	cli(t, "lance", "cleanup", filepath.Join(dir, tracking.MetricsTable), "--older-than", "0s")
	check("metrics cleaned up")
	ctx := context.Background()
	r, err := tracking.OpenRepo(ctx, st, "", tracking.RepoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteRuns(ctx, runs[:1]); err != nil {
		t.Fatal(err)
	}
	if err := r.Purge(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	check("a run deleted and purged")
	for _, name := range []string{tracking.RunsTable, tracking.ParamsTable, tracking.SeriesTable, tracking.MetricsTable, tracking.RecordsDir} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	cli(t, "demo", dir, "--runs", "1", "--steps", "120")
	check("the repository deleted and written again")
}
