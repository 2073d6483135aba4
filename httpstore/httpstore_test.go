//go:build !js && !wasip1

package httpstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kv0/kv0/core/jsonl"
	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/store/storetest"
	"github.com/kv0/kv0/httpstore"
	"github.com/kv0/kv0/native/fsstore"
)

// serveDir starts a static file server (http.FileServer answers ranges)
// over dir on loopback, behind wrap when it is not nil.
func serveDir(t *testing.T, dir string, wrap func(http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	var h http.Handler = http.FileServer(http.Dir(dir))
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestConformanceStatic(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		dir := t.TempDir()
		srv := serveDir(t, dir, nil)
		s, err := httpstore.OpenStatic(srv.URL+"/", httpstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		current = dir
		return s
	}, storetest.Options{ReadOnly: true, NoList: true, Seed: func(t *testing.T, objects map[string][]byte) {
		// Every subtest opens exactly one store, then seeds it.
		dir := current
		for k, v := range objects {
			p := filepath.Join(dir, filepath.FromSlash(k))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, v, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}})
}

// current is the folder of the store the conformance suite opened last.
var current string

const sample = "../tests/testdata/sample.lance"

// dump scans every column of the latest version of the dataset as JSON
// lines.
func dump(t *testing.T, st store.Store, root string, opts lance.ScanOptions) (string, error) {
	t.Helper()
	ctx := context.Background()
	d, err := lance.Open(ctx, st, root, lance.OpenOptions{})
	if err != nil {
		return "", err
	}
	sc, err := d.Scan(ctx, opts)
	if err != nil {
		return "", err
	}
	defer sc.Close()
	var buf bytes.Buffer
	w := jsonl.NewWriter(&buf)
	for sc.Next() {
		if err := w.Write(sc.Record()); err != nil {
			return "", err
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return fmt.Sprintf("v%d\n%s", d.Version(), buf.String()), nil
}

func TestLanceEqualsLocal(t *testing.T) {
	local, err := fsstore.OpenExisting(sample)
	if err != nil {
		t.Fatal(err)
	}
	want, err := dump(t, local, "", lance.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveDir(t, filepath.Dir(sample), nil)
	s, err := httpstore.OpenStatic(srv.URL, httpstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := dump(t, s, "sample.lance", lance.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("scan over HTTP differs from the local scan:\n%.500s\nwant\n%.500s", got, want)
	}
	if strings.Count(want, "\n") < 2 {
		t.Fatalf("sample dataset scanned to almost nothing: %q", want)
	}
}

// faults injects failures into a chosen fraction of requests: dropped
// connections, 500 and 503 answers, truncated bodies and delays.
type faults struct {
	next     http.Handler
	fraction float64
	seq      atomic.Int64
	injected atomic.Int64
	requests atomic.Int64
}

func (f *faults) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := f.seq.Add(1)
	f.requests.Add(1)
	// A cheap deterministic hash picks the fault per request number.
	h := uint64(i) * 0x9E3779B97F4A7C15
	if float64(h>>11)/float64(1<<53) >= f.fraction {
		f.next.ServeHTTP(w, r)
		return
	}
	f.injected.Add(1)
	switch (h >> 3) % 5 {
	case 0: // drop the connection without an answer
		if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
			c.Close()
		}
	case 1:
		http.Error(w, "injected", http.StatusInternalServerError)
	case 2:
		http.Error(w, "injected", http.StatusServiceUnavailable)
	case 3: // truncate: announce the full length, send half, hang up
		rec := httptest.NewRecorder()
		f.next.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		body := rec.Body.Bytes()
		w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
			c.Close()
		}
	case 4: // delay
		time.Sleep(20 * time.Millisecond)
		f.next.ServeHTTP(w, r)
	}
}

func TestFaultsNeverWrongData(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i*7 + i>>8)
	}
	if err := os.WriteFile(filepath.Join(dir, "blob"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, fraction := range []float64{0.2, 0.6} {
		t.Run(fmt.Sprint(fraction), func(t *testing.T) {
			var f *faults
			srv := serveDir(t, dir, func(h http.Handler) http.Handler {
				f = &faults{next: h, fraction: fraction}
				return f
			})
			attempts := 3
			if fraction <= 0.2 {
				attempts = 6
			}
			s, err := httpstore.OpenStatic(srv.URL, httpstore.Options{MaxAttempts: attempts})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			var ok, failed atomic.Int64
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 40 {
						off := int64((g*40+i)*9973) % int64(len(data)-70000)
						n := 1 + (g*i*131)%65536
						buf := make([]byte, n)
						if err := s.ReadAt(ctx, "blob", buf, off); err != nil {
							failed.Add(1)
							if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrShortObject) {
								t.Errorf("a fault became %v", err)
							}
							continue
						}
						if !bytes.Equal(buf, data[off:off+int64(n)]) {
							t.Errorf("ReadAt(%d, %d) returned wrong data", off, n)
						}
						ok.Add(1)
					}
				}()
			}
			wg.Wait()
			t.Logf("fraction %.1f: %d requests, %d faults injected, %d reads ok, %d failed",
				fraction, f.requests.Load(), f.injected.Load(), ok.Load(), failed.Load())
			if fraction <= 0.2 && failed.Load() > 0 {
				t.Errorf("%d reads failed at a 20%% fault rate with 6 attempts", failed.Load())
			}
			if f.injected.Load() == 0 {
				t.Fatal("no faults were injected")
			}
		})
	}
}

