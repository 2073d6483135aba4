package r2store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/store/storetest"
)

// fakeBucket models the R2 binding as the worker sees it: a range that
// starts past the end throws (R2's InvalidRange), a range that runs past
// it is cut at the end, listings come in pages of pageSize with an opaque
// cursor.
type fakeBucket struct {
	mu       sync.Mutex
	objects  map[string][]byte
	pageSize int
	cut      int   // when > 0, bodies end after this many bytes (a dropped stream)
	fail     error // when set, every call fails with it
}

func (b *fakeBucket) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail != nil {
		return nil, 0, b.fail
	}
	d, ok := b.objects[key]
	if !ok {
		return nil, 0, store.ErrNotFound
	}
	if off >= int64(len(d)) && !(off == 0 && len(d) == 0) {
		return nil, 0, errors.New("get: InvalidRange (10039)")
	}
	end := min(off+n, int64(len(d)))
	part := d[off:end]
	if b.cut > 0 && len(part) > b.cut {
		part = part[:b.cut]
	}
	return io.NopCloser(bytes.NewReader(part)), int64(len(d)), nil
}

func (b *fakeBucket) Head(ctx context.Context, key string) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail != nil {
		return 0, b.fail
	}
	d, ok := b.objects[key]
	if !ok {
		return 0, store.ErrNotFound
	}
	return int64(len(d)), nil
}

func (b *fakeBucket) List(ctx context.Context, prefix, startAfter, cursor string, limit int) ([]store.ObjectInfo, string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail != nil {
		return nil, "", b.fail
	}
	if limit <= 0 || limit > pageLimit {
		return nil, "", errors.New("list: bad limit " + strconv.Itoa(limit))
	}
	var keys []string
	for k := range b.objects {
		if strings.HasPrefix(k, prefix) && k > startAfter && k > cursor {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	n := min(limit, b.pageSize, len(keys))
	page := make([]store.ObjectInfo, n)
	for i, k := range keys[:n] {
		page[i] = store.ObjectInfo{Key: k, Size: int64(len(b.objects[k]))}
	}
	next := ""
	if n < len(keys) {
		next = keys[n-1]
	}
	return page, next, nil
}

func mustNew(t *testing.T, b Bucket, prefix string) *Store {
	t.Helper()
	s, err := New(b, prefix)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestConformance runs the store suite over the whole bucket and over a
// prefix, with keys beside the prefix that must stay invisible.
func TestConformance(t *testing.T) {
	for _, prefix := range []string{"", "repos/main"} {
		t.Run("prefix="+prefix, func(t *testing.T) {
			var cur *fakeBucket
			storetest.Run(t, func(t *testing.T) store.Store {
				cur = &fakeBucket{objects: map[string][]byte{}, pageSize: 3}
				if prefix != "" {
					cur.objects = map[string][]byte{"repos/mainx/a": {1}, "repos/a": {2}, "zz": {3}}
				}
				return mustNew(t, cur, prefix)
			}, storetest.Options{ReadOnly: true, Seed: func(t *testing.T, objects map[string][]byte) {
				for k, v := range objects {
					cur.objects[store.Join(prefix, k)] = bytes.Clone(v)
				}
			}})
		})
	}
	for _, bad := range []string{"a/../b", "a\\b", "a//b"} {
		if _, err := New(&fakeBucket{}, bad); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("New(prefix %q): %v, want ErrInvalidKey", bad, err)
		}
	}
}

// TestFailures: a body cut short and a failing binding are ErrBucket-like
// errors (502 in the API), never short data; a missing object stays
// ErrNotFound; writes are refused.
func TestFailures(t *testing.T) {
	ctx := context.Background()
	b := &fakeBucket{objects: map[string][]byte{"t/a": []byte("0123456789")}, pageSize: 2}
	s := mustNew(t, b, "")
	b.cut = 4
	err := s.ReadAt(ctx, "t/a", make([]byte, 8), 1)
	if !errors.Is(err, ErrBucket) || errors.Is(err, store.ErrShortObject) {
		t.Fatalf("cut body: %v, want ErrBucket", err)
	}
	b.cut = 0
	b.fail = errors.New("binding exploded")
	for name, err := range map[string]error{
		"read": s.ReadAt(ctx, "t/a", make([]byte, 2), 0),
		"stat": func() error { _, err := s.Stat(ctx, "t/a"); return err }(),
		"list": func() error { _, err := s.List(ctx, store.ListOptions{Prefix: "t/"}); return err }(),
	} {
		if err == nil || !strings.Contains(err.Error(), "binding exploded") || errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s on a failing binding: %v", name, err)
		}
	}
	b.fail = nil
	if err := s.ReadAt(ctx, "t/nope", make([]byte, 2), 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	for _, err := range []error{s.Put(ctx, "t/b", nil), s.PutIfAbsent(ctx, "t/b", nil), s.Delete(ctx, "t/a")} {
		if !errors.Is(err, store.ErrNotSupported) {
			t.Fatalf("write: %v, want ErrNotSupported", err)
		}
	}
}

// badOrder answers a listing out of order, which must not pass silently.
type badOrder struct{ fakeBucket }

func (b *badOrder) List(ctx context.Context, prefix, startAfter, cursor string, limit int) ([]store.ObjectInfo, string, error) {
	return []store.ObjectInfo{{Key: "p/b"}, {Key: "p/a"}}, "", nil
}

func TestListOrderChecked(t *testing.T) {
	_, err := mustNew(t, &badOrder{}, "").List(context.Background(), store.ListOptions{Prefix: "p/"})
	if !errors.Is(err, ErrBucket) {
		t.Fatalf("out-of-order listing: %v, want ErrBucket", err)
	}
}

// TestListPagesModel lists random prefixes, start positions and limits
// over small pages and compares with a sorted model.
func TestListPagesModel(t *testing.T) {
	b := &fakeBucket{objects: map[string][]byte{}, pageSize: 4}
	var all []string
	for i := 0; i < 57; i++ {
		k := "d" + strconv.Itoa(i%3) + "/k" + strconv.Itoa(i*7919%1000)
		b.objects[k] = make([]byte, i)
		all = append(all, k)
	}
	sort.Strings(all)
	s := mustNew(t, b, "")
	for _, prefix := range []string{"", "d0/", "d1/", "d2/k", "zz/"} {
		for _, after := range []string{"", "d0/k5", "d1/k", "d2/k999"} {
			for _, limit := range []int{0, 1, 4, 5, 100} {
				got, err := s.List(context.Background(), store.ListOptions{Prefix: prefix, StartAfter: after, Limit: limit})
				if err != nil {
					t.Fatal(err)
				}
				var want []string
				for _, k := range all {
					if strings.HasPrefix(k, prefix) && k > after && (limit == 0 || len(want) < limit) {
						want = append(want, k)
					}
				}
				var keys []string
				for _, o := range got {
					keys = append(keys, o.Key)
					if o.Size != int64(len(b.objects[o.Key])) {
						t.Fatalf("size of %s: %d", o.Key, o.Size)
					}
				}
				if strings.Join(keys, ",") != strings.Join(want, ",") {
					t.Fatalf("List(%q, %q, %d) = %v, want %v", prefix, after, limit, keys, want)
				}
			}
		}
	}
}
