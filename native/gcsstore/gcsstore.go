// Package gcsstore is a store.Store over a Google Cloud Storage bucket,
// built on cloud.google.com/go/storage with its HTTP/JSON transport. The
// library's gRPC transport is never used but always linked; builds with
// the library's documented tag disable_grpc_modules (as kv0's Makefile
// does) leave out its DirectPath modules (xDS and their dependencies).
//
// A location is "gs://bucket/prefix": every key is stored as
// "prefix/key". The mapping of the store operations is:
//
//	ReadAt        a ranged object read of exactly [off, off+len(p))
//	Stat          object attributes
//	List          objects.list (prefix, startOffset, maxResults, paginated)
//	PutIfAbsent   an upload with ifGenerationMatch=0 (412 -> ErrExists)
//	Put           an upload
//	Delete        objects.delete
//	CreateNoSync  a resumable upload in chunks of ChunkSize (store.Streamer),
//	              finalized by Commit: nothing is visible before
//
// Every call runs under a deadline (Options.Timeout) and is retried with
// exponential backoff on 429, 5xx answers, timeouts and broken
// connections. Credentials are Application Default Credentials, or none
// against an emulator (STORAGE_EMULATOR_HOST or Options.Endpoint). A Store
// is safe for concurrent use.
package gcsstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/kv0/kv0/core/store"
)

// ErrForbidden means the service refused the request's credentials or
// permissions (401 or 403). The error's message keeps the server's reason.
// Match it with errors.Is.
var ErrForbidden = errors.New("gcsstore: access denied")

// Defaults used when the matching Options field is zero.
const (
	DefaultTimeout     = 2 * time.Minute
	DefaultMaxAttempts = 6
)

// ChunkSize is the size of the chunks a streamed object is uploaded in (a
// multiple of 256 KiB, as the resumable upload protocol wants).
var ChunkSize = 8 << 20

// Options configure a Store. The zero value uses Application Default
// Credentials, or the emulator named by STORAGE_EMULATOR_HOST.
type Options struct {
	// Endpoint is the base URL of an emulator or a private endpoint, such
	// as "http://127.0.0.1:4443"; requests then carry no credentials.
	// Empty means Google Cloud Storage (or STORAGE_EMULATOR_HOST).
	Endpoint string
	// Timeout bounds each store call, retries included (default 2 min).
	Timeout time.Duration
	// MaxAttempts is the number of tries of one request (default 6).
	MaxAttempts int
	// HTTPClient replaces the client's HTTP client (tests inject faults
	// here). With an Endpoint it is used as is; otherwise it must add
	// credentials itself.
	HTTPClient *http.Client
	// ClientOptions are passed to storage.NewClient after kv0's own.
	ClientOptions []option.ClientOption
}

// Store is a store.Store over one bucket and key prefix.
type Store struct {
	client      *storage.Client
	bucket      *storage.BucketHandle
	name        string // bucket name
	prefix      string // "" or ends with "/"
	timeout     time.Duration
	maxAttempts int
}

var _ store.Store = (*Store)(nil)

// ParseURI splits "gs://bucket/prefix" into the bucket and the key prefix
// (without leading or trailing slashes). The prefix may be empty.
func ParseURI(uri string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(uri, "gs://")
	if !ok {
		return "", "", fmt.Errorf("gcsstore: %q is not a gs:// URI", uri)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if !validBucket(bucket) {
		return "", "", fmt.Errorf("gcsstore: %q: missing or invalid bucket name", uri)
	}
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		if err := store.ValidateKey(prefix); err != nil {
			return "", "", fmt.Errorf("gcsstore: %q: bad prefix: %w", uri, err)
		}
	}
	return bucket, prefix, nil
}

// validBucket accepts the characters of GCS bucket names (lower-case
// letters, digits, '-', '_' and '.'), 3 to 222 of them.
func validBucket(b string) bool {
	if len(b) < 3 || len(b) > 222 {
		return false
	}
	for _, c := range []byte(b) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// Open returns a store for the location "gs://bucket/prefix". It does not
// contact the service.
func Open(ctx context.Context, uri string, opts Options) (*Store, error) {
	bucket, prefix, err := ParseURI(uri)
	if err != nil {
		return nil, err
	}
	client, err := NewClient(ctx, opts)
	if err != nil {
		return nil, err
	}
	if prefix != "" {
		prefix += "/"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	s := &Store{client: client, name: bucket, prefix: prefix, timeout: opts.Timeout, maxAttempts: opts.MaxAttempts}
	s.bucket = client.Bucket(bucket).Retryer(
		// Every operation kv0 issues is safe to repeat: overwrites store
		// the same bytes, and PutIfAbsent retries on its own (below).
		storage.WithPolicy(storage.RetryAlways),
		storage.WithMaxAttempts(opts.MaxAttempts),
		storage.WithBackoff(gax.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second, Multiplier: 2}),
	)
	return s, nil
}

// NewClient builds a storage client (HTTP/JSON transport) from opts. An
// endpoint, from opts or STORAGE_EMULATOR_HOST, means an emulator: no
// credentials are sent.
func NewClient(ctx context.Context, opts Options) (*storage.Client, error) {
	var copts []option.ClientOption
	if opts.Endpoint != "" {
		u, err := url.Parse(opts.Endpoint)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("gcsstore: bad endpoint %q", opts.Endpoint)
		}
		u.Path = strings.TrimSuffix(u.Path, "/") + "/storage/v1/"
		copts = append(copts, option.WithEndpoint(u.String()), option.WithoutAuthentication())
	}
	if opts.HTTPClient != nil {
		copts = append(copts, option.WithHTTPClient(opts.HTTPClient))
	}
	copts = append(copts, opts.ClientOptions...)
	client, err := storage.NewClient(ctx, copts...)
	if err != nil {
		return nil, fmt.Errorf("gcsstore: creating the client: %w", err)
	}
	return client, nil
}

