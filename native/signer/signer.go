// Package signer presigns S3 GetObject and ListObjectsV2 requests (GCS: V4
// signed URLs of the XML API's object GET and bucket listing; Azure: SAS
// URLs of Get Blob and List Blobs) for the keys of one repository prefix, so that readers (browsers, edge functions)
// can read a repository through httpstore without ever holding object-store
// credentials. Handler serves the signatures over HTTP to bearer-token
// holders; "kv0 sign-server" runs it.
//
// A Signer refuses keys outside its prefix: every key must pass
// store.ValidateKey and may not contain "..". URLs expire after a short
// time (DefaultExpiry) and allow reads only.
//
// URLs are signed in fixed time windows of half the expiry: every signature
// of one object within a window is the same URL (its signing time is the
// window's start and it expires one expiry later), so a browser's HTTP
// cache, keyed by URL, serves a second read of an immutable object from
// the cache. A URL handed out is valid for at least half the expiry
// (expiries under 2 s have no windows). (GCS
// V4 URLs carry the signing library's own clock and change every second.)
package signer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/httpstore"
	"github.com/kv0/kv0/native/azblobstore"
	"github.com/kv0/kv0/native/gcsstore"
	"github.com/kv0/kv0/native/s3store"
)

// DefaultExpiry is the lifetime of a presigned URL when Options.Expiry is
// zero.
const DefaultExpiry = 5 * time.Minute

// MaxExpiry is the longest lifetime SigV4 allows (7 days).
const MaxExpiry = 7 * 24 * time.Hour

// Options configure a Signer.
type Options struct {
	// Expiry is the lifetime of each URL (default 5 min, at least 1 s).
	Expiry time.Duration
	// S3 are the connection options of the bucket (endpoint, region,
	// credentials, path style).
	S3 s3store.Options
	// GCS are the options of gs:// repositories (zero fields from the
	// environment, as for locations); GCSSigning how their URLs are signed.
	GCS        gcsstore.Options
	GCSSigning GCSSigning
	// Azure are the options of az:// repositories (zero fields from the
	// environment). SAS URLs need the account's shared key.
	Azure azblobstore.Options
}

// Signer presigns reads of one repository prefix. It implements
// httpstore.Signer and is safe for concurrent use.
type Signer struct {
	client   *s3.Client
	presign  *s3.PresignClient
	bucket   string
	prefix   string // "" or ends with "/"
	expiry   time.Duration
	listBase *url.URL // the bucket's URL, for ListObjectsV2
	v4       *v4.Signer
	cloud    cloudSigner      // gs:// and az:// repositories
	now      func() time.Time // nil: time.Now (tests set a clock)
}

var _ httpstore.Signer = (*Signer)(nil)

// ErrRefused means a key lies outside the repository prefix or is not a
// clean key. It wraps store.ErrInvalidKey; match it with errors.Is.
var ErrRefused = fmt.Errorf("signer: key refused: %w", store.ErrInvalidKey)

// New returns a Signer for the repository at bucketURI
// ("s3://bucket/prefix", "gs://bucket/prefix" or "az://container/prefix").
func New(ctx context.Context, bucketURI string, opts Options) (*Signer, error) {
	expiry := opts.Expiry
	if expiry == 0 {
		expiry = DefaultExpiry
	}
	if expiry < time.Second || expiry > MaxExpiry {
		return nil, fmt.Errorf("signer: expiry %v out of range [1s, 7 days]", expiry)
	}
	switch {
	case strings.HasPrefix(bucketURI, "gs://"):
		return newGCS(ctx, bucketURI, expiry, opts)
	case strings.HasPrefix(bucketURI, "az://"):
		return newAzure(bucketURI, expiry, opts)
	}
	bucket, prefix, err := s3store.ParseURI(bucketURI)
	if err != nil {
		return nil, err
	}
	if prefix != "" {
		prefix += "/"
	}
	client, err := s3store.NewClient(ctx, opts.S3)
	if err != nil {
		return nil, err
	}
	g := &Signer{
		client:  client,
		presign: s3.NewPresignClient(client),
		bucket:  bucket,
		prefix:  prefix,
		expiry:  expiry,
		v4:      v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }),
	}
	// The SDK has no presigner for ListObjectsV2; find the bucket's URL
	// (endpoint, path or virtual-host style) from a presigned GET and sign
	// list requests against it with SigV4 directly.
	const probe = "kv0-bucket-url-probe"
	req, err := g.presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(probe)},
		s3.WithPresignExpires(expiry))
	if err != nil {
		return nil, fmt.Errorf("signer: presigning for s3://%s: %w", bucket, err)
	}
	u, err := url.Parse(req.URL)
	if err != nil {
		return nil, fmt.Errorf("signer: unparsable presigned URL: %w", err)
	}
	base, ok := strings.CutSuffix(u.Path, "/"+probe)
	if !ok {
		return nil, fmt.Errorf("signer: unexpected presigned URL path %q", u.Path)
	}
	g.listBase = &url.URL{Scheme: u.Scheme, Host: u.Host, Path: base + "/"}
	return g, nil
}

// Prefix returns the repository prefix: empty or ending with "/".
func (g *Signer) Prefix() string { return g.prefix }

// Expiry returns the lifetime of the URLs.
func (g *Signer) Expiry() time.Duration { return g.expiry }