func TestLanceUnderFaults(t *testing.T) {
	local, _ := fsstore.OpenExisting(sample)
	want, err := dump(t, local, "", lance.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, fraction := range []float64{0.3, 0.7} {
		srv := serveDir(t, filepath.Dir(sample), func(h http.Handler) http.Handler {
			return &faults{next: h, fraction: fraction}
		})
		var okRuns, errRuns int
		for range 10 {
			s, _ := httpstore.OpenStatic(srv.URL, httpstore.Options{MaxAttempts: 2})
			got, err := dump(t, s, "sample.lance", lance.ScanOptions{})
			if err != nil {
				errRuns++
				continue
			}
			if got != want {
				t.Fatalf("fraction %.1f: a scan under faults returned wrong data", fraction)
			}
			okRuns++
		}
		t.Logf("fraction %.1f: %d scans equal to local, %d failed with an error", fraction, okRuns, errRuns)
	}
}

func TestErrors(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/expired", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `<?xml version="1.0"?><Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>`)
	})
	mux.HandleFunc("/norange", func(w http.ResponseWriter, r *http.Request) {
		// 206 without Content-Range, as a browser sees it when CORS does
		// not expose the header.
		w.WriteHeader(http.StatusPartialContent)
		w.Write([]byte("x"))
	})
	mux.HandleFunc("/short", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Range", "bytes 0-9/100")
		w.Header().Set("Content-Length", "10")
		w.WriteHeader(http.StatusPartialContent)
		w.Write([]byte("01234"))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	s, _ := httpstore.OpenStatic(srv.URL+"/?sig=SECRET", httpstore.Options{MaxAttempts: 2})
	ctx := context.Background()
	buf := make([]byte, 10)

	err := s.ReadAt(ctx, "expired", buf, 0)
	if !errors.Is(err, httpstore.ErrForbidden) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("403: %v", err)
	}
	if err := s.ReadAt(ctx, "missing", buf, 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("404: %v", err)
	}
	if err := s.ReadAt(ctx, "norange", buf, 0); !errors.Is(err, httpstore.ErrServer) || !strings.Contains(err.Error(), "CORS") {
		t.Errorf("206 without Content-Range: %v", err)
	}
	if err := s.ReadAt(ctx, "short", buf, 0); !errors.Is(err, httpstore.ErrTruncated) {
		t.Errorf("truncated body: %v", err)
	}
	srv.Close()
	err = s.ReadAt(ctx, "gone", buf, 0)
	if !errors.Is(err, httpstore.ErrNetwork) || !strings.Contains(err.Error(), "network or CORS") {
		t.Errorf("closed server: %v", err)
	}
	for _, e := range []error{err, s.ReadAt(ctx, "expired", buf, 0)} {
		if e != nil && strings.Contains(e.Error(), "SECRET") {
			t.Errorf("error leaks the query string: %v", e)
		}
	}
}

