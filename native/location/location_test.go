package location_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/httpstore"
	"github.com/kv0/kv0/native/fsstore"
	"github.com/kv0/kv0/native/location"
	"github.com/kv0/kv0/native/s3store"
)

func TestOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "x"), []byte("local"), 0o644)

	st, root, err := location.Open(ctx, dir, location.Options{})
	if _, ok := st.(*fsstore.Store); !ok || root != "" || err != nil {
		t.Fatalf("local: %T %q %v", st, root, err)
	}
	if _, _, err := location.Open(ctx, filepath.Join(dir, "missing"), location.Options{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing folder: %v", err)
	}
	if _, _, err := location.Open(ctx, filepath.Join(dir, "new"), location.Options{Create: true}); err != nil {
		t.Fatalf("create: %v", err)
	}

	a, _, _ := location.Open(ctx, "memory://one", location.Options{})
	a.Put(ctx, "k", []byte("v"))
	b, _, _ := location.Open(ctx, "memory://one", location.Options{})
	if got, err := store.ReadAll(ctx, b, "k"); err != nil || string(got) != "v" {
		t.Fatalf("memory:// is not shared: %q %v", got, err)
	}
	location.ForgetMemory("one")

	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
	t.Setenv("KV0_S3_ALLOW_HTTP", "1")
	t.Setenv("KV0_S3_PATH_STYLE", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", "x")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "y")
	st, _, err = location.Open(ctx, "s3://bucket/some/prefix", location.Options{})
	if s, ok := st.(*s3store.Store); !ok || err != nil || s.Bucket() != "bucket" || s.Prefix() != "some/prefix/" {
		t.Fatalf("s3: %T %v", st, err)
	}

	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	st, _, err = location.Open(ctx, srv.URL, location.Options{})
	if _, ok := st.(*httpstore.Store); !ok || err != nil {
		t.Fatalf("http: %T %v", st, err)
	}
	if got, err := store.ReadAll(ctx, st, "x"); err != nil || string(got) != "local" {
		t.Fatalf("http read: %q %v", got, err)
	}
	if _, _, err := location.Open(ctx, "gs://b/x", location.Options{}); err == nil {
		t.Fatal("unknown scheme accepted")
	}
}
