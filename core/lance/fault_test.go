package lance

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var errInjected = errors.New("injected fault")

// faultStore fails (or applies, then reports failure for) the first write
// whose key matches.
type faultStore struct {
	*timedStore
	mu     sync.Mutex
	match  string // substring of the key
	after  bool   // perform the write, then fail
	armed  bool
	delay  time.Duration
	failed int
}

func (s *faultStore) hit(key string) (fail, after bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.armed && strings.Contains(key, s.match) {
		s.armed = false
		s.failed++
		return true, s.after
	}
	return false, false
}

func (s *faultStore) write(ctx context.Context, key string, put func() error) error {
	if s.delay > 0 {
		time.Sleep(s.delay)
	}
	fail, after := s.hit(key)
	if !fail {
		return put()
	}
	if after {
		if err := put(); err != nil {
			return err
		}
	}
	return errInjected
}

func (s *faultStore) Put(ctx context.Context, key string, data []byte) error {
	return s.write(ctx, key, func() error { return s.timedStore.Put(ctx, key, data) })
}

func (s *faultStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return s.write(ctx, key, func() error { return s.timedStore.PutIfAbsent(ctx, key, data) })
}

func TestFaults(t *testing.T) {
	cases := []struct {
		name      string
		match     string
		after     bool
		committed bool // the append must be acknowledged
	}{
		{"data file write fails", "/data/", false, false},
		{"transaction file write fails", "/_transactions/", false, false},
		{"manifest put fails before", ".manifest", false, false},
		{"manifest put fails after", ".manifest", true, true}, // read back: it did commit
		{"hint write fails", "latest_version_hint", false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			fs := &faultStore{timedStore: newTimedStore()}
			d := mustCreate(t, fs, "t", 0, 10, WriteOptions{})
			fs.mu.Lock()
			fs.match, fs.after, fs.armed = c.match, c.after, true
			fs.mu.Unlock()
			rec := idBatch(10, 20)
			nd, err := d.Append(ctx, Batches(rec), WriteOptions{})
			rec.Release()
			if fs.failed != 1 {
				t.Fatalf("fault not hit")
			}
			latest, lerr := Open(ctx, fs, "t", OpenOptions{})
			if lerr != nil {
				t.Fatal(lerr)
			}
			if c.committed {
				if err != nil || nd.Version() != 2 || !slices.Equal(ids(t, latest), seq(0, 20)) {
					t.Fatalf("acknowledged commit: err %v", err)
				}
			} else {
				if err == nil {
					t.Fatal("append succeeded despite the fault")
				}
				if latest.Version() != 1 || !slices.Equal(ids(t, latest), seq(0, 10)) {
					t.Fatalf("failed commit changed the dataset: version %d", latest.Version())
				}
			}
			// Cleanup removes leftovers once they are old enough, and the
			// dataset stays readable.
			later := time.Now().Add(time.Hour)
			fs.timedStore.now = func() time.Time { return later.Add(-30 * time.Minute) }
			if _, err := CleanupOldVersions(ctx, fs, "t", time.Minute, CleanupOptions{Now: func() time.Time { return later }}); err != nil {
				t.Fatal(err)
			}
			latest, _ = Open(ctx, fs, "t", OpenOptions{})
			files := map[string]bool{}
			refs, _ := referencedFiles(ctx, latest)
			for _, r := range refs {
				files[r] = true
			}
			for _, dir := range []string{"t/data/", "t/_transactions/", "t/_deletions/"} {
				for _, k := range keysUnder(t, fs, dir) {
					if !files[k] {
						t.Errorf("leftover %s not cleaned up", k)
					}
				}
			}
			ids(t, latest)
		})
	}
}

func TestSlowStoreConcurrentAppends(t *testing.T) {
	ctx := context.Background()
	fs := &faultStore{timedStore: newTimedStore(), delay: time.Millisecond}
	mustCreate(t, fs, "t", 0, 0, WriteOptions{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var d *Dataset
			for i := 0; i < 15; i++ {
				var err error
				if d, err = appendOne(ctx, fs, "t", d, int64(w*1000+i)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	d, _ := Open(ctx, fs, "t", OpenOptions{})
	if got := ids(t, d); len(got) != 60 || d.Version() != 61 {
		t.Fatalf("%d rows at version %d", len(got), d.Version())
	}
}
