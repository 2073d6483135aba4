package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kv0/kv0/core/jsonl"
	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/store/storetest"
	"github.com/kv0/kv0/httpstore"
	"github.com/kv0/kv0/native/fsstore"
	"github.com/kv0/kv0/native/signer"
)

const sample = "../testdata/sample.lance"

func TestConformance(t *testing.T) {
	need(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		return openStore(t, newURI(t.Name()))
	}, storetest.Options{})
}

// upload copies the local folder dir into st below root.
func upload(t testing.TB, st store.Store, dir, root string) {
	t.Helper()
	ctx := context.Background()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return st.Put(ctx, store.Join(root, filepath.ToSlash(rel)), b)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// dump scans the latest version of a dataset as JSON lines.
func dump(t testing.TB, st store.Store, root string) string {
	t.Helper()
	ctx := context.Background()
	d, err := lance.Open(ctx, st, root, lance.OpenOptions{})
	if err != nil {
		t.Fatalf("open %s: %v", root, err)
	}
	sc, err := d.Scan(ctx, lance.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	var buf bytes.Buffer
	w := jsonl.NewWriter(&buf)
	for sc.Next() {
		if err := w.Write(sc.Record()); err != nil {
			t.Fatal(err)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scan %s: %v", root, err)
	}
	return fmt.Sprintf("v%d\n%s", d.Version(), buf.String())
}

func TestLanceReadEqualsLocal(t *testing.T) {
	need(t)
	local, err := fsstore.OpenExisting(sample)
	if err != nil {
		t.Fatal(err)
	}
	want := dump(t, local, "")
	uri := newURI("sample")
	s3 := openStore(t, uri)
	upload(t, s3, sample, "sample.lance")
	if got := dump(t, s3, "sample.lance"); got != want {
		t.Fatalf("S3 scan differs from the local scan")
	}

	// The same dataset through httpstore over presigned URLs.
	ctx := context.Background()
	g, err := signer.New(ctx, uri, signer.Options{S3: s3Options()})
	if err != nil {
		t.Fatal(err)
	}
	hs, err := httpstore.OpenSigned(g, httpstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := dump(t, hs, "sample.lance"); got != want {
		t.Fatalf("presigned-URL scan differs from the local scan")
	}
	// And without listing: only presigned GETs (static-mode code path).
	if got := dump(t, noList{hs}, "sample.lance"); got != want {
		t.Fatalf("presigned-URL scan without listing differs from the local scan")
	}
}

// noList hides List, as a static server would.
type noList struct{ *httpstore.Store }

func (noList) List(context.Context, store.ListOptions) ([]store.ObjectInfo, error) {
	return nil, store.ErrNotSupported
}

func TestPresignedConformance(t *testing.T) {
	need(t)
	ctx := context.Background()
	var writer store.Store
	storetest.Run(t, func(t *testing.T) store.Store {
		uri := newURI(t.Name())
		writer = openStore(t, uri)
		g, err := signer.New(ctx, uri, signer.Options{S3: s3Options()})
		if err != nil {
			t.Fatal(err)
		}
		hs, _ := httpstore.OpenSigned(g, httpstore.Options{})
		return hs
	}, storetest.Options{ReadOnly: true, Seed: func(t *testing.T, objects map[string][]byte) {
		for k, v := range objects {
			if err := writer.Put(ctx, k, v); err != nil {
				t.Fatal(err)
			}
		}
	}})
}

// fixedSigner hands out URLs signed once, to let them expire.
type fixedSigner struct {
	g    *signer.Signer
	urls map[string]string
}

func (f *fixedSigner) Sign(ctx context.Context, op httpstore.Op, key string, lp httpstore.ListParams) (string, error) {
	if u, ok := f.urls[key]; ok {
		return u, nil
	}
	return f.g.Sign(ctx, op, key, lp)
}

// TestExpiredURL: a presigned URL reads its object, and one whose
// lifetime is over is refused with ErrForbidden saying it expired, the
// signature kept out of the error. The URL that must read is signed for an
// hour and the one that must expire for the shortest lifetime (1 s), its
// refusal waited for with a deadline: no step depends on a request landing
// within a second of its signing, which a loaded machine cannot promise.
func TestExpiredURL(t *testing.T) {
	need(t)
	ctx := context.Background()
	uri := newURI("expired")
	openStore(t, uri).Put(ctx, "obj", []byte("secret bytes"))
	long, err := signer.New(ctx, uri, signer.Options{S3: s3Options(), Expiry: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	u, err := long.Sign(ctx, httpstore.OpGet, "obj", httpstore.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	hs, _ := httpstore.OpenSigned(&fixedSigner{g: long, urls: map[string]string{"obj": u}}, httpstore.Options{})
	if got, err := store.ReadAll(ctx, hs, "obj"); err != nil || string(got) != "secret bytes" {
		t.Fatalf("fresh URL: %q, %v", got, err)
	}

	short, err := signer.New(ctx, uri, signer.Options{S3: s3Options(), Expiry: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	u, expires, err := short.SignExpiry(ctx, httpstore.OpGet, "obj", httpstore.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	hs2, _ := httpstore.OpenSigned(&fixedSigner{g: short, urls: map[string]string{"obj": u}}, httpstore.Options{})
	for {
		err = hs2.ReadAt(ctx, "obj", make([]byte, 4), 0)
		if err != nil {
			break
		}
		if time.Now().After(expires.Add(time.Minute)) {
			t.Fatalf("a URL that expired at %v still reads a minute later", expires)
		}
		time.Sleep(50 * time.Millisecond) // polling until the URL has expired, with the deadline above
	}
	if !errors.Is(err, httpstore.ErrForbidden) || !strings.Contains(strings.ToLower(err.Error()), "expired") {
		t.Fatalf("expired URL: %v, want ErrForbidden saying it expired", err)
	}
	if strings.Contains(err.Error(), "X-Amz-Signature") {
		t.Fatalf("the error leaks the signature: %v", err)
	}
	t.Logf("expired URL error: %v", err)
	if err := hs2.ReadAt(ctx, "missing", make([]byte, 4), 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing object: %v", err)
	}
}
