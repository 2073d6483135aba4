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

func TestSignedLocations(t *testing.T) {
	ctx := context.Background()
	t.Setenv("KV0_SIGNER_TOKEN", "")
	t.Setenv("KV0_SIGNER_TOKEN_FILE", "")
	if _, _, err := location.Open(ctx, "kv0+signer://127.0.0.1:1/repo", location.Options{}); !errors.Is(err, location.ErrNoToken) {
		t.Errorf("no token: %v", err)
	}
	tok := filepath.Join(t.TempDir(), "tok")
	os.WriteFile(tok, []byte("  secret-token \nsecond line\n"), 0o600)
	t.Setenv("KV0_SIGNER_TOKEN_FILE", tok)
	for loc, want := range map[string]string{
		"kv0+signer://127.0.0.1:1/runs/": "runs", "KV0+Signers://sign.example/a/b.lance": "a/b.lance", "kv0+signer://h:1": "", "kv0+signer://h:1/.": "",
	} {
		st, root, err := location.Open(ctx, loc, location.Options{})
		if _, ok := st.(*httpstore.Store); !ok || err != nil || root != want {
			t.Errorf("%s: %T root %q %v, want root %q", loc, st, root, err, want)
		}
		if !location.ReadOnly(loc, location.Options{}) {
			t.Errorf("%s is not read-only", loc)
		}
	}
	for _, loc := range []string{"kv0+signer:///x", "kv0+signer://h:1/a/../b", "kv0+signer://h:1/a//b"} {
		if _, _, err := location.Open(ctx, loc, location.Options{}); err == nil {
			t.Errorf("%s accepted", loc)
		}
	}
	// With Signer, a plain location is a key of the signer's repository.
	st, root, err := location.Open(ctx, "sub/t.lance", location.Options{Signer: "https://sign.example/base", SignerToken: "x"})
	if _, ok := st.(*httpstore.Store); !ok || err != nil || root != "sub/t.lance" {
		t.Errorf("--signer: %T %q %v", st, root, err)
	}
	if !location.ReadOnly("sub/t.lance", location.Options{Signer: "https://sign.example"}) || location.ReadOnly("sub/t.lance", location.Options{}) ||
		location.ReadOnly("s3://b/p", location.Options{}) || !location.ReadOnly("https://x/y", location.Options{}) {
		t.Error("ReadOnly")
	}
	if got, err := location.ReadToken(tok); err != nil || got != "secret-token" {
		t.Errorf("ReadToken: %q %v", got, err)
	}
}

func TestCanonical(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	abs, _ := filepath.Abs("repo")
	want := "file://" + filepath.ToSlash(abs)
	for _, loc := range []string{"repo", "./repo/", abs, abs + "/", filepath.Join(abs, "..", "repo"), "file://" + abs, "FILE://" + abs + "/"} {
		if got, err := location.Canonical(loc); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", loc, got, err, want)
		}
	}
	for loc, want := range map[string]string{
		"s3://b/p": "s3://b/p", "s3://b/p/": "s3://b/p", "s3://b//p//": "s3://b/p", "S3://b/p": "s3://b/p", "s3://b": "s3://b",
		"memory://x/": "memory://x", "HTTPS://h/p/": "https://h/p", "http://h:1/p": "http://h:1/p", "kv0+signer://h:1/db.lance/": "kv0+signer://h:1/db.lance",
	} {
		if got, err := location.Canonical(loc); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", loc, got, err, want)
		}
	}
	for _, loc := range []string{"gs://b/x", "s3:///x", "memory://"} {
		if got, err := location.Canonical(loc); err == nil {
			t.Errorf("%s: %q, want an error", loc, got)
		}
	}
	if !location.ReadOnly("HTTPS://x/y", location.Options{}) || location.ReadOnly("s3://b", location.Options{}) || location.ReadOnly("rel/path", location.Options{}) {
		t.Error("ReadOnly")
	}
	if p, ok := location.LocalPath("file:///a/b"); !ok || p != "/a/b" {
		t.Errorf("LocalPath(file:///a/b) = %q %v", p, ok)
	}
	if _, ok := location.LocalPath("s3://b/p"); ok {
		t.Error("LocalPath(s3://b/p) is local")
	}
}
