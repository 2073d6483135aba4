package lancelog_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/kv0/kv0/core/kv"
	"github.com/kv0/kv0/core/kv/lancelog"
	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
)

func put(seq uint64, k, v string) kv.Row {
	return kv.Row{Seq: seq, Op: kv.OpPut, Key: []byte(k), Value: []byte(v)}
}

func allRows(t *testing.T, l *lancelog.Log, v uint64) []kv.Row {
	t.Helper()
	var out []kv.Row
	err := l.ScanFragments(context.Background(), v, nil, func(b []kv.Row) error {
		for _, r := range b {
			r.Key = append([]byte(nil), r.Key...)
			if r.Value != nil {
				r.Value = append([]byte{}, r.Value...)
			}
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAppendScanTake(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	l, err := lancelog.Open(ctx, st, "kv.lance", lancelog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := l.Latest(ctx); err != nil || v != 0 {
		t.Fatalf("latest of nothing: %d %v", v, err)
	}
	res, err := l.Append(ctx, []kv.Row{put(1, "a", "1"), {Seq: 2, Op: kv.OpDelete, Key: []byte("b")}, {Seq: 3, Op: kv.OpDeleteRange, Key: []byte("c"), Value: []byte("d")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Addrs) != 3 || len(res.Added) != 1 || res.Addrs[2] != res.Added[0].ID<<32|2 {
		t.Fatalf("result %+v", res)
	}
	// The created dataset carries the automatic cleanup configuration.
	d, err := lance.Open(ctx, st, "kv.lance", lance.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := d.Config()
	if cfg[lance.ConfigAutoCleanupInterval] != "20" || cfg[lance.ConfigAutoCleanupOlderThan] != "7d" {
		t.Fatalf("config %v", cfg)
	}
	res2, err := l.Append(ctx, []kv.Row{put(4, "x", "big value")})
	if err != nil {
		t.Fatal(err)
	}
	latest, _ := l.Latest(ctx)
	if latest != res2.Version {
		t.Fatalf("latest %d, committed %d", latest, res2.Version)
	}
	rows := allRows(t, l, latest)
	if len(rows) != 4 || rows[1].Value != nil || string(rows[2].Value) != "d" || rows[3].Addr != res2.Addrs[0] {
		t.Fatalf("rows %+v", rows)
	}
	vals, err := l.Take(ctx, latest, []uint64{res2.Addrs[0], res.Addrs[0]})
	if err != nil || string(vals[0]) != "big value" || string(vals[1]) != "1" {
		t.Fatalf("take %q %v", vals, err)
	}
	frags, err := l.Fragments(ctx, latest)
	if err != nil || len(frags) != 2 || frags[0].DataFile == "" {
		t.Fatalf("fragments %+v %v", frags, err)
	}
	if _, err := l.Fragments(ctx, 99); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing version: %v", err)
	}

	// Materialize: lazy rows copy their values from the read version.
	ids := []uint64{frags[0].ID, frags[1].ID}
	seq := func(yield func(kv.Row) bool) {
		if !yield(put(1, "a", "1")) {
			return
		}
		yield(kv.Row{Seq: 4, Op: kv.OpPut, Key: []byte("x"), Lazy: true, Addr: res2.Addrs[0], ValueLen: 9})
	}
	mres, err := l.Materialize(ctx, latest, seq, ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(mres.Addrs) != 2 || len(mres.Removed) != 2 {
		t.Fatalf("materialize %+v", mres)
	}
	rows = allRows(t, l, mres.Version)
	if len(rows) != 2 || string(rows[1].Value) != "big value" || rows[1].Addr != mres.Addrs[1] {
		t.Fatalf("after materialize %+v", rows)
	}
	// A second materialize of the same read version conflicts.
	if _, err := l.Materialize(ctx, latest, seq, ids); !errors.Is(err, kv.ErrConflict) {
		t.Fatalf("second materialize: %v", err)
	}
	// Old versions stay readable until cleanup.
	if got := allRows(t, l, latest); len(got) != 4 {
		t.Fatalf("time travel: %d rows", len(got))
	}
	vs, err := l.Versions(ctx)
	if err != nil || len(vs) < 4 {
		t.Fatalf("versions %+v %v", vs, err)
	}
	n, err := l.CleanupOldVersions(ctx, 0)
	if err != nil || n == 0 {
		t.Fatalf("cleanup: %d %v", n, err)
	}
	if _, err := l.Take(ctx, latest, []uint64{res2.Addrs[0]}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("take from a cleaned version: %v", err)
	}
}

func TestConcurrentAppends(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	l0, err := lancelog.Open(ctx, st, "", lancelog.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	_ = l0
	const writers, commits = 4, 8
	var wg sync.WaitGroup
	errs := make(chan error, writers*commits)
	addrs := make([][]uint64, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, _ := lancelog.Open(ctx, st, "", lancelog.Options{})
			for c := range commits {
				res, err := l.Append(ctx, []kv.Row{put(uint64(w*100+c), fmt.Sprintf("w%d-%d", w, c), "v")})
				if err != nil {
					errs <- err
					return
				}
				addrs[w] = append(addrs[w], res.Addrs[0])
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	latest, _ := l0.Latest(ctx)
	rows := allRows(t, l0, latest)
	if len(rows) != writers*commits {
		t.Fatalf("%d rows, want %d", len(rows), writers*commits)
	}
	at := map[uint64]string{}
	for _, r := range rows {
		at[r.Addr] = string(r.Key)
	}
	for w := range writers {
		for c, a := range addrs[w] {
			if at[a] != fmt.Sprintf("w%d-%d", w, c) {
				t.Fatalf("address %#x holds %q", a, at[a])
			}
		}
	}
	res, err := l0.CompactFiles(ctx)
	if err != nil || res.Version == 0 || len(res.Removed) != writers*commits {
		t.Fatalf("compact files: %+v %v", res, err)
	}
	if rows := allRows(t, l0, res.Version); len(rows) != writers*commits {
		t.Fatalf("after compaction: %d rows", len(rows))
	}
}
