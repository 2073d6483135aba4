package store_test

import (
	"context"
	"testing"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/store/storetest"
)

func TestMemoryConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return store.NewMemory() }, storetest.Options{})
}

func TestMemoryCounters(t *testing.T) {
	ctx := context.Background()
	m := store.NewMemory()
	if err := m.Put(ctx, "a", make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	if err := m.ReadAt(ctx, "a", make([]byte, 10), 5); err != nil {
		t.Fatal(err)
	}
	if _, err := m.List(ctx, store.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	c := m.Counters()
	want := store.Counters{Reads: 1, ReadBytes: 10, Lists: 1, Puts: 1, PutBytes: 100}
	if c != want {
		t.Fatalf("counters = %+v, want %+v", c, want)
	}
	if c.Requests() != 3 {
		t.Fatalf("Requests() = %d, want 3", c.Requests())
	}
	m.ResetCounters()
	if m.Counters() != (store.Counters{}) {
		t.Fatalf("counters after reset = %+v", m.Counters())
	}
}

func TestValidateKey(t *testing.T) {
	for _, k := range []string{"a", "a/b", "t.lance/_versions/1.manifest", "a..b/c"} {
		if err := store.ValidateKey(k); err != nil {
			t.Errorf("ValidateKey(%q) = %v, want nil", k, err)
		}
	}
	for _, p := range []string{"", "a/", "a/b/"} {
		if err := store.ValidatePrefix(p); err != nil {
			t.Errorf("ValidatePrefix(%q) = %v, want nil", p, err)
		}
	}
	if got := store.Join("a/", "", "/b", "c"); got != "a/b/c" {
		t.Errorf("Join = %q", got)
	}
}
