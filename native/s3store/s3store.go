// Package s3store is a store.Store over an S3 bucket or any S3-compatible
// object store (R2, MinIO, versitygw, ...), built on aws-sdk-go-v2.
//
// A location is "s3://bucket/prefix": every key is stored as
// "prefix/key". The mapping of the store operations is:
//
//	ReadAt      GetObject with an exact Range header
//	Stat        HeadObject
//	List        ListObjectsV2 (prefix, start-after, max-keys, paginated)
//	PutIfAbsent PutObject with If-None-Match: * (412 or 409 -> ErrExists)
//	Put         PutObject
//	Delete      DeleteObject
//	CreateNoSync  multipart upload in parts of PartSize (store.Streamer)
//
// Every call runs under a deadline (Options.Timeout) and is retried with
// exponential backoff on throttling, 5xx answers, timeouts and broken
// connections. A Store is safe for concurrent use.
package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/kv0/kv0/core/store"
)

// ErrForbidden means the object store refused the request's credentials
// or permissions (403, or codes such as InvalidAccessKeyId, AccessDenied,
// SignatureDoesNotMatch). The error's message keeps the server's code.
// Match it with errors.Is.
var ErrForbidden = errors.New("s3store: access denied")

// forbiddenCodes are the S3 error codes of refused credentials or
// permissions, whatever HTTP status a server sends them with.
var forbiddenCodes = map[string]bool{
	"AccessDenied": true, "InvalidAccessKeyId": true, "SignatureDoesNotMatch": true, "ExpiredToken": true,
	"InvalidToken": true, "TokenRefreshRequired": true, "AllAccessDisabled": true, "AccountProblem": true,
	"InvalidSecurity": true, "RequestTimeTooSkewed": true, "Forbidden": true, "Unauthorized": true,
	"XAdminUserNotFound": true, // versitygw's answer (a 404) to an unknown access key
}

// Defaults used when the matching Options field is zero.
const (
	DefaultTimeout     = 2 * time.Minute
	DefaultMaxAttempts = 6
	DefaultRegion      = "us-east-1"
)

// Options configure a Store. The zero value uses the SDK's usual sources:
// environment variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL, AWS_PROFILE) and the shared
// config and credentials files.
type Options struct {
	// Endpoint is the base URL of an S3-compatible server, such as
	// "http://127.0.0.1:7070". Empty means AWS (or AWS_ENDPOINT_URL).
	Endpoint string
	// Region defaults to the SDK's region sources, then to "us-east-1".
	Region string
	// AccessKey, Secret and SessionToken are static credentials; when
	// AccessKey is empty the SDK's credential chain is used.
	AccessKey    string
	Secret       string
	SessionToken string
	// Profile selects a shared config profile.
	Profile string
	// PathStyle addresses buckets as endpoint/bucket instead of
	// bucket.endpoint (most S3-compatible servers want it).
	PathStyle bool
	// AllowHTTP permits a plain-http endpoint; without it Open refuses one.
	AllowHTTP bool
	// Timeout bounds each store call, retries included (default 2 min).
	Timeout time.Duration
	// MaxAttempts is the number of tries of one request (default 6).
	MaxAttempts int
	// EC2Metadata lets the credential chain ask the EC2 instance metadata
	// service. It is off by default so that a machine without credentials
	// fails fast instead of probing a link-local address.
	EC2Metadata bool
	// HTTPClient replaces the SDK's HTTP client (tests inject faults here).
	HTTPClient *http.Client
}

// Store is a store.Store over one bucket and key prefix.
type Store struct {
	client  *s3.Client
	bucket  string
	prefix  string // "" or ends with "/"
	timeout time.Duration
	retryer *retry.Standard
	opts    Options
}

var _ store.Store = (*Store)(nil)

// ParseURI splits "s3://bucket/prefix" into the bucket and the key prefix
// (without leading or trailing slashes). The prefix may be empty.
func ParseURI(uri string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(uri, "s3://")
	if !ok {
		return "", "", fmt.Errorf("s3store: %q is not an s3:// URI", uri)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if bucket == "" || strings.ContainsAny(bucket, "?#\\ ") {
		return "", "", fmt.Errorf("s3store: %q: missing or invalid bucket name", uri)
	}
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		if err := store.ValidateKey(prefix); err != nil {
			return "", "", fmt.Errorf("s3store: %q: bad prefix: %w", uri, err)
		}
	}
	return bucket, prefix, nil
}

// Open returns a store for the location "s3://bucket/prefix". It does not
// contact the server.
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
	return &Store{
		client:  client,
		bucket:  bucket,
		prefix:  prefix,
		timeout: opts.Timeout,
		retryer: newRetryer(opts),
		opts:    opts,
	}, nil
}

