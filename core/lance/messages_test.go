package lance

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kv0/kv0/core/store"
)

// TestMessagesNameTheDataset: errors about a dataset at the store's root
// say "the dataset" (the caller names the location), never `dataset ""`;
// one under a key prefix names its root.
func TestMessagesNameTheDataset(t *testing.T) {
	ctx := context.Background()
	nested := loadFixture(t, "default")
	atRoot := store.NewMemory()
	objs, err := nested.List(ctx, store.ListOptions{Prefix: "kv.lance/"})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		b, err := store.ReadAll(ctx, nested, o.Key)
		if err != nil {
			t.Fatal(err)
		}
		if err := atRoot.Put(ctx, strings.TrimPrefix(o.Key, "kv.lance/"), b); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		st        store.Store
		root, who string
	}{{atRoot, "", "the dataset"}, {nested, "kv.lance", `dataset "kv.lance"`}} {
		_, err := Open(ctx, tc.st, tc.root, OpenOptions{Version: 7777})
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "version 7777 of "+tc.who+" (") || strings.Contains(err.Error(), `""`) {
			t.Errorf("root %q, missing version: %v", tc.root, err)
		}
		_, err = Open(ctx, tc.st, tc.root, OpenOptions{Tag: "nope"})
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `tag "nope" of `+tc.who+" (") || strings.Contains(err.Error(), `""`) {
			t.Errorf("root %q, missing tag: %v", tc.root, err)
		}
	}
	_, err = Open(ctx, store.NewMemory(), "", OpenOptions{})
	if !errors.Is(err, ErrNotFound) || strings.Contains(err.Error(), `""`) {
		t.Errorf("empty store: %v", err)
	}
}
