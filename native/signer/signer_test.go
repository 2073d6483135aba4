package signer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/store/storetest"
	"github.com/kv0/kv0/httpstore"
	"github.com/kv0/kv0/native/s3store"
	"github.com/kv0/kv0/native/signer"
)

func fake(t *testing.T) s3store.Options {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket("kv0-test"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	return s3store.Options{Endpoint: srv.URL, Region: "us-east-1", AccessKey: "test-access",
		Secret: "test-secret", PathStyle: true, AllowHTTP: true}
}

var n atomic.Int64

// TestSignedConformance runs the store suite on httpstore in signed mode
// over presigned URLs of an in-process S3 server, listing included.
func TestSignedConformance(t *testing.T) {
	opts := fake(t)
	ctx := context.Background()
	var writer *s3store.Store
	storetest.Run(t, func(t *testing.T) store.Store {
		uri := fmt.Sprintf("s3://kv0-test/repo%d", n.Add(1))
		var err error
		if writer, err = s3store.Open(ctx, uri, opts); err != nil {
			t.Fatal(err)
		}
		g, err := signer.New(ctx, uri, signer.Options{S3: opts})
		if err != nil {
			t.Fatal(err)
		}
		s, err := httpstore.OpenSigned(g, httpstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, storetest.Options{ReadOnly: true, Seed: func(t *testing.T, objects map[string][]byte) {
		for k, v := range objects {
			if err := writer.Put(ctx, k, v); err != nil {
				t.Fatal(err)
			}
		}
	}})
}

func TestRefusesKeysOutsideThePrefix(t *testing.T) {
	opts := fake(t)
	g, err := signer.New(context.Background(), "s3://kv0-test/repo", signer.Options{S3: opts})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, k := range []string{"", "../other/x", "a/../../x", "/abs", "a//b", "a/..b", "x\\y"} {
		if _, err := g.Sign(ctx, httpstore.OpGet, k, httpstore.ListParams{}); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Sign(get %q) = %v, want a refusal", k, err)
		}
	}
	if _, err := g.Sign(ctx, httpstore.OpList, "../", httpstore.ListParams{}); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("Sign(list ../) = %v, want a refusal", err)
	}
	u, err := g.Sign(ctx, httpstore.OpGet, "t.lance/_versions/1.manifest", httpstore.ListParams{})
	if err != nil || !strings.Contains(u, "/kv0-test/repo/t.lance/_versions/1.manifest?") || !strings.Contains(u, "X-Amz-Expires=300") {
		t.Errorf("Sign(get) = %s, %v", u, err)
	}
}

func TestHandler(t *testing.T) {
	opts := fake(t)
	ctx := context.Background()
	w, _ := s3store.Open(ctx, "s3://kv0-test/repo", opts)
	w.Put(ctx, "a/b", []byte("hello, world"))
	g, err := signer.New(ctx, "s3://kv0-test/repo", signer.Options{S3: opts, Expiry: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	h, err := signer.Handler(g, signer.HandlerOptions{Token: "tok-123"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	do := func(method, path, token, body string) (*http.Response, map[string]any) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp, m
	}
	if resp, _ := do("GET", "/sign?op=get&key=a/b", "", ""); resp.StatusCode != 401 {
		t.Errorf("no token: %d", resp.StatusCode)
	}
	if resp, _ := do("GET", "/sign?op=get&key=a/b", "wrong", ""); resp.StatusCode != 401 {
		t.Errorf("wrong token: %d", resp.StatusCode)
	}
	resp, m := do("GET", "/sign?op=get&key=a/b", "tok-123", "")
	if resp.StatusCode != 200 || m["url"] == nil || m["expires"] == nil {
		t.Fatalf("sign: %d %v", resp.StatusCode, m)
	}
	if resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("no CORS header")
	}
	if resp, _ := do("GET", "/sign?op=get&key=../x", "tok-123", ""); resp.StatusCode != 400 {
		t.Errorf("key outside the prefix: %d", resp.StatusCode)
	}
	if resp, _ := do("GET", "/sign?op=put&key=a/b", "tok-123", ""); resp.StatusCode != 400 {
		t.Errorf("write op: %d", resp.StatusCode)
	}
	if resp, _ := do("OPTIONS", "/sign", "", ""); resp.StatusCode != 204 ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	resp, m = do("POST", "/sign/batch", "tok-123", `{"requests":[{"op":"get","key":"a/b"},{"op":"get","key":"../x"},{"op":"list","key":"a/"}]}`)
	res, _ := m["results"].([]any)
	if resp.StatusCode != 200 || len(res) != 3 || res[0].(map[string]any)["url"] == nil ||
		res[1].(map[string]any)["error"] == nil || res[2].(map[string]any)["url"] == nil {
		t.Errorf("batch: %d %v", resp.StatusCode, m)
	}

	// A browser-like reader: httpstore over the sign server, holding only
	// the token.
	s, _ := httpstore.OpenSigned(&httpstore.ServerSigner{URL: srv.URL, Token: "tok-123"}, httpstore.Options{})
	got, err := store.ReadAll(ctx, s, "a/b")
	if err != nil || string(got) != "hello, world" {
		t.Fatalf("read through the sign server: %q, %v", got, err)
	}
	list, err := s.List(ctx, store.ListOptions{Prefix: "a/"})
	if err != nil || len(list) != 1 || list[0].Key != "a/b" || list[0].Size != 12 {
		t.Fatalf("list through the sign server: %v, %v", list, err)
	}
	bad, _ := httpstore.OpenSigned(&httpstore.ServerSigner{URL: srv.URL, Token: "nope"}, httpstore.Options{})
	if err := bad.ReadAt(ctx, "a/b", make([]byte, 1), 0); !errors.Is(err, httpstore.ErrForbidden) {
		t.Errorf("wrong token through ServerSigner: %v", err)
	}
}
