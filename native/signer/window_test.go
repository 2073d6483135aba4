package signer_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"cloud.google.com/go/storage"

	"github.com/kv0/kv0/httpstore"
	"github.com/kv0/kv0/native/azblobstore"
	"github.com/kv0/kv0/native/gcsstore"
	"github.com/kv0/kv0/native/s3store"
	"github.com/kv0/kv0/native/signer"
	"github.com/kv0/kv0/tests/azure"
)

const testAccessID = "kv0-signer@example-project.iam.gserviceaccount.com"

func testKey(t *testing.T) (*rsa.PrivateKey, []byte) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
}

// sleepUntil advances a synctest bubble's clock to at.
func sleepUntil(at time.Time) { time.Sleep(time.Until(at)) }

// TestGCSURLsMatchClientLibrary: at the start of a signing window, the
// signer's V4 URLs (object GET, XML listing with its parameters) are
// exactly those cloud.google.com/go/storage's SignedURL makes with the
// same key, time and expiry (the bubble's clock gives both the same
// time), for the default host and for an emulator's.
func TestGCSURLsMatchClientLibrary(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	_, pemKey := testKey(t)
	ctx := context.Background()
	for _, endpoint := range []string{"", "http://127.0.0.1:4443"} {
		g, err := signer.New(ctx, "gs://kv0-bucket/some repo/é", signer.Options{Expiry: 10 * time.Minute,
			GCS: gcsOptions(endpoint), GCSSigning: signer.GCSSigning{GoogleAccessID: testAccessID, PrivateKey: pemKey}})
		if err != nil {
			t.Fatal(err)
		}
		lib := func(object string, q url.Values) string {
			o := &storage.SignedURLOptions{Scheme: storage.SigningSchemeV4, Method: "GET", GoogleAccessID: testAccessID,
				PrivateKey: pemKey, Expires: time.Now().Add(10 * time.Minute), QueryParameters: q}
			if endpoint != "" {
				o.Hostname, o.Insecure = "127.0.0.1:4443", true
			}
			u, err := storage.SignedURL("kv0-bucket", object, o)
			if err != nil {
				t.Fatal(err)
			}
			return u
		}
		synctest.Test(t, func(t *testing.T) {
			sleepUntil(time.Date(2026, 12, 1, 10, 2, 0, 0, time.UTC)) // a window's start (2 min windows)
			for _, key := range []string{"t.lance/_versions/1.manifest", "a b+c&d=e/ü~.x"} {
				got, err := g.Sign(ctx, httpstore.OpGet, key, httpstore.ListParams{})
				if err != nil {
					t.Fatal(err)
				}
				if want := lib("some repo/é/"+key, nil); !sameURL(got, want) {
					t.Errorf("GET %s:\n%s\nthe client library:\n%s", key, got, want)
				}
			}
			got, err := g.Sign(ctx, httpstore.OpList, "t.lance/_versions/", httpstore.ListParams{StartAfter: "t.lance/_versions/3", MaxKeys: 5})
			if err != nil {
				t.Fatal(err)
			}
			want := lib("", url.Values{"list-type": {"2"}, "prefix": {"some repo/é/t.lance/_versions/"},
				"start-after": {"some repo/é/t.lance/_versions/3"}, "max-keys": {"5"}})
			if !sameURL(got, want) {
				t.Errorf("list:\n%s\nthe client library:\n%s", got, want)
			}
		})
	}
}

// sameURL reports whether two URLs name the same request: scheme, host,
// path and query parameters (the library orders its parameters and
// spells spaces in the query differently, which changes no byte that is
// signed).
func sameURL(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Scheme == ub.Scheme && ua.Host == ub.Host &&
		ua.EscapedPath() == ub.EscapedPath() && reflect.DeepEqual(ua.Query(), ub.Query())
}

