package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kv0/kv0/native/location"
)

// serveInProcess runs `kv0 serve ROOT --listen 127.0.0.1:0` in process until
// the test ends and returns its base URL.
func serveInProcess(t *testing.T, root string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var errOut bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", root, "--listen", "127.0.0.1:0"}, pw, &errOut)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("kv0 serve %s: exit %d: %s", root, code, errOut.String())
		}
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if i := strings.Index(sc.Text(), " at http://"); i >= 0 && len(urls) == 0 {
				urls <- strings.TrimSuffix(strings.TrimSpace(sc.Text()[i+4:]), "/")
			}
		}
		close(urls)
	}()
	select {
	case u, ok := <-urls:
		if !ok {
			t.Fatalf("kv0 serve %s printed no URL: %s", root, errOut.String())
		}
		return u
	case <-time.After(time.Minute):
		t.Fatalf("kv0 serve %s printed no URL within a minute", root)
	}
	return ""
}

// uploadDir copies every file under dir to the location uri, byte for
// byte, so the remote repository is the local one (same file names).
func uploadDir(t *testing.T, dir, uri string) {
	t.Helper()
	ctx := context.Background()
	st, root, err := location.Open(ctx, uri, location.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		return st.Put(ctx, root+filepath.ToSlash(rel), b)
	})
	if err != nil {
		t.Fatalf("copying %s to %s: %v", dir, uri, err)
	}
}

// apiAnswer is what a request's answer must match on two servers.
type apiAnswer struct {
	status  int
	headers map[string]string
	body    []byte
}

var comparedHeaders = []string{"Content-Type", "Content-Length", "Content-Range", "Cache-Control", "ETag", "Vary", "Accept-Ranges"}

func getAnswer(t *testing.T, base, path string, header map[string]string) apiAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	a := apiAnswer{status: resp.StatusCode, headers: map[string]string{}, body: b}
	for _, h := range comparedHeaders {
		a.headers[h] = resp.Header.Get(h)
	}
	return a
}