// OptionsFromEnv fills the zero fields of opts from the environment:
// Endpoint from STORAGE_EMULATOR_HOST ("host:port" or a URL; plain http
// when no scheme is given, as the client library does).
func OptionsFromEnv(opts Options) Options {
	if opts.Endpoint == "" {
		if h := os.Getenv("STORAGE_EMULATOR_HOST"); h != "" {
			if !strings.Contains(h, "://") {
				h = "http://" + h
			}
			opts.Endpoint = h
		}
	}
	return opts
}

// Bucket returns the store's bucket name.
func (s *Store) Bucket() string { return s.name }

// Prefix returns the key prefix of the store: empty or ending with "/".
func (s *Store) Prefix() string { return s.prefix }

// Client returns the underlying storage client (for signing URLs).
func (s *Store) Client() *storage.Client { return s.client }

// Close releases the client's connections.
func (s *Store) Close() error { return s.client.Close() }

func (s *Store) objectKey(key string) (string, error) {
	if err := store.ValidateKey(key); err != nil {
		return "", err
	}
	return s.prefix + key, nil
}

func (s *Store) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// mapErr turns client errors into store errors that name the operation and
// the object, keeping the server's status and reason.
func (s *Store) mapErr(op, key string, err error) error {
	if err == nil {
		return nil
	}
	where := fmt.Sprintf("gcs %s gs://%s/%s%s", op, s.name, s.prefix, key)
	if errors.Is(err, storage.ErrObjectNotExist) {
		return fmt.Errorf("%s: %w", where, store.ErrNotFound)
	}
	if errors.Is(err, storage.ErrBucketNotExist) {
		return fmt.Errorf("%s: bucket %q does not exist", where, s.name)
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		reason := ""
		if len(ge.Errors) > 0 {
			reason = ge.Errors[0].Reason
		}
		msg := strings.TrimSpace(fmt.Sprintf("HTTP %d %s: %s", ge.Code, reason, ge.Message))
		switch ge.Code {
		case http.StatusNotFound:
			if reason == "notFound" || reason == "" {
				return fmt.Errorf("%s: %s: %w", where, msg, store.ErrNotFound)
			}
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Errorf("%s: %s: %w", where, msg, ErrForbidden)
		case http.StatusPreconditionFailed:
			return fmt.Errorf("%s: %s: %w", where, msg, store.ErrExists)
		case http.StatusRequestedRangeNotSatisfiable:
			return fmt.Errorf("%s: %s: %w", where, msg, store.ErrShortObject)
		}
		return fmt.Errorf("%s: %s: %w", where, msg, err)
	}
	return fmt.Errorf("%s: %w", where, err)
}

// ReadAt implements store.Store with one ranged read.
func (s *Store) ReadAt(ctx context.Context, key string, p []byte, off int64) error {
	okey, err := s.objectKey(key)
	if err != nil {
		return err
	}
	if done, err := store.CheckRead(ctx, s, "gcs", key, p, off); done {
		return err
	}
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	end := off + int64(len(p))
	r, err := s.bucket.Object(okey).NewRangeReader(ctx, off, int64(len(p)))
	if err != nil {
		return s.mapErr("read", key, err)
	}
	defer r.Close()
	if r.Attrs.StartOffset != off {
		return fmt.Errorf("gcs read gs://%s/%s [%d, %d): the server answered from offset %d", s.name, okey, off, end, r.Attrs.StartOffset)
	}
	if r.Attrs.Size < end {
		return fmt.Errorf("gcs read gs://%s/%s [%d, %d) of %d bytes: %w", s.name, okey, off, end, r.Attrs.Size, store.ErrShortObject)
	}
	// The reader resumes a body that breaks off by itself.
	if n, err := io.ReadFull(r, p); err != nil {
		if ctx.Err() != nil {
			return s.mapErr("read", key, ctx.Err())
		}
		return s.mapErr("read", key, fmt.Errorf("body ended after %d of %d bytes: %w", n, len(p), err))
	}
	return nil
}

