package gcsstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/store/storetest"
	"github.com/kv0/kv0/native/gcsstore"
)

const bucket = "kv0-test"

// fake starts fake-gcs-server in process on loopback with one bucket,
// behind wrap when given, and returns its base URL and the server.
func fake(t *testing.T, wrap func(http.Handler) http.Handler) (string, *fakestorage.Server) {
	t.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		NoListener: true,
		// Reads go to the XML host, "/bucket/object" on the endpoint's
		// host: the server must take 127.0.0.1 for its public host.
		PublicHost: "127.0.0.1",
		Writer:     io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: bucket})
	h := srv.HTTPHandler()
	if wrap != nil {
		h = wrap(h)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(func() { hs.Close(); srv.Stop() })
	return hs.URL, srv
}

var storeCount atomic.Int64

func open(t *testing.T, endpoint, name string, opts gcsstore.Options) *gcsstore.Store {
	t.Helper()
	opts.Endpoint = endpoint
	s, err := gcsstore.Open(context.Background(), fmt.Sprintf("gs://%s/%s/%d", bucket, name, storeCount.Add(1)), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the store suite (ranged reads, listing, the 32-way
// create race, streamed objects, aborts) against fake-gcs-server, whose
// memory backend checks ifGenerationMatch=0 and creates under one lock.
func TestConformance(t *testing.T) {
	endpoint, _ := fake(t, nil)
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, endpoint, "conformance", gcsstore.Options{})
	}, storetest.Options{})
}

// TestConformanceChunked runs the suite again with chunks small enough
// that the suite's 12 MiB object is a resumable upload of many chunks.
func TestConformanceChunked(t *testing.T) {
	defer func(old int) { gcsstore.ChunkSize = old }(gcsstore.ChunkSize)
	gcsstore.ChunkSize = 1 << 20
	endpoint, _ := fake(t, nil)
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, endpoint, "chunked", gcsstore.Options{})
	}, storetest.Options{})
}

func TestParseURI(t *testing.T) {
	for _, c := range []struct{ uri, bucket, prefix string }{
		{"gs://bkt", "bkt", ""},
		{"gs://bkt/", "bkt", ""},
		{"gs://my_bucket.example/x/y/", "my_bucket.example", "x/y"},
	} {
		b, p, err := gcsstore.ParseURI(c.uri)
		if err != nil || b != c.bucket || p != c.prefix {
			t.Errorf("ParseURI(%q) = %q, %q, %v", c.uri, b, p, err)
		}
	}
	for _, uri := range []string{"gs:///x", "s3://bkt/x", "gs://bkt/../x", "gs://bkt/a//c", "gs://Upper/x", "gs://ab", "gs://b?x/y"} {
		if _, _, err := gcsstore.ParseURI(uri); err == nil {
			t.Errorf("ParseURI(%q): no error", uri)
		}
	}
}

// recorder counts the requests of each kind that reach the server.
type recorder struct {
	next    http.Handler
	uploads atomic.Int64 // requests carrying object bytes
	chunks  atomic.Int64 // requests of a resumable session
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if strings.HasPrefix(req.URL.Path, "/upload/") {
		r.uploads.Add(1)
		if req.URL.Query().Get("upload_id") != "" || strings.HasPrefix(req.URL.Path, "/upload/resumable/") {
			r.chunks.Add(1)
		}
	}
	r.next.ServeHTTP(w, req)
}

