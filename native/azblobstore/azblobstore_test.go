package azblobstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/store/storetest"
	"github.com/kv0/kv0/native/azblobstore"
	"github.com/kv0/kv0/tests/azure"
)

var (
	server  *azure.Server
	skipWhy string
)

// TestMain starts Azurite (tests/azure) for the package: with CI=true its
// absence fails the run; elsewhere the tests that need it skip.
func TestMain(m *testing.M) {
	server, skipWhy = azure.Require()
	code := m.Run()
	server.Stop()
	os.Exit(code)
}

var containers atomic.Int64

// newContainer creates a fresh container and returns its name.
func newContainer(t *testing.T) string {
	t.Helper()
	azure.Skip(t, server, skipWhy)
	name := fmt.Sprintf("kv0-test-%d-%d", os.Getpid(), containers.Add(1))
	c, err := azblobstore.NewContainerClient(name, azblobstore.Options{ConnectionString: server.ConnectionString})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return name
}

func open(t *testing.T, name, prefix string, opts azblobstore.Options) *azblobstore.Store {
	t.Helper()
	if opts.ConnectionString == "" && opts.Account == "" {
		opts.ConnectionString = server.ConnectionString
	}
	s, err := azblobstore.Open(context.Background(), "az://"+name+"/"+prefix, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var stores atomic.Int64

// TestConformance runs the store suite (ranged reads, listing, the 32-way
// create race, streamed objects, aborts) against Azurite, which honours
// If-None-Match: * on Put Blob.
func TestConformance(t *testing.T) {
	name := newContainer(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, name, fmt.Sprintf("conformance/%d", stores.Add(1)), azblobstore.Options{})
	}, storetest.Options{})
}

// TestConformanceSharedKey runs it again signed with the shared key
// (account, key and endpoint given apart) and with blocks small enough that
// the suite's 12 MiB object is staged in many blocks.
func TestConformanceSharedKey(t *testing.T) {
	defer func(old int) { azblobstore.BlockSize = old }(azblobstore.BlockSize)
	azblobstore.BlockSize = 1 << 20
	name := newContainer(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, name, fmt.Sprintf("sharedkey/%d", stores.Add(1)), azblobstore.Options{
			Account: azure.Account, AccountKey: azure.Key, Endpoint: server.BlobEndpoint,
		})
	}, storetest.Options{})
}

func TestParseURI(t *testing.T) {
	for _, c := range []struct{ uri, container, prefix string }{
		{"az://box", "box", ""},
		{"az://box/", "box", ""},
		{"az://my-box-1/x/y/", "my-box-1", "x/y"},
	} {
		b, p, err := azblobstore.ParseURI(c.uri)
		if err != nil || b != c.container || p != c.prefix {
			t.Errorf("ParseURI(%q) = %q, %q, %v", c.uri, b, p, err)
		}
	}
	for _, uri := range []string{"az:///x", "gs://box/x", "az://box/../x", "az://box/a//c", "az://Box/x", "az://ab", "az://-box", "az://a--b", "az://a_b"} {
		if _, _, err := azblobstore.ParseURI(uri); err == nil {
			t.Errorf("ParseURI(%q): no error", uri)
		}
	}
}

func TestNoCredentials(t *testing.T) {
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "")
	t.Setenv("AZURE_STORAGE_ACCOUNT", "")
	if _, err := azblobstore.Open(context.Background(), "az://box/x", azblobstore.Options{}); !errors.Is(err, azblobstore.ErrNoCredentials) {
		t.Fatalf("Open without an account: %v", err)
	}
}

// counter counts the requests of each kind.
type counter struct {
	next        http.RoundTripper
	stageBlocks atomic.Int64
	commits     atomic.Int64
}

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	switch r.URL.Query().Get("comp") {
	case "block":
		c.stageBlocks.Add(1)
	case "blocklist":
		c.commits.Add(1)
	}
	return c.next.RoundTrip(r)
}

