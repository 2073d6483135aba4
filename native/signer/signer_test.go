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

// TestSigningWindows checks that URLs are signed in stable windows: every
// signature of one object (and of one listing) within a window is the same
// URL, so a browser's HTTP cache serves it again; the next window signs
// another; each URL is valid for at least half the expiry from when it is
// handed out, and works.
func TestSigningWindows(t *testing.T) {
	opts := fake(t)
	ctx := context.Background()
	uri := "s3://kv0-test/windows"
	writer, err := s3store.Open(ctx, uri, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := writer.Put(ctx, "t.lance/data/a.lance", []byte("immutable bytes")); err != nil {
		t.Fatal(err)
	}
	for _, expiry := range []time.Duration{10 * time.Minute, 3 * time.Second, 2 * time.Second} {
		g, err := signer.New(ctx, uri, signer.Options{S3: opts, Expiry: expiry})
		if err != nil {
			t.Fatal(err)
		}
		w := g.Window()
		if w != (expiry / 2).Truncate(time.Second) {
			t.Fatalf("expiry %v: window %v", expiry, w)
		}
		start := time.Now().UTC().Truncate(w)
		clock := start
		signer.SetClock(g, func() time.Time { return clock })
		sign := func(op httpstore.Op) (string, time.Time) {
			t.Helper()
			u, exp, err := g.SignExpiry(ctx, op, "t.lance/data/a.lance", httpstore.ListParams{})
			if op == httpstore.OpList {
				u, exp, err = g.SignExpiry(ctx, op, "t.lance/", httpstore.ListParams{StartAfter: "t.lance/a"})
			}
			if err != nil {
				t.Fatal(err)
			}
			if left := exp.Sub(clock); left < expiry/2 || left > expiry {
				t.Fatalf("expiry %v: a URL signed at %v expires at %v (%v left)", expiry, clock, exp, left)
			}
			return u, exp
		}
		for _, op := range []httpstore.Op{httpstore.OpGet, httpstore.OpList} {
			clock = start
			first, exp := sign(op)
			if !strings.Contains(first, "X-Amz-Date="+start.Format("20060102T150405Z")) {
				t.Fatalf("expiry %v: signing time is not the window's start %v: %s", expiry, start, first)
			}
			for _, at := range []time.Duration{1, w / 2, w - 1} {
				clock = start.Add(at)
				if again, exp2 := sign(op); again != first || !exp2.Equal(exp) {
					t.Fatalf("expiry %v, op %v: %v into the window another URL:\n%s\n%s", expiry, op, at, first, again)
				}
			}
			clock = start.Add(w)
			if next, exp2 := sign(op); next == first || !exp2.Equal(exp.Add(w)) {
				t.Fatalf("expiry %v, op %v: the next window signs the same URL or expiry: %s %v", expiry, op, next, exp2)
			}
		}
		// The window's URL reads the object.
		clock = time.Now()
		u, _, err := g.SignExpiry(ctx, httpstore.OpGet, "t.lance/data/a.lance", httpstore.ListParams{})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("expiry %v: GET of the window's URL: %s", expiry, resp.Status)
		}
	}
}
