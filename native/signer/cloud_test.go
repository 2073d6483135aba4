package signer_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/store/storetest"
	"github.com/kv0/kv0/httpstore"
	"github.com/kv0/kv0/native/azblobstore"
	"github.com/kv0/kv0/native/gcsstore"
	"github.com/kv0/kv0/native/signer"
	"github.com/kv0/kv0/tests/azure"
)

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

// signedConformance runs the read-only suite on httpstore in signed mode
// through g, seeding objects with w below the repository.
func signedConformance(t *testing.T, open func(t *testing.T, n int) (*signer.Signer, store.Store)) {
	var n int
	var w store.Store
	storetest.Run(t, func(t *testing.T) store.Store {
		n++
		g, writer := open(t, n)
		w = writer
		s, err := httpstore.OpenSigned(g, httpstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, storetest.Options{ReadOnly: true, Seed: func(t *testing.T, objects map[string][]byte) {
		for k, v := range objects {
			if err := w.Put(context.Background(), k, v); err != nil {
				t.Fatal(err)
			}
		}
	}})
}

// TestGCSSignedConformance: V4 URLs (object GET, XML bucket listing)
// signed with a service-account key read fake-gcs-server through
// httpstore. The emulator does not check signatures; the test proves the
// URLs' shape, host and parameters and the XML listing's parsing.
func TestGCSSignedConformance(t *testing.T) {
	fake, err := fakestorage.NewServerWithOptions(fakestorage.Options{NoListener: true, PublicHost: "127.0.0.1", Writer: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	fake.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: "kv0-sign"})
	hs := httptest.NewServer(fake.HTTPHandler())
	defer hs.Close()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	ctx := context.Background()
	signedConformance(t, func(t *testing.T, n int) (*signer.Signer, store.Store) {
		uri := fmt.Sprintf("gs://kv0-sign/repo%d", n)
		g, err := signer.New(ctx, uri, signer.Options{GCS: gcsstore.Options{Endpoint: hs.URL},
			GCSSigning: signer.GCSSigning{GoogleAccessID: "kv0@example.iam.gserviceaccount.com", PrivateKey: pemKey}})
		if err != nil {
			t.Fatal(err)
		}
		w, err := gcsstore.Open(ctx, uri, gcsstore.Options{Endpoint: hs.URL})
		if err != nil {
			t.Fatal(err)
		}
		return g, w
	})
	g, err := signer.New(ctx, "gs://kv0-sign/repo1", signer.Options{GCS: gcsstore.Options{Endpoint: hs.URL},
		GCSSigning: signer.GCSSigning{GoogleAccessID: "kv0@example.iam.gserviceaccount.com", PrivateKey: pemKey}})
	if err != nil {
		t.Fatal(err)
	}
	u, err := g.Sign(ctx, httpstore.OpGet, "a/b", httpstore.ListParams{})
	if err != nil || !strings.Contains(u, "/kv0-sign/repo1/a/b?") || !strings.Contains(u, "X-Goog-Signature=") || !strings.Contains(u, "X-Goog-Expires=") {
		t.Fatalf("signed GET URL %q, %v", u, err)
	}
	if _, err := g.Sign(ctx, httpstore.OpGet, "../x", httpstore.ListParams{}); !errors.Is(err, signer.ErrRefused) {
		t.Fatalf("key outside the repository: %v", err)
	}
}

// TestAzureSignedConformance: SAS URLs (a blob SAS per Get Blob, a
// container SAS for List Blobs) read Azurite through httpstore; Azurite
// checks every SAS, and a tampered one is refused.
func TestAzureSignedConformance(t *testing.T) {
	azure.Skip(t, azurite, azuriteWhy)
	ctx := context.Background()
	opts := azblobstore.Options{ConnectionString: azurite.ConnectionString}
	c, err := azblobstore.NewContainerClient("kv0-sign", opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	signedConformance(t, func(t *testing.T, n int) (*signer.Signer, store.Store) {
		uri := fmt.Sprintf("az://kv0-sign/repo%d", n)
		g, err := signer.New(ctx, uri, signer.Options{Azure: opts, Expiry: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		w, err := azblobstore.Open(ctx, uri, opts)
		if err != nil {
			t.Fatal(err)
		}
		return g, w
	})
	g, err := signer.New(ctx, "az://kv0-sign/repo1", signer.Options{Azure: opts})
	if err != nil {
		t.Fatal(err)
	}
	u, err := g.Sign(ctx, httpstore.OpGet, "a/b", httpstore.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if pu, perr := url.Parse(u); perr != nil || !strings.HasSuffix(pu.Path, "/kv0-sign/repo1/a/b") || pu.Query().Get("sig") == "" || pu.Query().Get("sp") != "r" || pu.Query().Get("sr") != "b" {
		t.Fatalf("signed GET URL %q, %v", u, perr)
	}
	// A blob SAS reads its blob only: the same signature on another name
	// is refused by the service.
	w, _ := azblobstore.Open(ctx, "az://kv0-sign/repo1", opts)
	if err := w.Put(ctx, "other", []byte("secret")); err != nil {
		t.Fatal(err)
	}
	forged := strings.Replace(u, "repo1%2Fa%2Fb?", "repo1%2Fother?", 1)
	if forged == u {
		t.Fatalf("cannot forge from %q", u)
	}
	resp, err := httpGet(forged)
	if err != nil || resp != 403 {
		t.Fatalf("a blob SAS used for another blob: status %d, %v", resp, err)
	}
}

func httpGet(u string) (int, error) {
	resp, err := http.Get(u)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
