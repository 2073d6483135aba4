// Package storetest is the conformance suite every store.Store implementation
// runs: the in-memory store, the local filesystem, S3 and HTTP stores.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kv0/kv0/core/store"
)

// Options describe what the store under test can do.
type Options struct {
	// ReadOnly stores are checked for reads only; Seed fills them first.
	ReadOnly bool
	// NoList marks stores that cannot list (List must return ErrNotSupported).
	NoList bool
	// Seed writes objects into a read-only store through a side door.
	Seed func(t *testing.T, objects map[string][]byte)
}

// Run checks that the stores returned by open behave as the store.Store
// contract says. open must return a new, empty store on every call.
func Run(t *testing.T, open func(t *testing.T) store.Store, opts Options) {
	ctx := context.Background()
	put := func(t *testing.T, s store.Store, objects map[string][]byte) {
		t.Helper()
		if opts.ReadOnly {
			opts.Seed(t, objects)
			return
		}
		for k, v := range objects {
			if err := s.Put(ctx, k, v); err != nil {
				t.Fatalf("Put(%q): %v", k, err)
			}
		}
	}

	t.Run("ReadAt", func(t *testing.T) {
		s := open(t)
		data := []byte("0123456789abcdef")
		put(t, s, map[string][]byte{"a/b.bin": data})
		for _, c := range []struct{ off, n int }{{0, 16}, {0, 0}, {3, 5}, {15, 1}, {16, 0}} {
			buf := make([]byte, c.n)
			if err := s.ReadAt(ctx, "a/b.bin", buf, int64(c.off)); err != nil {
				t.Fatalf("ReadAt(%d, %d): %v", c.off, c.n, err)
			}
			if !bytes.Equal(buf, data[c.off:c.off+c.n]) {
				t.Fatalf("ReadAt(%d, %d) = %q, want %q", c.off, c.n, buf, data[c.off:c.off+c.n])
			}
		}
		for _, c := range []struct{ off, n int }{{10, 7}, {17, 1}, {-1, 2}, {-1, 0}} {
			err := s.ReadAt(ctx, "a/b.bin", make([]byte, c.n), int64(c.off))
			if !errors.Is(err, store.ErrShortObject) {
				t.Fatalf("ReadAt(%d, %d) past the end: err = %v, want ErrShortObject", c.off, c.n, err)
			}
		}
		for _, n := range []int{1, 0} {
			if err := s.ReadAt(ctx, "a/missing", make([]byte, n), 0); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("ReadAt(0, %d) of a missing object: err = %v, want ErrNotFound", n, err)
			}
		}
	})

	t.Run("Stat", func(t *testing.T) {
		s := open(t)
		put(t, s, map[string][]byte{"x/y": make([]byte, 1234), "x/empty": {}})
		info, err := s.Stat(ctx, "x/y")
		if err != nil || info.Size != 1234 || info.Key != "x/y" {
			t.Fatalf("Stat = %+v, %v; want size 1234", info, err)
		}
		if info, err := s.Stat(ctx, "x/empty"); err != nil || info.Size != 0 {
			t.Fatalf("Stat(empty) = %+v, %v", info, err)
		}
		if _, err := s.Stat(ctx, "x/z"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Stat of a missing object: err = %v, want ErrNotFound", err)
		}
	})

	t.Run("List", func(t *testing.T) {
		s := open(t)
		objs := map[string][]byte{}
		keys := []string{"d/_versions/01.manifest", "d/_versions/02.manifest", "d/_versions/10.manifest",
			"d/data/a.lance", "d/data/b.lance", "d/data2", "e/x", "d/_versions/latest_version_hint.json"}
		for i, k := range keys {
			objs[k] = bytes.Repeat([]byte{'z'}, i+1)
		}
		put(t, s, objs)
		if opts.NoList {
			if _, err := s.List(ctx, store.ListOptions{Prefix: "d/"}); !errors.Is(err, store.ErrNotSupported) {
				t.Fatalf("List on a store without listing: err = %v, want ErrNotSupported", err)
			}
			return
		}
		check := func(o store.ListOptions, want ...string) {
			t.Helper()
			got, err := s.List(ctx, o)
			if err != nil {
				t.Fatalf("List(%+v): %v", o, err)
			}
			var names []string
			for _, g := range got {
				names = append(names, g.Key)
				if int(g.Size) != len(objs[g.Key]) {
					t.Fatalf("List(%+v): %s has size %d, want %d", o, g.Key, g.Size, len(objs[g.Key]))
				}
			}
			if fmt.Sprint(names) != fmt.Sprint(want) {
				t.Fatalf("List(%+v) = %v, want %v", o, names, want)
			}
		}
		check(store.ListOptions{Prefix: "d/_versions/"}, "d/_versions/01.manifest", "d/_versions/02.manifest",
			"d/_versions/10.manifest", "d/_versions/latest_version_hint.json")
		check(store.ListOptions{Prefix: "d/_versions/", Limit: 1}, "d/_versions/01.manifest")
		check(store.ListOptions{Prefix: "d/_versions/", StartAfter: "d/_versions/01.manifest", Limit: 2},
			"d/_versions/02.manifest", "d/_versions/10.manifest")
		check(store.ListOptions{Prefix: "d/data"}, "d/data/a.lance", "d/data/b.lance", "d/data2")
		check(store.ListOptions{Prefix: "d/nothing/"})
		check(store.ListOptions{Prefix: "e/", StartAfter: "e/x"})
		all, err := s.List(ctx, store.ListOptions{})
		if err != nil || len(all) != len(keys) {
			t.Fatalf("List() = %d objects, %v; want %d", len(all), err, len(keys))
		}
	})

	t.Run("InvalidKeys", func(t *testing.T) {
		s := open(t)
		for _, k := range []string{"", "/abs", "a/../b", "..", "a//b", "./a", "a/.", "a\\b"} {
			if err := s.ReadAt(ctx, k, make([]byte, 1), 0); !errors.Is(err, store.ErrInvalidKey) {
				t.Errorf("ReadAt(%q): err = %v, want ErrInvalidKey", k, err)
			}
			if _, err := s.Stat(ctx, k); !errors.Is(err, store.ErrInvalidKey) {
				t.Errorf("Stat(%q): err = %v, want ErrInvalidKey", k, err)
			}
			if !opts.ReadOnly {
				if err := s.Put(ctx, k, []byte("x")); !errors.Is(err, store.ErrInvalidKey) {
					t.Errorf("Put(%q): err = %v, want ErrInvalidKey", k, err)
				}
			}
		}
		if !opts.NoList {
			if _, err := s.List(ctx, store.ListOptions{Prefix: "../"}); !errors.Is(err, store.ErrInvalidKey) {
				t.Errorf("List(../): err = %v, want ErrInvalidKey", err)
			}
		}
	})

	if opts.ReadOnly {
		t.Run("ReadOnly", func(t *testing.T) {
			s := open(t)
			if err := s.Put(ctx, "a", []byte("x")); !errors.Is(err, store.ErrNotSupported) {
				t.Fatalf("Put on a read-only store: err = %v, want ErrNotSupported", err)
			}
			if err := s.PutIfAbsent(ctx, "a", []byte("x")); !errors.Is(err, store.ErrNotSupported) {
				t.Fatalf("PutIfAbsent on a read-only store: err = %v, want ErrNotSupported", err)
			}
			if err := s.Delete(ctx, "a"); !errors.Is(err, store.ErrNotSupported) {
				t.Fatalf("Delete on a read-only store: err = %v, want ErrNotSupported", err)
			}
		})
		return
	}

	t.Run("PutOverwriteDelete", func(t *testing.T) {
		s := open(t)
		if err := s.Put(ctx, "p/q", []byte("one")); err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, "p/q", []byte("three")); err != nil {
			t.Fatal(err)
		}
		got, err := store.ReadAll(ctx, s, "p/q")
		if err != nil || string(got) != "three" {
			t.Fatalf("after overwrite: %q, %v", got, err)
		}
		if err := s.Delete(ctx, "p/q"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Stat(ctx, "p/q"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Stat after Delete: err = %v, want ErrNotFound", err)
		}
		if err := s.Delete(ctx, "p/q"); err != nil {
			t.Fatalf("Delete of a missing object: %v", err)
		}
		if !opts.NoList {
			if got, _ := s.List(ctx, store.ListOptions{Prefix: "p/"}); len(got) != 0 {
				t.Fatalf("List after Delete = %v", got)
			}
		}
	})

	t.Run("PutIfAbsent", func(t *testing.T) {
		s := open(t)
		if err := s.PutIfAbsent(ctx, "v/1", []byte("first")); err != nil {
			t.Fatal(err)
		}
		err := s.PutIfAbsent(ctx, "v/1", []byte("second"))
		if !errors.Is(err, store.ErrExists) {
			t.Fatalf("second PutIfAbsent: err = %v, want ErrExists", err)
		}
		if got, _ := store.ReadAll(ctx, s, "v/1"); string(got) != "first" {
			t.Fatalf("object after a lost PutIfAbsent = %q, want %q", got, "first")
		}
	})

	t.Run("PutIfAbsentRace", func(t *testing.T) {
		s := open(t)
		const writers = 32
		var wins atomic.Int32
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				payload := bytes.Repeat([]byte{byte('A' + i%26)}, 4096+i)
				switch err := s.PutIfAbsent(ctx, "race/manifest", payload); {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, store.ErrExists):
				default:
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("PutIfAbsent: unexpected error %v", err)
		}
		if wins.Load() != 1 {
			t.Fatalf("%d concurrent creates succeeded, want exactly 1", wins.Load())
		}
		got, err := store.ReadAll(ctx, s, "race/manifest")
		if err != nil {
			t.Fatal(err)
		}
		n := len(got) - 4096
		if n < 0 || n >= writers || !bytes.Equal(got, bytes.Repeat([]byte{byte('A' + n%26)}, 4096+n)) {
			t.Fatalf("winner's object is torn or mixed (%d bytes)", len(got))
		}
		if !opts.NoList {
			if got, _ := s.List(ctx, store.ListOptions{Prefix: "race/"}); len(got) != 1 {
				t.Fatalf("List after the race = %v, want one object (no leftovers)", got)
			}
		}
	})

	t.Run("ObjectWriter", func(t *testing.T) {
		if opts.ReadOnly {
			t.Skip("read-only store")
		}
		s := open(t)
		w, err := store.NewObjectWriter(ctx, s, "w/obj")
		if err != nil {
			t.Fatal(err)
		}
		var want []byte
		for i := range 5 {
			p := bytes.Repeat([]byte{byte('a' + i)}, 1000*(i+1))
			want = append(want, p...)
			if err := w.Append(p); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Stat(ctx, "w/obj"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Stat before Commit: err = %v, want ErrNotFound", err)
			}
		}
		if err := w.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		w.Abort() // after Commit: nothing
		if got, err := store.ReadAll(ctx, s, "w/obj"); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("committed object: %d bytes, %v; want %d bytes", len(got), err, len(want))
		}
		// A large object, in pieces of 1 MiB (a multipart upload on S3).
		big, err := store.NewObjectWriter(ctx, s, "w/big")
		if err != nil {
			t.Fatal(err)
		}
		var bigWant []byte
		for i := range 12 {
			p := bytes.Repeat([]byte{byte(i)}, 1<<20)
			p[0], p[len(p)-1] = 'a', 'z'
			bigWant = append(bigWant, p...)
			if err := big.Append(p); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Stat(ctx, "w/big"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Stat of a large object before Commit: err = %v, want ErrNotFound", err)
		}
		if err := big.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if got, err := store.ReadAll(ctx, s, "w/big"); err != nil || !bytes.Equal(got, bigWant) {
			t.Fatalf("large object: %d bytes, %v; want %d bytes", len(got), err, len(bigWant))
		}
		// An aborted object leaves nothing behind.
		a, err := store.NewObjectWriter(ctx, s, "w/aborted")
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Append([]byte("partial")); err != nil {
			t.Fatal(err)
		}
		a.Abort()
		if _, err := s.Stat(ctx, "w/aborted"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Stat after Abort: err = %v, want ErrNotFound", err)
		}
		if !opts.NoList {
			if got, _ := s.List(ctx, store.ListOptions{Prefix: "w/"}); len(got) != 2 {
				t.Fatalf("List after two commits and an abort = %v, want the committed objects alone", got)
			}
		}
	})

	t.Run("Cancelled", func(t *testing.T) {
		s := open(t)
		put(t, s, map[string][]byte{"c/d": []byte("x")})
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := s.ReadAt(cctx, "c/d", make([]byte, 1), 0); !errors.Is(err, context.Canceled) {
			t.Fatalf("ReadAt with a cancelled context: err = %v, want context.Canceled", err)
		}
		if err := s.Put(cctx, "c/e", []byte("x")); !errors.Is(err, context.Canceled) {
			t.Fatalf("Put with a cancelled context: err = %v, want context.Canceled", err)
		}
	})
}