// TestStreamResumable: an object streamed past one chunk is a resumable
// upload whose chunks reach the server before Commit, yet nothing is
// visible until the last one; an upload aborted after chunks were sent,
// or cut short by a cancelled context, leaves no object.
func TestStreamResumable(t *testing.T) {
	defer func(old int) { gcsstore.ChunkSize = old }(gcsstore.ChunkSize)
	gcsstore.ChunkSize = 256 << 10
	var rec *recorder
	endpoint, _ := fake(t, func(h http.Handler) http.Handler { rec = &recorder{next: h}; return rec })
	ctx := context.Background()
	s := open(t, endpoint, "stream", gcsstore.Options{})

	w, err := s.CreateNoSync(ctx, "obj")
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for i := range 9 { // 9 × 100 KiB: three full chunks and a last one
		p := bytes.Repeat([]byte{byte('a' + i)}, 100<<10)
		want = append(want, p...)
		if err := w.Append(p); err != nil {
			t.Fatal(err)
		}
	}
	if rec.chunks.Load() < 2 {
		t.Fatalf("%d chunk requests before Commit: the upload is not streamed", rec.chunks.Load())
	}
	if _, err := s.Stat(ctx, "obj"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Stat before Commit: %v", err)
	}
	if err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := store.ReadAll(ctx, s, "obj"); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes, %v; want %d", len(got), err, len(want))
	}

	// Aborted after two chunks went out.
	before := rec.chunks.Load()
	a, err := s.CreateNoSync(ctx, "aborted")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Append(bytes.Repeat([]byte("q"), 600<<10)); err != nil {
		t.Fatal(err)
	}
	if rec.chunks.Load() == before {
		t.Fatal("no chunk was sent before Abort")
	}
	a.Abort()
	if _, err := s.Stat(ctx, "aborted"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Stat after Abort: %v", err)
	}

	// Cut short: the writer's context is cancelled mid-stream.
	cctx, cancel := context.WithCancel(ctx)
	c, err := s.CreateNoSync(cctx, "cut")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Append(bytes.Repeat([]byte("c"), 600<<10)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := c.Commit(ctx); err == nil {
		t.Fatal("Commit of an upload whose context was cancelled succeeded")
	}
	if _, err := s.Stat(ctx, "cut"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Stat after a cut-short upload: %v", err)
	}
	if got, err := s.List(ctx, store.ListOptions{}); err != nil || len(got) != 1 || got[0].Key != "obj" {
		t.Fatalf("List = %v, %v; want obj alone", got, err)
	}
}

// TestLargePutIfAbsent: a PutIfAbsent larger than a stream chunk stays one
// create-only request.
func TestLargePutIfAbsent(t *testing.T) {
	defer func(old int) { gcsstore.ChunkSize = old }(gcsstore.ChunkSize)
	gcsstore.ChunkSize = 256 << 10
	endpoint, _ := fake(t, nil)
	ctx := context.Background()
	s := open(t, endpoint, "bigcreate", gcsstore.Options{})
	big := bytes.Repeat([]byte("m"), 1<<20)
	if err := s.PutIfAbsent(ctx, "m", big); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsent(ctx, "m", big[:10]); !errors.Is(err, store.ErrExists) {
		t.Fatalf("second PutIfAbsent: %v", err)
	}
}

// flaky answers every n-th request with status before the server sees it.
type flaky struct {
	next   http.Handler
	n      int64
	count  atomic.Int64
	status int
	// landThenFail lets create requests reach the server and then answers
	// them with status, as a connection lost after the write would.
	landThenFail bool
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := f.count.Add(1)
	if i%f.n != 0 {
		f.next.ServeHTTP(w, r)
		return
	}
	if f.landThenFail {
		f.next.ServeHTTP(httptest.NewRecorder(), r)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.status)
	fmt.Fprintf(w, `{"error":{"code":%d,"message":"injected","errors":[{"reason":"backendError","message":"injected"}]}}`, f.status)
}

func TestRetriesServerErrors(t *testing.T) {
	for _, c := range []struct {
		name         string
		n            int64
		status       int
		landThenFail bool
	}{
		{"503", 2, 503, false},
		{"429", 3, 429, false},
		// The create lands but its answer is lost: the retry meets the
		// object, finds its own bytes and succeeds.
		{"landed", 2, 503, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var f *flaky
			endpoint, _ := fake(t, func(h http.Handler) http.Handler {
				f = &flaky{next: h, n: c.n, status: c.status, landThenFail: c.landThenFail}
				return f
			})
			s := open(t, endpoint, "retry", gcsstore.Options{MaxAttempts: 8})
			ctx := context.Background()
			data := bytes.Repeat([]byte("0123456789"), 10000)
			for i := range 10 {
				key := fmt.Sprintf("k/%d", i)
				if err := s.Put(ctx, key, data); err != nil {
					t.Fatalf("Put: %v", err)
				}
				if err := s.PutIfAbsent(ctx, key+".c", data); err != nil {
					t.Fatalf("PutIfAbsent: %v", err)
				}
				if err := s.PutIfAbsent(ctx, key+".c", data[:10]); !errors.Is(err, store.ErrExists) {
					t.Fatalf("second PutIfAbsent: %v", err)
				}
				buf := make([]byte, 5000)
				if err := s.ReadAt(ctx, key, buf, 333); err != nil {
					t.Fatalf("ReadAt: %v", err)
				}
				if !bytes.Equal(buf, data[333:5333]) {
					t.Fatal("ReadAt returned wrong data")
				}
			}
			list, err := s.List(ctx, store.ListOptions{Prefix: "k/"})
			if err != nil || len(list) != 20 {
				t.Fatalf("List = %d, %v", len(list), err)
			}
			if f.count.Load() < 50 {
				t.Fatalf("only %d requests reached the server", f.count.Load())
			}
		})
	}
}