// TestServeOnObjectStores serves the same repository (a tracking
// repository written by kv0 demo and the Go API, a dataset kv0 wrote with
// versions and a tag, lance 8's sample datasets and lance 12's tables of
// format 2.2) from a local folder and, copied byte for byte, from gs://
// (fake-gcs-server), az:// (Azurite) and s3:// (gofakes3), each with
// `kv0 serve`, and checks that
// every route answers the same status, headers and bytes on each: rows
// (JSON Lines and Arrow), info, log, runs with filters, run, params,
// series, points, stats, versions, files with ranges and conditional
// requests, and the errors of missing datasets, runs and files.
func TestServeOnObjectStores(t *testing.T) {
	sr := newServeRoot(t)
	startFakeGCS(t, "kv0-serve")
	startAzurite(t, "kv0-serve")
	fakeS3(t)
	roots := []string{"gs://kv0-serve/some/repo", "az://kv0-serve/some/repo", "s3://kv0-test/some/repo"}
	for _, r := range roots {
		uploadDir(t, sr.dir, r)
	}
	local := serveInProcess(t, sr.dir)

	type request struct {
		path   string
		header map[string]string
	}
	var reqs []request
	add := func(path string, header map[string]string) { reqs = append(reqs, request{path, header}) }
	for _, ds := range sr.datasets {
		if ds == "v22/pages.lance" {
			continue // 30 MB of rows a query, and nothing the other 2.2 tables lack for comparing stores
		}
		p := "/api/v1/datasets/" + ds
		for _, q := range []string{"", "?version=1", "?format=arrow", "?limit=7", "?where=" + url.QueryEscape("id < 30 OR s IS NULL"), "?tag=v-one"} {
			add(p+"/rows"+q, nil)
		}
		add(p+"/info", nil)
		add(p+"/info?version=1", nil)
		add(p+"/log", nil)
	}
	add("/api/v1/datasets/missing.lance/info", nil)
	add("/api/v1/datasets/../x/info", nil)
	for _, q := range []string{"", "?experiment=bert-sst2", "?archived=true", "?tag=baseline", "?param=" + url.QueryEscape("optimizer.lr<0.01")} {
		add("/api/v1/runs"+q, nil)
	}
	add("/api/v1/runs/no-such-run", nil)
	add("/api/v1/versions", nil)
	add("/api/v1/stats?ids=1", nil)
	if len(sr.runs) == 0 {
		t.Fatal("the repository has no runs")
	}
	for _, in := range sr.runs {
		add("/api/v1/runs/"+in.ID, nil)
		add("/api/v1/runs/"+url.PathEscape(in.Name), nil)
		add("/api/v1/runs/"+in.ID+"/params", nil)
		add("/api/v1/runs/"+in.ID+"/series", nil)
		var series []struct {
			ID string `json:"series_id"`
		}
		if err := json.Unmarshal(getAnswer(t, local, "/api/v1/runs/"+in.ID+"/series", nil).body, &series); err != nil || len(series) == 0 {
			t.Fatalf("series of %s: %v (%d)", in.ID, err, len(series))
		}
		var ids []string
		for _, s := range series {
			ids = append(ids, s.ID)
		}
		all := strings.Join(ids, ",")
		add("/api/v1/stats?ids="+all, nil)
		for _, q := range []string{"", "&max_points=0", "&max_points=37", "&from_step=100&to_step=900"} {
			add("/api/v1/series/points?ids="+all+q, nil)
		}
	}
	// Every file, whole, and a few with ranges and conditions.
	n := 0
	err := filepath.WalkDir(sr.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(sr.dir, p)
		add("/files/"+filepath.ToSlash(rel), nil)
		if n%7 == 0 {
			add("/files/"+filepath.ToSlash(rel), map[string]string{"Range": "bytes=3-40"})
			add("/files/"+filepath.ToSlash(rel), map[string]string{"Range": "bytes=-16"})
			add("/files/"+filepath.ToSlash(rel), map[string]string{"Range": "bytes=100000000-"})
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	add("/files/runs.lance", nil)
	add("/files/no/such/file", nil)
	add("/healthz", nil)

	want := make([]apiAnswer, len(reqs))
	for i, r := range reqs {
		want[i] = getAnswer(t, local, r.path, r.header)
	}
	// Conditional requests with the local server's ETags.
	for i := range len(reqs) {
		if et := want[i].headers["ETag"]; et != "" && i%3 == 0 {
			h := map[string]string{"If-None-Match": et}
			reqs = append(reqs, request{reqs[i].path, h})
			want = append(want, getAnswer(t, local, reqs[i].path, h))
		}
	}
	statuses := map[int]int{}
	for _, a := range want {
		statuses[a.status]++
	}
	for _, s := range []int{200, 206, 304, 400, 404, 416} {
		if statuses[s] == 0 {
			t.Errorf("no request answered %d on the local folder (%v): the comparison misses a case", s, statuses)
		}
	}
	for _, root := range roots {
		t.Run(root[:2], func(t *testing.T) {
			base := serveInProcess(t, root)
			diffs := 0
			for i, r := range reqs {
				got := getAnswer(t, base, r.path, r.header)
				w := want[i]
				same := got.status == w.status && bytes.Equal(got.body, w.body)
				for _, h := range comparedHeaders {
					same = same && got.headers[h] == w.headers[h]
				}
				if !same {
					diffs++
					if diffs <= 10 {
						t.Errorf("GET %s %v on %s: %d %v\n%.300s\nthe local folder: %d %v\n%.300s",
							r.path, r.header, root, got.status, got.headers, got.body, w.status, w.headers, w.body)
					}
				}
			}
			if diffs > 0 {
				t.Errorf("%d of %d answers differ", diffs, len(reqs))
			}
			t.Logf("%d answers equal (statuses %v)", len(reqs), statuses)
		})
	}
}