// TestStreamBlocks: an object streamed past one block is staged block by
// block before Commit, yet nothing is visible until the block list is
// committed; an upload aborted after blocks were staged, or cut short by a
// cancelled context, leaves no blob.
func TestStreamBlocks(t *testing.T) {
	defer func(old int) { azblobstore.BlockSize = old }(azblobstore.BlockSize)
	azblobstore.BlockSize = 256 << 10
	name := newContainer(t)
	rec := &counter{next: http.DefaultTransport}
	s := open(t, name, "stream", azblobstore.Options{HTTPClient: &http.Client{Transport: rec}})
	ctx := context.Background()

	w, err := s.CreateNoSync(ctx, "obj")
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for i := range 9 { // 9 × 100 KiB: three full blocks and a last one
		p := bytes.Repeat([]byte{byte('a' + i)}, 100<<10)
		want = append(want, p...)
		if err := w.Append(p); err != nil {
			t.Fatal(err)
		}
	}
	if rec.stageBlocks.Load() != 3 {
		t.Fatalf("%d blocks staged before Commit, want 3", rec.stageBlocks.Load())
	}
	if _, err := s.Stat(ctx, "obj"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Stat before Commit: %v", err)
	}
	if got, err := s.List(ctx, store.ListOptions{}); err != nil || len(got) != 0 {
		t.Fatalf("List before Commit = %v, %v", got, err)
	}
	if err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if rec.commits.Load() != 1 {
		t.Fatalf("%d block lists committed, want 1", rec.commits.Load())
	}
	if got, err := store.ReadAll(ctx, s, "obj"); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes, %v; want %d", len(got), err, len(want))
	}

	a, err := s.CreateNoSync(ctx, "aborted")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Append(bytes.Repeat([]byte("q"), 600<<10)); err != nil {
		t.Fatal(err)
	}
	a.Abort()
	if _, err := s.Stat(ctx, "aborted"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Stat after Abort: %v", err)
	}

	cctx, cancel := context.WithCancel(ctx)
	c, err := s.CreateNoSync(cctx, "cut")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Append(bytes.Repeat([]byte("c"), 600<<10)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := c.Append(bytes.Repeat([]byte("c"), 300<<10)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append after the context was cancelled: %v", err)
	}
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

// faults answers every n-th request with status before it reaches the
// server, or (landThenFail) sends it and then replaces the answer, as a
// connection lost after the write would.
type faults struct {
	next         http.RoundTripper
	n            int64
	count        atomic.Int64
	status       int
	code         string
	landThenFail bool
}

func (f *faults) RoundTrip(r *http.Request) (*http.Response, error) {
	i := f.count.Add(1)
	if f.n == 0 || i%f.n != 0 {
		return f.next.RoundTrip(r)
	}
	if f.landThenFail {
		resp, err := f.next.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	} else if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	body := fmt.Sprintf(`<?xml version="1.0" encoding="utf-8"?><Error><Code>%s</Code><Message>injected</Message></Error>`, f.code)
	h := http.Header{"Content-Type": {"application/xml"}, "X-Ms-Error-Code": {f.code}}
	return &http.Response{StatusCode: f.status, Status: fmt.Sprintf("%d injected", f.status), Header: h,
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}, nil
}

func TestRetriesServerErrors(t *testing.T) {
	for _, c := range []struct {
		name         string
		n            int64
		status       int
		landThenFail bool
	}{
		{"503", 2, 503, false},
		{"500", 3, 500, false},
		// The create lands but its answer is lost: the retry meets the
		// blob, finds its own bytes and succeeds.
		{"landed", 2, 503, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := newContainer(t)
			f := &faults{next: http.DefaultTransport, n: c.n, status: c.status, code: "ServerBusy", landThenFail: c.landThenFail}
			s := open(t, name, "retry", azblobstore.Options{MaxAttempts: 8, HTTPClient: &http.Client{Transport: f}})
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
				t.Fatalf("only %d requests were sent", f.count.Load())
			}
		})
	}
}

// TestErrorCodes: refused credentials are ErrForbidden whatever the
// status, never not-found, and the message keeps the server's code; a
// missing blob is ErrNotFound; a missing container is named.
func TestErrorCodes(t *testing.T) {
	name := newContainer(t)
	ctx := context.Background()
	f := &faults{next: http.DefaultTransport}
	s := open(t, name, "codes", azblobstore.Options{MaxAttempts: 2, HTTPClient: &http.Client{Transport: f}})
	if err := s.Put(ctx, "k", []byte("value")); err != nil {
		t.Fatal(err)
	}
	if err := s.ReadAt(ctx, "missing", make([]byte, 1), 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("read of a missing blob: %v", err)
	}
	if _, err := s.Stat(ctx, "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("stat of a missing blob: %v", err)
	}
	gone := open(t, "no-such-container", "x", azblobstore.Options{})
	if _, err := gone.Stat(ctx, "k"); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Errorf("stat in a missing container: %v", err)
	}
	if err := gone.Put(ctx, "k", []byte("x")); err == nil || !strings.Contains(err.Error(), "ContainerNotFound") {
		t.Errorf("put in a missing container: %v", err)
	}
	// A wrong account key: Azurite refuses the signature.
	bad := open(t, name, "codes", azblobstore.Options{Account: azure.Account, Endpoint: server.BlobEndpoint,
		AccountKey: "AAAA" + azure.Key[4:]})
	for op, err := range map[string]error{"read": bad.ReadAt(ctx, "k", make([]byte, 5), 0), "put": bad.Put(ctx, "k", []byte("y"))} {
		if !errors.Is(err, azblobstore.ErrForbidden) || errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "403") {
			t.Errorf("%s with a wrong key: %v", op, err)
		}
	}
	for _, c := range []struct {
		status    int
		code      string
		forbidden bool
	}{
		{http.StatusForbidden, "AuthorizationFailure", true},
		{http.StatusNotFound, "AuthenticationFailed", true}, // a code says more than a status
		{http.StatusForbidden, "AuthorizationPermissionMismatch", true},
		{http.StatusBadRequest, "InvalidHeaderValue", false},
	} {
		t.Run(fmt.Sprintf("%d %s", c.status, c.code), func(t *testing.T) {
			f.status, f.code, f.n = c.status, c.code, 1
			defer func() { f.n = 0 }()
			errs := map[string]error{"read": s.ReadAt(ctx, "k", make([]byte, 5), 0), "create": s.PutIfAbsent(ctx, "new", []byte("x"))}
			_, errs["list"] = s.List(ctx, store.ListOptions{})
			for op, err := range errs {
				if err == nil || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrExists) {
					t.Errorf("%s: %v (must be neither not-found nor exists)", op, err)
					continue
				}
				if errors.Is(err, azblobstore.ErrForbidden) != c.forbidden || !strings.Contains(err.Error(), c.code) {
					t.Errorf("%s: %v (forbidden %v, want %v; code %s)", op, err, errors.Is(err, azblobstore.ErrForbidden), c.forbidden, c.code)
				}
			}
		})
	}
}

// TestListPaginates: listings longer than a page follow markers, and
// start-after with a limit cuts the right window.
func TestListPaginates(t *testing.T) {
	defer func(old int) { azblobstore.ListPageSize = old }(azblobstore.ListPageSize)
	azblobstore.ListPageSize = 500
	name := newContainer(t)
	s := open(t, name, "many", azblobstore.Options{})
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