// TestLostRaceIsExists: a create that loses to another writer's object is
// ErrExists even when the loser's answer came after a retry, unless the
// object holds the loser's own bytes.
func TestLostRaceIsExists(t *testing.T) {
	endpoint, _ := fake(t, nil)
	ctx := context.Background()
	s := open(t, endpoint, "lost", gcsstore.Options{})
	if err := s.Put(ctx, "v", []byte("other writer")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsent(ctx, "v", []byte("mine")); !errors.Is(err, store.ErrExists) {
		t.Fatalf("PutIfAbsent over another object: %v", err)
	}
	if got, _ := store.ReadAll(ctx, s, "v"); string(got) != "other writer" {
		t.Fatalf("object = %q", got)
	}
}

// TestErrorCodes: 403 and 401 are ErrForbidden, not not-found, and keep
// the server's reason; a 404 for a missing object is ErrNotFound.
func TestErrorCodes(t *testing.T) {
	ctx := context.Background()
	var status atomic.Int64
	var reason atomic.Value
	endpoint, _ := fake(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			st := int(status.Load())
			if st == 0 {
				next.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(st)
			fmt.Fprintf(w, `{"error":{"code":%d,"message":"injected %s","errors":[{"reason":%q,"message":"injected"}]}}`, st, reason.Load(), reason.Load())
		})
	})
	s := open(t, endpoint, "codes", gcsstore.Options{MaxAttempts: 2})
	if err := s.Put(ctx, "k", []byte("value")); err != nil {
		t.Fatal(err)
	}
	if err := s.ReadAt(ctx, "missing", make([]byte, 1), 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("read of a missing object: %v", err)
	}
	if _, err := s.Stat(ctx, "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("stat of a missing object: %v", err)
	}
	for _, c := range []struct {
		status    int
		reason    string
		forbidden bool
	}{
		{http.StatusForbidden, "forbidden", true},
		{http.StatusUnauthorized, "authError", true},
		{http.StatusBadRequest, "invalid", false},
	} {
		t.Run(fmt.Sprintf("%d %s", c.status, c.reason), func(t *testing.T) {
			status.Store(int64(c.status))
			reason.Store(c.reason)
			defer status.Store(0)
			errs := map[string]error{"create": s.PutIfAbsent(ctx, "new", []byte("x")), "put": s.Put(ctx, "k", []byte("y"))}
			_, errs["stat"] = s.Stat(ctx, "k")
			_, errs["list"] = s.List(ctx, store.ListOptions{})
			for op, err := range errs {
				if err == nil || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrExists) {
					t.Errorf("%s: %v (must be neither not-found nor exists)", op, err)
					continue
				}
				if errors.Is(err, gcsstore.ErrForbidden) != c.forbidden || !strings.Contains(err.Error(), fmt.Sprint(c.status)) {
					t.Errorf("%s: %v (forbidden %v, want %v)", op, err, errors.Is(err, gcsstore.ErrForbidden), c.forbidden)
				}
			}
		})
	}
}

// TestListPaginates: listings longer than a page follow page tokens, and
// start-after with a limit cuts the right window.
func TestListPaginates(t *testing.T) {
	endpoint, _ := fake(t, nil)
	s := open(t, endpoint, "many", gcsstore.Options{})
	ctx := context.Background()
	for i := range 1205 {
		if err := s.Put(ctx, fmt.Sprintf("v/%05d", i), []byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.List(ctx, store.ListOptions{Prefix: "v/"})
	if err != nil || len(all) != 1205 {
		t.Fatalf("List = %d, %v; want 1205", len(all), err)
	}
	some, err := s.List(ctx, store.ListOptions{Prefix: "v/", StartAfter: "v/00100", Limit: 1050})
	if err != nil || len(some) != 1050 || some[0].Key != "v/00101" || some[1049].Key != "v/01150" {
		t.Fatalf("List with StartAfter and Limit = %d, %v", len(some), err)
	}
}

func TestEndpointFromEnv(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", "127.0.0.1:4443")
	if got := gcsstore.OptionsFromEnv(gcsstore.Options{}).Endpoint; got != "http://127.0.0.1:4443" {
		t.Fatalf("Endpoint = %q", got)
	}
	if got := gcsstore.OptionsFromEnv(gcsstore.Options{Endpoint: "https://x"}).Endpoint; got != "https://x" {
		t.Fatalf("Endpoint = %q", got)
	}
}