// counting counts requests by Range header.
type counting struct {
	next     http.Handler
	requests atomic.Int64
	bytes    atomic.Int64
}

func (c *counting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.requests.Add(1)
	c.next.ServeHTTP(w, r)
}

func TestCoalescing(t *testing.T) {
	dir := t.TempDir()
	data := bytes.Repeat([]byte("abcdefghij"), 100000)
	os.WriteFile(filepath.Join(dir, "blob"), data, 0o644)
	var c *counting
	srv := serveDir(t, dir, func(h http.Handler) http.Handler {
		c = &counting{next: h}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(5 * time.Millisecond)
			c.ServeHTTP(w, r)
		})
	})
	s, _ := httpstore.OpenStatic(srv.URL, httpstore.Options{MaxConcurrency: 1})
	ctx := context.Background()
	var wg sync.WaitGroup
	const reads = 64
	for i := range reads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			off := int64(i * 1000)
			buf := make([]byte, 900)
			if err := s.ReadAt(ctx, "blob", buf, off); err != nil {
				t.Error(err)
			} else if !bytes.Equal(buf, data[off:off+900]) {
				t.Errorf("read %d: wrong data", i)
			}
		}()
	}
	wg.Wait()
	t.Logf("%d concurrent adjacent reads took %d requests", reads, c.requests.Load())
	if c.requests.Load() >= reads/2 {
		t.Errorf("%d requests for %d adjacent reads: no coalescing", c.requests.Load(), reads)
	}
}

func TestReadTail(t *testing.T) {
	dir := t.TempDir()
	data := bytes.Repeat([]byte("0123456789"), 1000)
	os.WriteFile(filepath.Join(dir, "big"), data, 0o644)
	os.WriteFile(filepath.Join(dir, "small"), data[:100], 0o644)
	var c *counting
	srv := serveDir(t, dir, func(h http.Handler) http.Handler { c = &counting{next: h}; return c })
	s, _ := httpstore.OpenStatic(srv.URL, httpstore.Options{})
	ctx := context.Background()
	for _, tc := range []struct {
		key      string
		n        int
		want     []byte
		requests int64
	}{
		{"small", 1000, data[:100], 1}, // fits: one request
		{"big", 300, data[len(data)-300:], 2},
		{"big", 300, data[len(data)-300:], 1}, // size now known
		{"small", 10, data[90:100], 1},
	} {
		before := c.requests.Load()
		got, size, err := s.ReadTail(ctx, tc.key, tc.n)
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Fatalf("ReadTail(%s, %d) = %d bytes, %v", tc.key, tc.n, len(got), err)
		}
		if size != int64(len(data)) && size != 100 {
			t.Fatalf("size %d", size)
		}
		if n := c.requests.Load() - before; n != tc.requests {
			t.Errorf("ReadTail(%s, %d) took %d requests, want %d", tc.key, tc.n, n, tc.requests)
		}
	}
	// A changed object with a stale cached size still reads right.
	os.WriteFile(filepath.Join(dir, "big"), data[:5000], 0o644)
	got, size, err := s.ReadTail(ctx, "big", 300)
	if err != nil || size != 5000 || !bytes.Equal(got, data[4700:5000]) {
		t.Fatalf("ReadTail after a change: size %d, %v", size, err)
	}
}