// Bucket returns the store's bucket name.
func (s *Store) Bucket() string { return s.bucket }

// Prefix returns the key prefix of the store: empty or ending with "/".
func (s *Store) Prefix() string { return s.prefix }

// Client returns the underlying S3 client (for presigning).
func (s *Store) Client() *s3.Client { return s.client }

func newRetryer(opts Options) *retry.Standard {
	attempts := opts.MaxAttempts
	if attempts <= 0 {
		attempts = DefaultMaxAttempts
	}
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = attempts
		o.MaxBackoff = 5 * time.Second
		// The default token bucket gives up after a burst of failures,
		// which is exactly when a writer must keep trying.
		o.RateLimiter = ratelimit.None
		o.Retryables = append(o.Retryables, retry.IsErrorRetryableFunc(retryableExtra))
	})
}

// retryableExtra adds errors the SDK's default classifier misses: a body
// that broke off mid-transfer and 5xx answers without a known error code.
func retryableExtra(err error) aws.Ternary {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return aws.TrueTernary
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() >= 500 {
		return aws.TrueTernary
	}
	return aws.UnknownTernary
}

// NewClient builds an S3 client from opts with kv0's retry, timeout and
// checksum settings. The signer package shares it.
func NewClient(ctx context.Context, opts Options) (*s3.Client, error) {
	if opts.Endpoint != "" {
		u, err := url.Parse(opts.Endpoint)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("s3store: bad endpoint %q", opts.Endpoint)
		}
		if u.Scheme == "http" && !opts.AllowHTTP {
			return nil, fmt.Errorf("s3store: endpoint %s is plain http; set AllowHTTP (KV0_S3_ALLOW_HTTP=1) to permit it", opts.Endpoint)
		}
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	var httpClient config.HTTPClient
	if opts.HTTPClient != nil {
		httpClient = opts.HTTPClient
	} else {
		httpClient = awshttp.NewBuildableClient().
			WithDialerOptions(func(d *net.Dialer) { d.Timeout = 10 * time.Second }).
			WithTransportOptions(func(t *http.Transport) {
				t.ResponseHeaderTimeout = min(timeout, 30*time.Second)
				t.MaxIdleConnsPerHost = 64
			}).
			// A connection that delivers nothing for this long is dead;
			// slow but progressing transfers are not cut.
			WithReadTimeout(min(timeout, 30*time.Second))
	}
	loadOpts := []func(*config.LoadOptions) error{
		config.WithHTTPClient(httpClient),
		config.WithRetryer(func() aws.Retryer { return newRetryer(opts) }),
		// S3-compatible servers differ in their support of the newer
		// default CRC checksums; send and check them only when required.
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	}
	if !opts.EC2Metadata {
		loadOpts = append(loadOpts, config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	if opts.Region != "" {
		loadOpts = append(loadOpts, config.WithRegion(opts.Region))
	}
	if opts.Profile != "" {
		loadOpts = append(loadOpts, config.WithSharedConfigProfile(opts.Profile))
	}
	if opts.AccessKey != "" {
		loadOpts = append(loadOpts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(opts.AccessKey, opts.Secret, opts.SessionToken)))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("s3store: loading AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	if cfg.BaseEndpoint != nil && strings.HasPrefix(*cfg.BaseEndpoint, "http://") && !opts.AllowHTTP {
		return nil, fmt.Errorf("s3store: endpoint %s (AWS_ENDPOINT_URL) is plain http; set AllowHTTP (KV0_S3_ALLOW_HTTP=1) to permit it", *cfg.BaseEndpoint)
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.Endpoint)
		}
		o.UsePathStyle = opts.PathStyle
	}), nil
}