// Stat implements store.Store with the object's attributes.
func (s *Store) Stat(ctx context.Context, key string) (store.ObjectInfo, error) {
	okey, err := s.objectKey(key)
	if err != nil {
		return store.ObjectInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return store.ObjectInfo{}, err
	}
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	attrs, err := s.bucket.Object(okey).Attrs(ctx)
	if err != nil {
		return store.ObjectInfo{}, s.mapErr("stat", key, err)
	}
	return store.ObjectInfo{Key: key, Size: attrs.Size}, nil
}

// List implements store.Store with objects.list; startOffset is
// inclusive, so the start-after key itself is dropped.
func (s *Store) List(ctx context.Context, opts store.ListOptions) ([]store.ObjectInfo, error) {
	if err := store.ValidatePrefix(opts.Prefix); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	q := &storage.Query{Prefix: s.prefix + opts.Prefix}
	if opts.StartAfter != "" {
		q.StartOffset = s.prefix + opts.StartAfter
	}
	if err := q.SetAttrSelection([]string{"Name", "Size"}); err != nil {
		return nil, err
	}
	it := s.bucket.Objects(ctx, q)
	it.PageInfo().MaxSize = 1000
	if opts.Limit > 0 {
		// One more than the limit: the start-after key may come first.
		it.PageInfo().MaxSize = min(1000, opts.Limit+1)
	}
	var out []store.ObjectInfo
	for {
		attrs, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return out, nil
		}
		if err != nil {
			return nil, s.mapErr("list", opts.Prefix, err)
		}
		k, ok := strings.CutPrefix(attrs.Name, s.prefix)
		if !ok || k <= opts.StartAfter || !strings.HasPrefix(k, opts.Prefix) {
			continue
		}
		out = append(out, store.ObjectInfo{Key: k, Size: attrs.Size})
		if opts.Limit > 0 && len(out) >= opts.Limit {
			return out, nil
		}
	}
}

// upload stores data in one request (no chunking) through o.
func (s *Store) upload(ctx context.Context, o *storage.ObjectHandle, data []byte) error {
	w := o.NewWriter(ctx)
	w.ChunkSize = 0 // one request: the object is in memory already
	w.ContentType = "application/octet-stream"
	if _, err := w.Write(data); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// PutIfAbsent implements store.Store with an upload under
// ifGenerationMatch=0.
//
// A retry that meets an existing object whose bytes equal data succeeds:
// the earlier attempt created it and only its answer was lost.
func (s *Store) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	okey, err := s.objectKey(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	return s.uploadRetrying(ctx, "create", key, okey, data, true)
}

// uploadRetrying stores data at okey in one request, repeated with backoff
// on transient failures (the client retries single-request uploads not at
// all). Under createOnly the upload carries ifGenerationMatch=0, and a 412
// after a failed attempt is success when the object holds data: that
// attempt landed.
func (s *Store) uploadRetrying(ctx context.Context, op, key, okey string, data []byte, createOnly bool) error {
	o := s.bucket.Object(okey).Retryer(storage.WithPolicy(storage.RetryNever))
	if createOnly {
		o = o.If(storage.Conditions{DoesNotExist: true})
	}
	backoff := gax.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second, Multiplier: 2}
	for attempt := 1; ; attempt++ {
		err := s.upload(ctx, o, data)
		if err == nil {
			return nil
		}
		mapped := s.mapErr(op, key, err)
		if createOnly && errors.Is(mapped, store.ErrExists) {
			if attempt > 1 && s.sameContent(ctx, okey, data) {
				return nil
			}
			return mapped
		}
		if attempt >= s.maxAttempts || !retryable(err) || ctx.Err() != nil {
			return mapped
		}
		if err := sleep(ctx, backoff.Pause()); err != nil {
			return s.mapErr(op, key, err)
		}
	}
}

// retryable reports whether a failed request may succeed when repeated:
// 408, 429 and 5xx answers and transport errors, never a 4xx verdict or a
// cancelled context.
func retryable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code == http.StatusRequestTimeout || ge.Code == http.StatusTooManyRequests || ge.Code >= 500
	}
	return !errors.Is(err, storage.ErrObjectNotExist) && !errors.Is(err, storage.ErrBucketNotExist)
}

// sameContent reports whether the object okey holds exactly data.
func (s *Store) sameContent(ctx context.Context, okey string, data []byte) bool {
	r, err := s.bucket.Object(okey).NewReader(ctx)
	if err != nil {
		return false
	}
	defer r.Close()
	got, err := io.ReadAll(io.LimitReader(r, int64(len(data))+1))
	return err == nil && bytes.Equal(got, data)
}

// Put implements store.Store with one upload.
func (s *Store) Put(ctx context.Context, key string, data []byte) error {
	okey, err := s.objectKey(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	return s.uploadRetrying(ctx, "put", key, okey, data, false)
}

// Delete implements store.Store; a missing object is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	okey, err := s.objectKey(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	if err := s.bucket.Object(okey).Delete(ctx); err != nil {
		if m := s.mapErr("delete", key, err); !errors.Is(m, store.ErrNotFound) {
			return m
		}
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