// v4Escape percent-encodes every byte but RFC 3986's unreserved ones, as
// Google's description of the canonical request says.
func v4Escape(s string, keepSlash bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("-._~", c) >= 0 || keepSlash && c == '/' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// TestGCSURLsCheckByHand rebuilds, from a signed URL alone, the canonical
// request and the string to sign as Google documents them for V4 signing
// with an RSA key, and verifies the signature with the public key; the
// date, scope and lifetime must be the window's.
func TestGCSURLsCheckByHand(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	key, pemKey := testKey(t)
	ctx := context.Background()
	g, err := signer.New(ctx, "gs://kv0-bucket/repo", signer.Options{
		GCSSigning: signer.GCSSigning{GoogleAccessID: testAccessID, PrivateKey: pemKey}})
	if err != nil {
		t.Fatal(err)
	}
	var start, expires time.Time
	for _, c := range []struct {
		op   httpstore.Op
		key  string
		list httpstore.ListParams
	}{{httpstore.OpGet, "t.lance/data/x y%z.lance", httpstore.ListParams{}},
		{httpstore.OpList, "t.lance/", httpstore.ListParams{StartAfter: "t.lance/b", ContinuationToken: "tok=/+", MaxKeys: 2000}}} {
		// Sign within one window (a window may end between the calls:
		// sign again in the next one).
		var signed string
		var exp time.Time
		for {
			start, expires = g.Window(time.Now())
			if signed, exp, err = g.SignExpiry(ctx, c.op, c.key, c.list); err != nil {
				t.Fatal(err)
			}
			if s2, _ := g.Window(time.Now()); s2.Equal(start) {
				break
			}
		}
		if !exp.Equal(expires) {
			t.Errorf("expires %v, want the window's %v", exp, expires)
		}
		u, err := url.Parse(signed)
		if err != nil || u.Scheme != "https" || u.Host != "storage.googleapis.com" {
			t.Fatalf("URL %s: %v", signed, err)
		}
		q := u.Query()
		date := start.Format("20060102")
		for k, v := range map[string]string{"X-Goog-Algorithm": "GOOG4-RSA-SHA256", "X-Goog-Date": start.Format("20060102T150405Z"),
			"X-Goog-Credential": testAccessID + "/" + date + "/auto/storage/goog4_request", "X-Goog-Expires": "300", "X-Goog-SignedHeaders": "host"} {
			if q.Get(k) != v {
				t.Errorf("%s = %q, want %q", k, q.Get(k), v)
			}
		}
		sig, err := hex.DecodeString(q.Get("X-Goog-Signature"))
		if err != nil || len(sig) != 256 {
			t.Fatalf("signature %q: %v", q.Get("X-Goog-Signature"), err)
		}
		q.Del("X-Goog-Signature")
		var names []string
		for k := range q {
			names = append(names, k)
		}
		sort.Strings(names)
		var pairs []string
		for _, k := range names {
			for _, v := range q[k] {
				pairs = append(pairs, v4Escape(k, false)+"="+v4Escape(v, false))
			}
		}
		if c.op == httpstore.OpList && (q.Get("max-keys") != "1000" || q.Get("prefix") != "repo/t.lance/" || q.Get("start-after") != "repo/t.lance/b") {
			t.Errorf("listing parameters %v", q)
		}
		canonical := strings.Join([]string{"GET", v4Escape(u.Path, true), strings.Join(pairs, "&"),
			"host:storage.googleapis.com", "", "host", "UNSIGNED-PAYLOAD"}, "\n")
		sum := sha256.Sum256([]byte(canonical))
		toSign := "GOOG4-RSA-SHA256\n" + q.Get("X-Goog-Date") + "\n" + date + "/auto/storage/goog4_request\n" + hex.EncodeToString(sum[:])
		digest := sha256.Sum256([]byte(toSign))
		if err := rsa.VerifyPKCS1v15(&key.PublicKey, crypto.SHA256, digest[:], sig); err != nil {
			t.Errorf("%s: the signature does not verify over the documented canonical request\n%s", signed, canonical)
		}
		// Any change to what is signed breaks it.
		digest2 := sha256.Sum256([]byte(strings.Replace(toSign, "goog4_request", "goog4_requesT", 1)))
		if rsa.VerifyPKCS1v15(&key.PublicKey, crypto.SHA256, digest2[:], sig) == nil {
			t.Error("the signature verifies over another string")
		}
	}
}

// TestStableWindows: every signer (GCS, Azure, S3) hands out the same URL
// for the same key all through a window (a fifth of the expiry), a new
// one in the next window, and URLs that expire a whole expiry after the
// window's start (Azure: st and se; S3: X-Amz-Date and X-Amz-Expires).
func TestStableWindows(t *testing.T) {
	azure.Skip(t, azurite, azuriteWhy)
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	_, pemKey := testKey(t)
	ctx := context.Background()
	const expiry = 5 * time.Minute
	signers := map[string]*signer.Signer{}
	var err error
	if signers["gs"], err = signer.New(ctx, "gs://kv0-bucket/repo", signer.Options{Expiry: expiry,
		GCSSigning: signer.GCSSigning{GoogleAccessID: testAccessID, PrivateKey: pemKey}}); err != nil {
		t.Fatal(err)
	}
	if signers["az"], err = signer.New(ctx, "az://kv0-sign/repo", signer.Options{Expiry: expiry,
		Azure: azblobstore.Options{ConnectionString: azurite.ConnectionString}}); err != nil {
		t.Fatal(err)
	}
	if signers["s3"], err = signer.New(ctx, "s3://kv0-bucket/repo", signer.Options{Expiry: expiry,
		S3: s3store.Options{Region: "us-east-1", AccessKey: "AKIDEXAMPLE", Secret: "secret-example"}}); err != nil {
		t.Fatal(err)
	}
	for name, g := range signers {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Date(2026, 12, 1, 10, 1, 0, 0, time.UTC) // windows of 1 min
				sign := func(op httpstore.Op, key string) string {
					if op == httpstore.OpGet {
						key += "1.manifest"
					}
					u, exp, err := g.SignExpiry(ctx, op, key, httpstore.ListParams{})
					if err != nil {
						t.Fatal(err)
					}
					if ws, we := g.Window(time.Now()); !exp.Equal(we) || we.Sub(ws) != expiry {
						t.Errorf("expires %v, window %v-%v", exp, ws, we)
					}
					return u
				}
				for _, op := range []httpstore.Op{httpstore.OpGet, httpstore.OpList} {
					sleepUntil(start)
					first := sign(op, "t.lance/_versions/")
					for _, d := range []time.Duration{time.Second, 30 * time.Second, 59*time.Second + 999*time.Millisecond} {
						sleepUntil(start.Add(d))
						if u := sign(op, "t.lance/_versions/"); u != first {
							t.Errorf("op %v at +%v:\n%s\nat the window's start:\n%s", op, d, u, first)
						}
					}
					if other := sign(op, "t.lance/other/"); other == first {
						t.Errorf("op %v: the same URL for another key", op)
					}
					sleepUntil(start.Add(time.Minute))
					next := sign(op, "t.lance/_versions/")
					if next == first {
						t.Errorf("op %v: the same URL in the next window", op)
					}
					u, _ := url.Parse(first)
					q := u.Query()
					switch name {
					case "gs":
						if q.Get("X-Goog-Date") != start.Format("20060102T150405Z") || q.Get("X-Goog-Expires") != "300" {
							t.Errorf("GCS URL %s", first)
						}
					case "az":
						if q.Get("st") != start.Format(time.RFC3339) || q.Get("se") != start.Add(expiry).Format(time.RFC3339) {
							t.Errorf("SAS URL %s", first)
						}
					case "s3":
						if q.Get("X-Amz-Date") != start.Format("20060102T150405Z") || q.Get("X-Amz-Expires") != "300" {
							t.Errorf("S3 URL %s", first)
						}
					}
					start = start.Add(10 * time.Minute)
				}
			})
		})
	}
}

func gcsOptions(endpoint string) gcsstore.Options { return gcsstore.Options{Endpoint: endpoint} }
