package s3

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/native/azblobstore"
	"github.com/kv0/kv0/native/gcsstore"
	"github.com/kv0/kv0/native/s3store"
	"github.com/kv0/kv0/tests/azure"
)

// slowProxy forwards every request to an object store's endpoint after
// the injected latency and counts requests and the bytes of the answers'
// bodies (what crossed the wire).
type slowProxy struct {
	srv             *httptest.Server
	requests, bytes atomic.Int64
}

func newSlowProxy(target string) (*slowProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	p := &slowProxy{}
	rp := httputil.NewSingleHostReverseProxy(u) // keeps the Host header the client signed
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		time.Sleep(latency)
		rp.ServeHTTP(&countingWriter{ResponseWriter: w, n: &p.bytes}, r)
	}))
	return p, nil
}

func (p *slowProxy) reset() { p.requests.Store(0); p.bytes.Store(0) }

// coldBackend is an object store reached through a slowProxy.
type coldBackend struct {
	name  string
	proxy *slowProxy
	open  func(uri string) (store.Store, error) // a fresh client through the proxy
	uri   string                                // where the table was copied
}

var (
	coldOnce     sync.Once
	coldBackends []*coldBackend
	coldErr      error
)

// copyTable copies every file of the benchmark table's folder to st
// below root, eight at a time.
func copyTable(ctx context.Context, dir string, st store.Store) error {
	var keys []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			keys = append(keys, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		return err
	}
	sem := make(chan struct{}, 8)
	errs := make(chan error, len(keys))
	var wg sync.WaitGroup
	for _, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(k)))
			if err == nil {
				err = st.Put(ctx, k, b)
			}
			if err != nil {
				errs <- fmt.Errorf("%s: %w", k, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// setUpColdBackends copies the latency benchmark's table (1,000
// versions, the latest of 100k rows) to versitygw, fake-gcs-server and
// Azurite, and puts a 50 ms proxy in front of each.
func setUpColdBackends(b *testing.B) []*coldBackend {
	_, dir := benchTable(b)
	coldOnce.Do(func() {
		ctx := context.Background()
		s3o := s3Options()
		gcsTarget := gcsEndpoint
		var azo azblobstore.Options
		if azurite != nil {
			azo = azblobstore.Options{ConnectionString: azurite.ConnectionString, Timeout: time.Minute}
		}
		defs := []struct {
			name, scheme, target string
			open                 func(uri, endpoint string) (store.Store, error)
		}{
			{"s3-versitygw", "s3", endpoint, func(uri, ep string) (store.Store, error) {
				o := s3o
				o.Endpoint = ep
				return s3store.Open(ctx, uri, o)
			}},
			{"gcs-fake-gcs-server", "gs", gcsTarget, func(uri, ep string) (store.Store, error) {
				return gcsstore.Open(ctx, uri, gcsstore.Options{Endpoint: ep, Timeout: time.Minute})
			}},
			{"azure-azurite", "az", "", func(uri, ep string) (store.Store, error) {
				o := azo
				o.ConnectionString = fmt.Sprintf("DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;BlobEndpoint=%s/%s;",
					azure.Account, azure.Key, ep, azure.Account)
				return azblobstore.Open(ctx, uri, o)
			}},
		}
		if azurite != nil {
			defs[2].target = strings.TrimSuffix(azurite.BlobEndpoint, "/"+azure.Account)
		}
		for _, d := range defs {
			if d.target == "" {
				coldErr = fmt.Errorf("%s is not running", d.name)
				return
			}
			uri := d.scheme + strings.TrimPrefix(newURI("cold-"+d.name), "s3")
			direct, err := d.open(uri, d.target)
			if err == nil {
				err = copyTable(ctx, dir, direct)
			}
			if err != nil {
				coldErr = fmt.Errorf("copying the table to %s: %w", d.name, err)
				return
			}
			p, err := newSlowProxy(d.target)
			if err != nil {
				coldErr = err
				return
			}
			open := d.open
			coldBackends = append(coldBackends, &coldBackend{name: d.name, proxy: p, uri: uri,
				open: func(uri string) (store.Store, error) { return open(uri, p.srv.URL) }})
		}
	})
	if coldErr != nil {
		if os.Getenv("CI") != "true" && (endpoint == "" || azurite == nil) {
			b.Skipf("cold-read benchmark: %v", coldErr)
		}
		b.Fatal(coldErr)
	}
	return coldBackends
}

// BenchmarkColdReadStores measures cold reads of the latency benchmark's
// table (open the latest of 1,000 versions; open it and read one column
// of 100k int64) on versitygw (S3), fake-gcs-server (GCS) and Azurite
// (Azure) in one run, each behind a proxy that adds 50 ms to every
// request and counts requests and answer bytes; every iteration opens a
// new client:
//
//	go test ./tests/s3 -run '^$' -bench BenchmarkColdReadStores -benchtime 3x
func BenchmarkColdReadStores(b *testing.B) {
	need(b)
	azure.Skip(b, azurite, azuriteWhy)
	backends := setUpColdBackends(b)
	for _, w := range []struct {
		name string
		fn   work
	}{{"open", openLatest}, {"open+column", openAndReadColumn}} {
		for _, be := range backends {
			b.Run(w.name+"/"+be.name, func(b *testing.B) {
				ctx := context.Background()
				var elapsed time.Duration
				be.proxy.reset()
				for b.Loop() {
					st, err := be.open(be.uri)
					if err != nil {
						b.Fatal(err)
					}
					start := time.Now()
					if err := w.fn(ctx, st); err != nil {
						b.Fatal(err)
					}
					elapsed += time.Since(start)
					if c, ok := st.(io.Closer); ok {
						c.Close()
					}
				}
				report(b, elapsed, be.proxy.requests.Load(), be.proxy.bytes.Load())
			})
		}
	}
}
