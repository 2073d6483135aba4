package location_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/httpstore"
	"github.com/kv0/kv0/native/azblobstore"
	"github.com/kv0/kv0/native/fsstore"
	"github.com/kv0/kv0/native/gcsstore"
	"github.com/kv0/kv0/native/location"
	"github.com/kv0/kv0/native/s3store"
	"github.com/kv0/kv0/tests/azure"
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
	for _, empty := range []string{"", " "} {
		if _, _, err := location.Open(ctx, empty, location.Options{Create: true}); err == nil || !strings.Contains(err.Error(), "empty") {
			t.Errorf("location %q: %v, want an error (not the current directory)", empty, err)
		}
	}

	// A memory:// store is private to the handle that opened it.
	a, _, _ := location.Open(ctx, "memory://one", location.Options{})
	a.Put(ctx, "k", []byte("v"))
	b, _, _ := location.Open(ctx, "memory://one", location.Options{})
	if got, err := store.ReadAll(ctx, b, "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a second memory://one sees the first one's object: %q %v", got, err)
	}

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
		"gs://bkt/p/": "gs://bkt/p", "GS://bkt//p": "gs://bkt/p", "gs://bkt": "gs://bkt",
		"az://box/p/": "az://box/p", "Az://box//p/q/": "az://box/p/q", "az://box/": "az://box",
		"memory://x/": "memory://x", "HTTPS://h/p/": "https://h/p", "http://h:1/p": "http://h:1/p", "kv0+signer://h:1/db.lance/": "kv0+signer://h:1/db.lance",
	} {
		if got, err := location.Canonical(loc); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", loc, got, err, want)
		}
	}
	for _, loc := range []string{"gcs://b/x", "s3:///x", "memory://", "gs://B/x", "gs://bkt/a//b", "az://a_b/x", "az://box/../x"} {
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

func TestRepoWALKey(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	abs, _ := filepath.Abs("repo")
	for loc, want := range map[string]string{
		"memory://x": "", "s3://bucket/p/": "repo:s3://bucket/p", "S3://bucket//p": "repo:s3://bucket/p",
		"repo": "repo:" + abs, "./repo/": "repo:" + abs, abs: "repo:" + abs, "file://" + abs: "repo:" + abs,
	} {
		if got, err := location.RepoWALKey(loc); err != nil || got != want {
			t.Errorf("RepoWALKey(%q) = %q, %v; want %q", loc, got, err, want)
		}
	}
}

// TestCloudLocations opens gs:// through STORAGE_EMULATOR_HOST (an
// in-process fake-gcs-server) and az:// through a connection string's
// BlobEndpoint (Azurite), and round-trips an object through each.
func TestCloudLocations(t *testing.T) {
	ctx := context.Background()
	fake, err := fakestorage.NewServerWithOptions(fakestorage.Options{NoListener: true, PublicHost: "127.0.0.1", Writer: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	fake.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: "kv0-loc"})
	hs := httptest.NewServer(fake.HTTPHandler())
	defer hs.Close()
	t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(hs.URL, "http://"))
	st, root, err := location.Open(ctx, "gs://kv0-loc/some/prefix/", location.Options{})
	if s, ok := st.(*gcsstore.Store); !ok || err != nil || root != "" || s.Bucket() != "kv0-loc" || s.Prefix() != "some/prefix/" {
		t.Fatalf("gs: %T %q %v", st, root, err)
	}
	roundTrip(t, st)
	if got, err := fake.GetObject("kv0-loc", "some/prefix/k"); err != nil || string(got.Content) != "v" {
		t.Fatalf("gs object: %v", err)
	}

	t.Run("az", func(t *testing.T) {
		azure.Skip(t, azurite, azuriteWhy)
		t.Setenv("AZURE_STORAGE_CONNECTION_STRING", azurite.ConnectionString)
		c, err := azblobstore.NewContainerClient("kv0-loc", azblobstore.Options{ConnectionString: azurite.ConnectionString})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		st, root, err := location.Open(ctx, "az://kv0-loc/some/prefix", location.Options{})
		if s, ok := st.(*azblobstore.Store); !ok || err != nil || root != "" || s.Container() != "kv0-loc" || s.Prefix() != "some/prefix/" {
			t.Fatalf("az: %T %q %v", st, root, err)
		}
		roundTrip(t, st)
		t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "")
		t.Setenv("AZURE_STORAGE_ACCOUNT", "")
		if _, _, err := location.Open(ctx, "az://kv0-loc/x", location.Options{}); !errors.Is(err, azblobstore.ErrNoCredentials) {
			t.Fatalf("az without an account: %v", err)
		}
	})
}

func roundTrip(t *testing.T, st store.Store) {
	t.Helper()
	ctx := context.Background()
	if err := st.PutIfAbsent(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := st.PutIfAbsent(ctx, "k", []byte("w")); !errors.Is(err, store.ErrExists) {
		t.Fatalf("second create: %v", err)
	}
	if got, err := store.ReadAll(ctx, st, "k"); err != nil || string(got) != "v" {
		t.Fatalf("read back %q, %v", got, err)
	}
}

var (
	azurite    *azure.Server
	azuriteWhy string
)

func TestMain(m *testing.M) {
	azurite, azuriteWhy = azure.Require()
	code := m.Run()
	azurite.Stop()
	os.Exit(code)
}
