package s3store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/store/storetest"
	"github.com/kv0/kv0/native/s3store"
)

// fake starts an in-process S3 server on loopback with one bucket.
func fake(t *testing.T, wrap func(http.Handler) http.Handler) (endpoint string) {
	t.Helper()
	backend := s3mem.New()
	faker := gofakes3.New(backend)
	if err := backend.CreateBucket("kv0-test"); err != nil {
		t.Fatal(err)
	}
	var h http.Handler = faker.Server()
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func testOptions(endpoint string) s3store.Options {
	return s3store.Options{
		Endpoint:  endpoint,
		Region:    "us-east-1",
		AccessKey: "test-access",
		Secret:    "test-secret",
		PathStyle: true,
		AllowHTTP: true,
	}
}

var storeCount atomic.Int64

func TestConformance(t *testing.T) {
	endpoint := fake(t, nil)
	storetest.Run(t, func(t *testing.T) store.Store {
		uri := fmt.Sprintf("s3://kv0-test/conformance/%d", storeCount.Add(1))
		s, err := s3store.Open(context.Background(), uri, testOptions(endpoint))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, storetest.Options{})
}

func TestParseURI(t *testing.T) {
	for _, c := range []struct{ uri, bucket, prefix string }{
		{"s3://b", "b", ""},
		{"s3://b/", "b", ""},
		{"s3://b/x/y/", "b", "x/y"},
	} {
		b, p, err := s3store.ParseURI(c.uri)
		if err != nil || b != c.bucket || p != c.prefix {
			t.Errorf("ParseURI(%q) = %q, %q, %v", c.uri, b, p, err)
		}
	}
	for _, uri := range []string{"s3:///x", "http://b/x", "s3://b/../x", "s3://b/a//c"} {
		if _, _, err := s3store.ParseURI(uri); err == nil {
			t.Errorf("ParseURI(%q): no error", uri)
		}
	}
}

func TestRefusesPlainHTTPWithoutAllowHTTP(t *testing.T) {
	opts := testOptions("http://127.0.0.1:1")
	opts.AllowHTTP = false
	if _, err := s3store.Open(context.Background(), "s3://kv0-test/x", opts); err == nil {
		t.Fatal("Open accepted a plain-http endpoint without AllowHTTP")
	}
}

// flaky fails every n-th request with the given status before it reaches the
// server, or cuts the body of successful GETs short.
type flaky struct {
	next     http.Handler
	n        int64
	count    atomic.Int64
	status   int
	truncate bool
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := f.count.Add(1)
	if i%f.n != 0 {
		f.next.ServeHTTP(w, r)
		return
	}
	if f.truncate && r.Method == http.MethodGet && r.Header.Get("Range") != "" {
		rec := httptest.NewRecorder()
		f.next.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		body := rec.Body.Bytes()
		w.Write(body[:len(body)/2])
		// Hijack and close so the client sees a short body.
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
			}
		}
		return
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(f.status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>injected</Message></Error>`)
}

func TestRetriesServerErrors(t *testing.T) {
	for _, c := range []struct {
		name     string
		status   int
		truncate bool
	}{{"500", 500, false}, {"503", 503, false}, {"truncated", 0, true}} {
		t.Run(c.name, func(t *testing.T) {
			var f *flaky
			endpoint := fake(t, func(h http.Handler) http.Handler {
				f = &flaky{next: h, n: 2, status: c.status, truncate: c.truncate}
				return f
			})
			opts := testOptions(endpoint)
			opts.MaxAttempts = 8
			s, err := s3store.Open(context.Background(), "s3://kv0-test/retry", opts)
			if err != nil {
				t.Fatal(err)
			}
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
			if f.count.Load() < 40 {
				t.Fatalf("only %d requests reached the server", f.count.Load())
			}
		})
	}
}

func TestListPaginates(t *testing.T) {
	endpoint := fake(t, nil)
	s, err := s3store.Open(context.Background(), "s3://kv0-test/many", testOptions(endpoint))
	if err != nil {
		t.Fatal(err)
	}
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

// An object streamed past one part is a multipart upload: nothing is
// visible until Commit, and Abort after a part leaves no object and no
// pending upload.
func TestStreamMultipart(t *testing.T) {
	defer func(old int) { s3store.PartSize = old }(s3store.PartSize)
	s3store.PartSize = 5 << 20
	endpoint := fake(t, nil)
	ctx := context.Background()
	s, err := s3store.Open(ctx, "s3://kv0-test/stream", testOptions(endpoint))
	if err != nil {
		t.Fatal(err)
	}
	piece := bytes.Repeat([]byte("p"), 3<<20)
	w, err := s.CreateNoSync(ctx, "obj")
	if err != nil {
		t.Fatal(err)
	}
	for range 4 { // 12 MiB: parts of 5, 5 and 2 MiB
		if err := w.Append(piece); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Stat(ctx, "obj"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("before commit: %v", err)
	}
	if err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := store.ReadAll(ctx, s, "obj"); err != nil || !bytes.Equal(got, bytes.Repeat([]byte("p"), 12<<20)) {
		t.Fatalf("read back %d bytes, %v", len(got), err)
	}

	a, err := s.CreateNoSync(ctx, "aborted")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Append(bytes.Repeat([]byte("q"), 6<<20)); err != nil {
		t.Fatal(err)
	}
	a.Abort()
	if _, err := s.Stat(ctx, "aborted"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after abort: %v", err)
	}
	ups, err := s.Client().ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("kv0-test")})
	if err != nil {
		t.Fatal(err)
	}
	if len(ups.Uploads) != 0 {
		t.Fatalf("%d uploads left after commit and abort", len(ups.Uploads))
	}
}

// TestErrorCodes: only a missing key is store.ErrNotFound; a refused
// access key or permission is ErrForbidden whatever its status (some
// gateways answer an unknown key with 404), and the message keeps the
// server's code.
func TestErrorCodes(t *testing.T) {
	ctx := context.Background()
	var status atomic.Int64
	var code atomic.Value
	endpoint := fake(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			st := int(status.Load())
			if st == 0 {
				next.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(st)
			if r.Method != http.MethodHead {
				fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected %s</Message></Error>`, code.Load(), code.Load())
			}
		})
	})
	s, err := s3store.Open(ctx, "s3://kv0-test/codes", testOptions(endpoint))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "k", []byte("value")); err != nil {
		t.Fatal(err)
	}
	// The real server: a missing key is not found, for GET and HEAD.
	if err := s.ReadAt(ctx, "missing", make([]byte, 1), 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GET of a missing key: %v", err)
	}
	if _, err := s.Stat(ctx, "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("HEAD of a missing key: %v", err)
	}
	for _, c := range []struct {
		status    int
		code      string
		forbidden bool
	}{
		{http.StatusForbidden, "InvalidAccessKeyId", true},
		{http.StatusNotFound, "InvalidAccessKeyId", true},
		{http.StatusNotFound, "XAdminUserNotFound", true}, // versitygw, unknown access key
		{http.StatusForbidden, "AccessDenied", true},
		{http.StatusForbidden, "SignatureDoesNotMatch", true},
		{http.StatusNotFound, "NoSuchUpload", false},
		{http.StatusBadRequest, "InvalidArgument", false},
	} {
		t.Run(fmt.Sprintf("%d %s", c.status, c.code), func(t *testing.T) {
			status.Store(int64(c.status))
			code.Store(c.code)
			defer status.Store(0)
			buf := make([]byte, 5)
			errs := map[string]error{"read": s.ReadAt(ctx, "k", buf, 0)}
			_, errs["list"] = s.List(ctx, store.ListOptions{})
			for op, err := range errs {
				if err == nil || errors.Is(err, store.ErrNotFound) {
					t.Errorf("%s: %v (must not be not-found)", op, err)
					continue
				}
				if errors.Is(err, s3store.ErrForbidden) != c.forbidden || !strings.Contains(err.Error(), c.code) {
					t.Errorf("%s: %v (forbidden %v, want %v; code %s)", op, err, errors.Is(err, s3store.ErrForbidden), c.forbidden, c.code)
				}
			}
			if c.status == http.StatusForbidden {
				// HEAD has no body: the status alone says forbidden.
				if _, err := s.Stat(ctx, "k"); !errors.Is(err, s3store.ErrForbidden) || errors.Is(err, store.ErrNotFound) {
					t.Errorf("HEAD: %v", err)
				}
			}
		})
	}
}