// OptionsFromEnv fills the zero fields of opts from kv0's environment
// variables: AWS_ENDPOINT_URL, AWS_REGION (or AWS_DEFAULT_REGION),
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
// KV0_S3_PATH_STYLE and KV0_S3_ALLOW_HTTP ("1", "true" or "yes"). The SDK
// reads most of these by itself; reading them here lets path style and
// plain http follow an endpoint given only in the environment.
func OptionsFromEnv(opts Options) Options {
	set := func(dst *string, names ...string) {
		for _, n := range names {
			if *dst == "" {
				*dst = os.Getenv(n)
			}
		}
	}
	set(&opts.Endpoint, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
	set(&opts.Region, "AWS_REGION", "AWS_DEFAULT_REGION")
	if opts.AccessKey == "" {
		set(&opts.AccessKey, "AWS_ACCESS_KEY_ID")
		set(&opts.Secret, "AWS_SECRET_ACCESS_KEY")
		set(&opts.SessionToken, "AWS_SESSION_TOKEN")
	}
	if !opts.PathStyle {
		opts.PathStyle = envBool("KV0_S3_PATH_STYLE")
	}
	if !opts.AllowHTTP {
		opts.AllowHTTP = envBool("KV0_S3_ALLOW_HTTP")
	}
	return opts
}

func envBool(name string) bool {
	v, err := strconv.ParseBool(os.Getenv(name))
	if err == nil {
		return v
	}
	switch strings.ToLower(os.Getenv(name)) {
	case "yes", "on":
		return true
	}
	return false
}

func (s *Store) objectKey(key string) (string, error) {
	if err := store.ValidateKey(key); err != nil {
		return "", err
	}
	return s.prefix + key, nil
}

func (s *Store) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// statusOf returns the HTTP status code and S3 error code of err, if any.
func statusOf(err error) (int, string) {
	status := 0
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	code := ""
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	return status, code
}

// mapErr turns SDK errors into store errors that name the operation and key
// (never credentials or signatures).
func (s *Store) mapErr(op, key string, err error) error {
	if err == nil {
		return nil
	}
	where := fmt.Sprintf("s3 %s s3://%s/%s%s", op, s.bucket, s.prefix, key)
	status, code := statusOf(err)
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	switch {
	// Only a missing key is "not found": a 404 can also carry another
	// code (a gateway's answer to an unknown access key, a missing
	// upload), which must stay visible. HEAD answers have no body, so the
	// SDK names their 404 NotFound.
	case errors.As(err, &nsk), errors.As(err, &nf), code == "NoSuchKey", code == "NotFound":
		return fmt.Errorf("%s: %w", where, store.ErrNotFound)
	case code == "NoSuchBucket":
		return fmt.Errorf("%s: bucket %q does not exist", where, s.bucket)
	case forbiddenCodes[code] || (code == "" && (status == http.StatusForbidden || status == http.StatusUnauthorized)):
		return fmt.Errorf("%s: HTTP %d %s%s: %w", where, status, code, serverMessage(err), ErrForbidden)
	case status == http.StatusRequestedRangeNotSatisfiable || code == "InvalidRange":
		return fmt.Errorf("%s: %w", where, store.ErrShortObject)
	case status == http.StatusPreconditionFailed || code == "PreconditionFailed" ||
		status == http.StatusConflict || code == "ConditionalRequestConflict":
		return fmt.Errorf("%s: %w", where, store.ErrExists)
	}
	// Context errors keep their identity for errors.Is.
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", where, err)
	}
	if status != 0 || code != "" {
		return fmt.Errorf("%s: HTTP %d %s: %w", where, status, code, err)
	}
	return fmt.Errorf("%s: %w", where, err)
}

// serverMessage returns ": " and the server's error message, or "".
func serverMessage(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorMessage() != "" {
		return ": " + ae.ErrorMessage()
	}
	return ""
}

// ReadAt implements store.Store with one ranged GetObject. A body that
// breaks off is fetched again (the SDK retries only until the headers).
func (s *Store) ReadAt(ctx context.Context, key string, p []byte, off int64) error {
	okey, err := s.objectKey(key)
	if err != nil {
		return err
	}
	if done, err := store.CheckRead(ctx, s, "s3", key, p, off); done {
		return err
	}
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	end := off + int64(len(p)) - 1
	rng := fmt.Sprintf("bytes=%d-%d", off, end)
	for attempt := 1; ; attempt++ {
		err := s.readOnce(ctx, okey, rng, p, off)
		if err == nil {
			return nil
		}
		if errors.Is(err, errTruncated) && attempt < s.retryer.MaxAttempts() && ctx.Err() == nil {
			if d, derr := s.retryer.RetryDelay(attempt, err); derr == nil {
				if serr := sleep(ctx, d); serr == nil {
					continue
				}
			}
		}
		if errors.Is(err, errTruncated) || errors.Is(err, store.ErrShortObject) {
			return fmt.Errorf("s3 read s3://%s/%s [%d, %d): %w", s.bucket, okey, off, end+1, err)
		}
		return s.mapErr("read", key, err)
	}
}

// errTruncated marks a GetObject body that ended before its length.
var errTruncated = errors.New("response body ended early")

func (s *Store) readOnce(ctx context.Context, okey, rng string, p []byte, off int64) error {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(okey),
		Range:  aws.String(rng),
	})
	if err != nil {
		return err
	}
	defer out.Body.Close()
	want := int64(len(p))
	if out.ContentLength != nil && *out.ContentLength < want {
		// The server clipped the range at the end of the object.
		return store.ErrShortObject
	}
	if out.ContentRange != nil {
		if start, _, ok := parseContentRange(*out.ContentRange); ok && start != off {
			return fmt.Errorf("server answered range %q for %q", *out.ContentRange, rng)
		}
	} else if off > 0 {
		return fmt.Errorf("server ignored the range %q", rng)
	}
	n, err := io.ReadFull(out.Body, p)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w after %d of %d bytes: %w", errTruncated, n, want, err)
	}
	return nil
}

