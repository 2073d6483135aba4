package s3

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/tracking"
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

	mu       sync.Mutex
	inFlight int
	waves    int // requests that arrived while none was in flight
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
		p.mu.Lock()
		if p.inFlight == 0 {
			p.waves++
		}
		p.inFlight++
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			p.inFlight--
			p.mu.Unlock()
		}()
		time.Sleep(latency)
		rp.ServeHTTP(&countingWriter{ResponseWriter: w, n: &p.bytes}, r)
	}))
	return p, nil
}

func (p *slowProxy) reset() {
	p.requests.Store(0)
	p.bytes.Store(0)
	p.mu.Lock()
	p.waves = 0
	p.mu.Unlock()
}

// sequential is the number of request waves (see slowStore.sequential):
// unlike elapsed time it does not grow with the machine's load.
func (p *slowProxy) sequential() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waves
}

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

// copyObjects copies every object of from to to, eight at a time.
func copyObjects(ctx context.Context, from, to store.Store) error {
	objs, err := from.List(ctx, store.ListOptions{})
	if err != nil {
		return err
	}
	sem := make(chan struct{}, 8)
	errs := make(chan error, len(objs))
	var wg sync.WaitGroup
	for _, o := range objs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			b := make([]byte, o.Size)
			err := from.ReadAt(ctx, o.Key, b, 0)
			if err == nil {
				err = to.Put(ctx, o.Key, b)
			}
			if err != nil {
				errs <- fmt.Errorf("%s: %w", o.Key, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// coldTrackRepo builds, in memory, a smaller tracking repository than
// BenchmarkTrackingLatency's (copied to three servers): 10 runs × 4
// series × 25k points (1M points), optimized; it returns the store and
// one series in the middle.
func coldTrackRepo() (*store.Memory, tracking.SeriesID, error) {
	ctx := context.Background()
	mem := store.NewMemory()
	r, err := tracking.OpenRepo(ctx, mem, "repo", tracking.RepoOptions{FlushInterval: -1, FlushRows: 1 << 20, MaxFragments: -1})
	if err != nil {
		return nil, 0, err
	}
	var sid tracking.SeriesID
	t0 := time.Unix(1_700_000_000, 0)
	for i := range coldTrackRuns {
		run, err := r.StartRun(ctx, tracking.RunSpec{Name: "run" + strconv.Itoa(i), Experiment: "bench"})
		if err != nil {
			return nil, 0, err
		}
		if err := run.SetParams(map[string]any{"lr": 0.001 * float64(i+1), "seed": i}); err != nil {
			return nil, 0, err
		}
		for s := range 4 {
			name := "metric" + strconv.Itoa(s)
			if i == coldTrackRuns/2 && s == 2 {
				sid, _ = tracking.NewSeriesID(run.ID(), name, nil)
			}
			for p := range coldTrackPoints {
				step := int64(p)
				if err := run.Track(float64(p%1000)/1000+float64(s), name, tracking.TrackOptions{Step: &step, Time: t0.Add(time.Duration(p) * time.Millisecond)}); err != nil {
					return nil, 0, err
				}
			}
		}
		if err := run.Finish(ctx, tracking.StatusFinished); err != nil {
			return nil, 0, err
		}
	}
	if _, err := r.Optimize(ctx); err != nil {
		return nil, 0, err
	}
	return mem, sid, r.Close()
}

const (
	coldTrackRuns   = 10
	coldTrackPoints = 25_000
)

var coldSeries tracking.SeriesID

// setUpColdBackends copies the latency benchmark's table (1,000
// versions, the latest of 100k rows) to versitygw, fake-gcs-server and
// Azurite, and puts a 50 ms proxy in front of each.
func setUpColdBackends(b *testing.B) []*coldBackend {
	mem, _ := benchTable(b)
	coldOnce.Do(func() {
		ctx := context.Background()
		repo, sid, err := coldTrackRepo()
		if err != nil {
			coldErr = err
			return
		}
		coldSeries = sid
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
				err = copyObjects(ctx, mem, direct)
			}
			if err == nil {
				err = copyObjects(ctx, repo, direct)
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
// of 100k int64) and of a tracking repository (10 runs × 4 series × 25k
// points, optimized: a new read-only OpenRepo, then ReadMany of one
// series, or Runs) on versitygw (S3), fake-gcs-server (GCS) and Azurite
// (Azure) in one run, each behind a proxy that adds 50 ms to every
// request and counts requests, request waves (requests that arrive while
// none is in flight) and answer bytes; every iteration opens a new
// client:
//
//	go test ./tests/s3 -run '^$' -bench BenchmarkColdReadStores -benchtime 3x
func BenchmarkColdReadStores(b *testing.B) {
	need(b)
	azure.Skip(b, azurite, azuriteWhy)
	backends := setUpColdBackends(b)
	for _, w := range []struct {
		name string
		fn   work
	}{{"open", openLatest}, {"open+column", openAndReadColumn}, {"tracking-series", readColdSeries}, {"tracking-runs", readColdRuns}} {
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
					// Let prefetches the readers started in the background
					// land before the next iteration (their bytes count).
					time.Sleep(4 * latency)
					if c, ok := st.(io.Closer); ok {
						c.Close()
					}
				}
				report(b, elapsed, be.proxy.requests.Load(), be.proxy.bytes.Load())
				b.ReportMetric(float64(be.proxy.sequential())/float64(b.N), "waves/op")
			})
		}
	}
}

func readColdSeries(ctx context.Context, st store.Store) error {
	r, err := tracking.OpenRepo(ctx, st, "repo", tracking.RepoOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer r.Close()
	d, err := r.ReadMany(ctx, []tracking.SeriesID{coldSeries}, tracking.ReadOptions{})
	if err == nil && d[0].Len() != coldTrackPoints {
		return fmt.Errorf("read %d points, want %d", d[0].Len(), coldTrackPoints)
	}
	return err
}

func readColdRuns(ctx context.Context, st store.Store) error {
	r, err := tracking.OpenRepo(ctx, st, "repo", tracking.RepoOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer r.Close()
	runs, err := r.Runs(ctx, tracking.RunFilter{})
	if err == nil && len(runs) != coldTrackRuns {
		return fmt.Errorf("%d runs, want %d", len(runs), coldTrackRuns)
	}
	return err
}