// Window returns the signing window: URLs of one object signed within one
// window are identical. It is half the expiry in whole seconds; 0 (every
// URL signed afresh) for expiries under 2 s.
func (g *Signer) Window() time.Duration { return (g.expiry / 2).Truncate(time.Second) }

// signingTime is the start of the signing window holding the current time
// (windows are multiples of Window since the zero time, so every sign
// server of one repository agrees on them), or the current time when
// there are no windows.
func (g *Signer) signingTime() time.Time {
	now := time.Now()
	if g.now != nil {
		now = g.now()
	}
	if w := g.Window(); w > 0 {
		return now.UTC().Truncate(w)
	}
	return now.UTC()
}

// atTime is the SDK's SigV4 presigner with the signing time fixed to the
// window's start.
type atTime struct {
	s  *v4.Signer
	at time.Time
}

func (p atTime) PresignHTTP(ctx context.Context, creds aws.Credentials, r *http.Request, payloadHash, service, region string,
	_ time.Time, optFns ...func(*v4.SignerOptions)) (string, http.Header, error) {
	return p.s.PresignHTTP(ctx, creds, r, payloadHash, service, region, p.at, optFns...)
}

// check refuses keys that are not clean relative keys or contain "..".
func check(key string, prefix bool) error {
	var err error
	if prefix {
		err = store.ValidatePrefix(key)
	} else {
		err = store.ValidateKey(key)
	}
	if err != nil || strings.Contains(key, "..") {
		return fmt.Errorf("%w: %q", ErrRefused, key)
	}
	return nil
}

// Sign implements httpstore.Signer.
func (g *Signer) Sign(ctx context.Context, op httpstore.Op, key string, list httpstore.ListParams) (string, error) {
	u, _, err := g.SignExpiry(ctx, op, key, list)
	return u, err
}

// SignExpiry is Sign that also returns when the URL expires.
func (g *Signer) SignExpiry(ctx context.Context, op httpstore.Op, key string, list httpstore.ListParams) (string, time.Time, error) {
	start := g.signingTime()
	expires := start.Add(g.expiry).Truncate(time.Second)
	switch op {
	case httpstore.OpGet:
		if err := check(key, false); err != nil {
			return "", time.Time{}, err
		}
		if g.cloud != nil {
			u, err := g.cloud.get(ctx, g.prefix+key, expires)
			if err != nil {
				return "", time.Time{}, fmt.Errorf("signer: sign get %s: %w", key, err)
			}
			return u, expires, nil
		}
		req, err := g.presign.PresignGetObject(ctx, &s3.GetObjectInput{
			Bucket: aws.String(g.bucket),
			Key:    aws.String(g.prefix + key),
		}, s3.WithPresignExpires(g.expiry), func(o *s3.PresignOptions) { o.Presigner = atTime{g.v4, start} })
		if err != nil {
			return "", time.Time{}, fmt.Errorf("signer: presign get %s: %w", key, err)
		}
		return req.URL, expires, nil
	case httpstore.OpList:
		if err := check(key, true); err != nil {
			return "", time.Time{}, err
		}
		if list.StartAfter != "" && strings.Contains(list.StartAfter, "..") {
			return "", time.Time{}, fmt.Errorf("%w: start-after %q", ErrRefused, list.StartAfter)
		}
		if g.cloud != nil {
			u, err := g.cloud.list(ctx, g.prefix+key, g.prefix, list, expires)
			if err != nil {
				return "", time.Time{}, fmt.Errorf("signer: sign list %s: %w", key, err)
			}
			return u, expires, nil
		}
		u, err := g.presignList(ctx, key, list, start)
		if err != nil {
			return "", time.Time{}, fmt.Errorf("signer: presign list %s: %w", key, err)
		}
		return u, expires, nil
	}
	return "", time.Time{}, fmt.Errorf("signer: cannot sign operation %v: %w", op, store.ErrNotSupported)
}

func (g *Signer) presignList(ctx context.Context, prefix string, list httpstore.ListParams, now time.Time) (string, error) {
	q := url.Values{}
	q.Set("list-type", "2")
	q.Set("prefix", g.prefix+prefix)
	if list.StartAfter != "" {
		q.Set("start-after", g.prefix+list.StartAfter)
	}
	if list.ContinuationToken != "" {
		q.Set("continuation-token", list.ContinuationToken)
	}
	if list.MaxKeys > 0 {
		q.Set("max-keys", strconv.Itoa(min(list.MaxKeys, 1000)))
	}
	q.Set("X-Amz-Expires", strconv.FormatInt(int64(g.expiry/time.Second), 10))
	u := *g.listBase
	u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	opts := g.client.Options()
	creds, err := opts.Credentials.Retrieve(ctx)
	if err != nil {
		return "", fmt.Errorf("retrieving credentials: %w", err)
	}
	signed, _, err := g.v4.PresignHTTP(ctx, creds, req, "UNSIGNED-PAYLOAD", "s3", opts.Region, now)
	if err != nil {
		return "", err
	}
	return signed, nil
}

// IsRefused reports whether err is a refusal of a key (a client error).
func IsRefused(err error) bool {
	return errors.Is(err, store.ErrInvalidKey) || errors.Is(err, store.ErrNotSupported)
}