// parseContentRange parses "bytes START-END/TOTAL" (TOTAL may be "*").
func parseContentRange(v string) (start, total int64, ok bool) {
	v, ok = strings.CutPrefix(strings.TrimSpace(v), "bytes ")
	if !ok {
		return 0, 0, false
	}
	rng, tot, ok := strings.Cut(v, "/")
	if !ok {
		return 0, 0, false
	}
	a, _, ok := strings.Cut(rng, "-")
	if !ok {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(a, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	total = -1
	if tot != "*" {
		if total, err = strconv.ParseInt(tot, 10, 64); err != nil {
			return 0, 0, false
		}
	}
	return start, total, true
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

// Stat implements store.Store with HeadObject.
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
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(okey)})
	if err != nil {
		return store.ObjectInfo{}, s.mapErr("stat", key, err)
	}
	return store.ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength)}, nil
}

// List implements store.Store with ListObjectsV2, following continuation
// tokens until the limit is reached or the listing ends.
func (s *Store) List(ctx context.Context, opts store.ListOptions) ([]store.ObjectInfo, error) {
	if err := store.ValidatePrefix(opts.Prefix); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	in := &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket),
		Prefix: aws.String(s.prefix + opts.Prefix),
	}
	if opts.StartAfter != "" {
		in.StartAfter = aws.String(s.prefix + opts.StartAfter)
	}
	var out []store.ObjectInfo
	for {
		maxKeys := int32(1000)
		if opts.Limit > 0 {
			maxKeys = int32(min(1000, opts.Limit-len(out)))
		}
		in.MaxKeys = aws.Int32(maxKeys)
		page, err := s.client.ListObjectsV2(ctx, in)
		if err != nil {
			return nil, s.mapErr("list", opts.Prefix, err)
		}
		for _, obj := range page.Contents {
			k, ok := strings.CutPrefix(aws.ToString(obj.Key), s.prefix)
			if !ok || k <= opts.StartAfter || !strings.HasPrefix(k, opts.Prefix) {
				continue
			}
			out = append(out, store.ObjectInfo{Key: k, Size: aws.ToInt64(obj.Size)})
			if opts.Limit > 0 && len(out) >= opts.Limit {
				return out, nil
			}
		}
		if !aws.ToBool(page.IsTruncated) || page.NextContinuationToken == nil {
			return out, nil
		}
		in.ContinuationToken = page.NextContinuationToken
	}
}

// PutIfAbsent implements store.Store with PutObject and If-None-Match: *.
//
// It retries on its own rather than through the SDK so that it can tell a
// lost race from its own earlier attempt having landed: when a retry meets
// an existing object whose bytes equal data, the first attempt created it
// and the call succeeds.
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
	noRetry := func(o *s3.Options) { o.Retryer = aws.NopRetryer{} }
	for attempt := 1; ; attempt++ {
		_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
			Bucket:        aws.String(s.bucket),
			Key:           aws.String(okey),
			Body:          bytes.NewReader(data),
			ContentLength: aws.Int64(int64(len(data))),
			IfNoneMatch:   aws.String("*"),
		}, noRetry)
		if err == nil {
			return nil
		}
		mapped := s.mapErr("create", key, err)
		if errors.Is(mapped, store.ErrExists) {
			status, _ := statusOf(err)
			if attempt > 1 && status != http.StatusConflict && s.sameContent(ctx, okey, data) {
				return nil
			}
			return mapped
		}
		if attempt >= s.retryer.MaxAttempts() || !s.retryer.IsErrorRetryable(err) || ctx.Err() != nil {
			return mapped
		}
		d, derr := s.retryer.RetryDelay(attempt, err)
		if derr != nil {
			return mapped
		}
		if err := sleep(ctx, d); err != nil {
			return s.mapErr("create", key, err)
		}
	}
}

// sameContent reports whether the object okey holds exactly data.
func (s *Store) sameContent(ctx context.Context, okey string, data []byte) bool {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(okey)})
	if err != nil {
		return false
	}
	defer out.Body.Close()
	got, err := io.ReadAll(io.LimitReader(out.Body, int64(len(data))+1))
	return err == nil && bytes.Equal(got, data)
}

// Put implements store.Store with PutObject.
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
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(okey),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
	})
	return s.mapErr("put", key, err)
}

// Delete implements store.Store with DeleteObject; a missing object is not
// an error.
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
	_, err = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(okey)})
	if err != nil {
		if m := s.mapErr("delete", key, err); errors.Is(m, store.ErrNotFound) {
			return nil
		} else {
			return m
		}
	}
	return nil
}
