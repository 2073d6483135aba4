// Package azblobstore is a store.Store over an Azure Blob Storage
// container, built on github.com/Azure/azure-sdk-for-go/sdk/storage/azblob.
//
// A location is "az://container/prefix": every key is stored as the block
// blob "prefix/key". The mapping of the store operations is:
//
//	ReadAt        Get Blob with an exact x-ms-range
//	Stat          Get Blob Properties
//	List          List Blobs (prefix, maxresults, markers); start-after is
//	              applied on the answers
//	PutIfAbsent   Put Blob with If-None-Match: * (409 or 412 -> ErrExists)
//	Put           Put Blob
//	Delete        Delete Blob
//	CreateNoSync  Put Block for each BlockSize piece, Put Block List on
//	              Commit (store.Streamer): uncommitted blocks are invisible
//
// The account and its credentials come from Options, else the environment:
// AZURE_STORAGE_CONNECTION_STRING (its BlobEndpoint points at an emulator
// such as Azurite), else AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY
// (shared key), else AZURE_STORAGE_ACCOUNT with azidentity's default
// credential chain (environment, workload identity, managed identity,
// Azure CLI). Every call runs under a deadline (Options.Timeout) and is
// retried with exponential backoff on 408, 429, 5xx answers, timeouts and
// broken connections. A Store is safe for concurrent use.
package azblobstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/kv0/kv0/core/store"
)

// ErrForbidden means the service refused the request's credentials or
// permissions (401, 403, or codes such as AuthenticationFailed and
// AuthorizationFailure). The error's message keeps the server's code.
// Match it with errors.Is.
var ErrForbidden = errors.New("azblobstore: access denied")

// ErrNoCredentials means neither Options nor the environment name an
// account. Match it with errors.Is.
var ErrNoCredentials = errors.New("azblobstore: no account: set AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_ACCOUNT")

// Defaults used when the matching Options field is zero.
const (
	DefaultTimeout     = 2 * time.Minute
	DefaultMaxAttempts = 6
)

// ListPageSize is the number of names one List Blobs request asks for (the
// service's maximum is 5000).
var ListPageSize = 5000

// BlockSize is the size of the blocks a streamed object is staged in.
var BlockSize = 8 << 20

// Options configure a Store. Fields left zero are filled from the
// environment by OptionsFromEnv (Open calls it).
type Options struct {
	// ConnectionString is an account's connection string
	// ("AccountName=...;AccountKey=...;BlobEndpoint=..."). It wins over
	// the other fields.
	ConnectionString string
	// Account is the storage account name; with AccountKey it signs with
	// the shared key, without it azidentity's default chain is used.
	Account    string
	AccountKey string
	// Endpoint is the account's blob endpoint (default
	// https://ACCOUNT.blob.core.windows.net).
	Endpoint string
	// Timeout bounds each store call, retries included (default 2 min).
	Timeout time.Duration
	// MaxAttempts is the number of tries of one request (default 6).
	MaxAttempts int
	// HTTPClient replaces the SDK's HTTP client (tests inject faults here).
	HTTPClient *http.Client
}

// OptionsFromEnv fills the zero credential fields of opts from
// AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_ACCOUNT and
// AZURE_STORAGE_KEY (the connection string only when opts names no
// account).
func OptionsFromEnv(opts Options) Options {
	if opts.ConnectionString == "" && opts.Account == "" {
		opts.ConnectionString = os.Getenv("AZURE_STORAGE_CONNECTION_STRING")
	}
	if opts.ConnectionString == "" {
		if opts.Account == "" {
			opts.Account = os.Getenv("AZURE_STORAGE_ACCOUNT")
		}
		if opts.AccountKey == "" {
			opts.AccountKey = os.Getenv("AZURE_STORAGE_KEY")
		}
	}
	return opts
}

// Store is a store.Store over one container and key prefix.
type Store struct {
	client      *container.Client
	name        string // container name
	prefix      string // "" or ends with "/"
	timeout     time.Duration
	maxAttempts int
}

var _ store.Store = (*Store)(nil)

// ParseURI splits "az://container/prefix" into the container and the key
// prefix (without leading or trailing slashes). The prefix may be empty.
func ParseURI(uri string) (containerName, prefix string, err error) {
	rest, ok := strings.CutPrefix(uri, "az://")
	if !ok {
		return "", "", fmt.Errorf("azblobstore: %q is not an az:// URI", uri)
	}
	containerName, prefix, _ = strings.Cut(rest, "/")
	if !validContainer(containerName) {
		return "", "", fmt.Errorf("azblobstore: %q: missing or invalid container name (3 to 63 lower-case letters, digits and single hyphens)", uri)
	}
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		if err := store.ValidateKey(prefix); err != nil {
			return "", "", fmt.Errorf("azblobstore: %q: bad prefix: %w", uri, err)
		}
	}
	return containerName, prefix, nil
}

func validContainer(c string) bool {
	if len(c) < 3 || len(c) > 63 || c[0] == '-' || c[len(c)-1] == '-' || strings.Contains(c, "--") {
		return false
	}
	for _, r := range []byte(c) {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// Open returns a store for the location "az://container/prefix". It does
// not contact the service.
func Open(ctx context.Context, uri string, opts Options) (*Store, error) {
	name, prefix, err := ParseURI(uri)
	if err != nil {
		return nil, err
	}
	opts = OptionsFromEnv(opts)
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	client, err := NewContainerClient(name, opts)
	if err != nil {
		return nil, err
	}
	if prefix != "" {
		prefix += "/"
	}
	return &Store{client: client, name: name, prefix: prefix, timeout: opts.Timeout, maxAttempts: opts.MaxAttempts}, nil
}

// NewContainerClient returns a client of the container name with kv0's
// retry settings and the credentials opts selects (see Options).
func NewContainerClient(name string, opts Options) (*container.Client, error) {
	attempts := opts.MaxAttempts
	if attempts <= 0 {
		attempts = DefaultMaxAttempts
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	copts := &container.ClientOptions{}
	copts.Retry = policy.RetryOptions{
		MaxRetries:    int32(attempts - 1),
		TryTimeout:    min(timeout, time.Minute),
		RetryDelay:    100 * time.Millisecond,
		MaxRetryDelay: 5 * time.Second,
	}
	if opts.HTTPClient != nil {
		copts.Transport = opts.HTTPClient
	}
	if opts.ConnectionString != "" {
		c, err := container.NewClientFromConnectionString(opts.ConnectionString, name, copts)
		if err != nil {
			return nil, fmt.Errorf("azblobstore: bad connection string: %w", err)
		}
		return c, nil
	}
	if opts.Account == "" {
		return nil, ErrNoCredentials
	}
	endpoint := opts.Endpoint
	if endpoint == "" {
		endpoint = "https://" + opts.Account + ".blob.core.windows.net"
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("azblobstore: bad endpoint %q", endpoint)
	}
	containerURL := strings.TrimSuffix(endpoint, "/") + "/" + name
	if opts.AccountKey != "" {
		cred, err := container.NewSharedKeyCredential(opts.Account, opts.AccountKey)
		if err != nil {
			return nil, fmt.Errorf("azblobstore: bad account key: %w", err)
		}
		return container.NewClientWithSharedKeyCredential(containerURL, cred, copts)
	}
	cred, err := azidentity.NewDefaultAzureCredential(nil)
	if err != nil {
		return nil, fmt.Errorf("azblobstore: no Azure credential: %w", err)
	}
	return container.NewClient(containerURL, cred, copts)
}

// Container returns the store's container name.
func (s *Store) Container() string { return s.name }

// Prefix returns the key prefix of the store: empty or ending with "/".
func (s *Store) Prefix() string { return s.prefix }

// Client returns the underlying container client (for SAS signing).
func (s *Store) Client() *container.Client { return s.client }

func (s *Store) objectKey(key string) (string, error) {
	if err := store.ValidateKey(key); err != nil {
		return "", err
	}
	return s.prefix + key, nil
}

func (s *Store) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

var forbiddenCodes = map[string]bool{
	"AuthenticationFailed": true, "AuthorizationFailure": true, "AuthorizationPermissionMismatch": true,
	"AuthorizationProtocolMismatch": true, "AuthorizationResourceTypeMismatch": true,
	"AuthorizationServiceMismatch": true, "AuthorizationSourceIPMismatch": true,
	"InvalidAuthenticationInfo": true, "NoAuthenticationInformation": true, "InsufficientAccountPermissions": true,
	"AccountIsDisabled": true,
}

// mapErr turns SDK errors into store errors that name the operation and
// the blob, keeping the server's status and code.
func (s *Store) mapErr(op, key string, err error) error {
	if err == nil {
		return nil
	}
	where := fmt.Sprintf("azure %s az://%s/%s%s", op, s.name, s.prefix, key)
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		code, status := re.ErrorCode, re.StatusCode
		msg := fmt.Sprintf("HTTP %d %s", status, code)
		switch {
		case code == "BlobNotFound" || (status == http.StatusNotFound && code == ""):
			return fmt.Errorf("%s: %w", where, store.ErrNotFound)
		case code == "ContainerNotFound":
			return fmt.Errorf("%s: %s: container %q does not exist", where, msg, s.name)
		case forbiddenCodes[code] || (code == "" && (status == http.StatusForbidden || status == http.StatusUnauthorized)):
			return fmt.Errorf("%s: %s: %w", where, msg, ErrForbidden)
		case code == "BlobAlreadyExists" || code == "ConditionNotMet" || (code == "" && status == http.StatusPreconditionFailed):
			return fmt.Errorf("%s: %s: %w", where, msg, store.ErrExists)
		case code == "InvalidRange" || status == http.StatusRequestedRangeNotSatisfiable:
			return fmt.Errorf("%s: %s: %w", where, msg, store.ErrShortObject)
		}
		return fmt.Errorf("%s: %s: %w", where, msg, err)
	}
	return fmt.Errorf("%s: %w", where, err)
}

// ReadAt implements store.Store with one ranged Get Blob; a body that
// breaks off is resumed from where it stopped.
func (s *Store) ReadAt(ctx context.Context, key string, p []byte, off int64) error {
	okey, err := s.objectKey(key)
	if err != nil {
		return err
	}
	if done, err := store.CheckRead(ctx, s, "azure", key, p, off); done {
		return err
	}
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	end := off + int64(len(p))
	resp, err := s.client.NewBlobClient(okey).DownloadStream(ctx, &blob.DownloadStreamOptions{
		Range: blob.HTTPRange{Offset: off, Count: int64(len(p))},
	})
	if err != nil {
		return s.mapErr("read", key, err)
	}
	body := resp.NewRetryReader(ctx, &blob.RetryReaderOptions{MaxRetries: int32(s.maxAttempts - 1)})
	defer body.Close()
	if resp.ContentLength != nil && *resp.ContentLength < int64(len(p)) {
		return fmt.Errorf("azure read az://%s/%s [%d, %d): %w", s.name, okey, off, end, store.ErrShortObject)
	}
	if resp.ContentRange == nil {
		if off > 0 {
			return fmt.Errorf("azure read az://%s/%s [%d, %d): the server ignored the range", s.name, okey, off, end)
		}
	} else if start, ok := rangeStart(*resp.ContentRange); !ok || start != off {
		return fmt.Errorf("azure read az://%s/%s [%d, %d): the server answered range %q", s.name, okey, off, end, *resp.ContentRange)
	}
	if n, err := io.ReadFull(body, p); err != nil {
		if ctx.Err() != nil {
			return s.mapErr("read", key, ctx.Err())
		}
		return s.mapErr("read", key, fmt.Errorf("body ended after %d of %d bytes: %w", n, len(p), err))
	}
	return nil
}

// rangeStart parses the start of "bytes START-END/TOTAL".
func rangeStart(v string) (int64, bool) {
	v, ok := strings.CutPrefix(strings.TrimSpace(v), "bytes ")
	if !ok {
		return 0, false
	}
	a, _, ok := strings.Cut(v, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(a, 10, 64)
	return n, err == nil
}

// Stat implements store.Store with Get Blob Properties.
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
	props, err := s.client.NewBlobClient(okey).GetProperties(ctx, nil)
	if err != nil {
		return store.ObjectInfo{}, s.mapErr("stat", key, err)
	}
	var size int64
	if props.ContentLength != nil {
		size = *props.ContentLength
	}
	return store.ObjectInfo{Key: key, Size: size}, nil
}

// List implements store.Store with List Blobs. The service has no
// start-after (its markers are opaque): the listing pages from the prefix
// and drops the names up to and including StartAfter, so a listing that
// starts deep into a large prefix reads the pages before it.
func (s *Store) List(ctx context.Context, opts store.ListOptions) ([]store.ObjectInfo, error) {
	if err := store.ValidatePrefix(opts.Prefix); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	prefix := s.prefix + opts.Prefix
	lo := &container.ListBlobsFlatOptions{Prefix: &prefix}
	page := int32(ListPageSize)
	if opts.Limit > 0 {
		// One more than the limit: the start-after key may come first.
		page = int32(min(ListPageSize, opts.Limit+1))
	}
	lo.MaxResults = &page
	pager := s.client.NewListBlobsFlatPager(lo)
	var out []store.ObjectInfo
	for pager.More() {
		resp, err := pager.NextPage(ctx)
		if err != nil {
			return nil, s.mapErr("list", opts.Prefix, err)
		}
		for _, item := range resp.Segment.BlobItems {
			if item.Name == nil {
				continue
			}
			k, ok := strings.CutPrefix(*item.Name, s.prefix)
			if !ok || k <= opts.StartAfter || !strings.HasPrefix(k, opts.Prefix) {
				continue
			}
			var size int64
			if item.Properties != nil && item.Properties.ContentLength != nil {
				size = *item.Properties.ContentLength
			}
			out = append(out, store.ObjectInfo{Key: k, Size: size})
			if opts.Limit > 0 && len(out) >= opts.Limit {
				return out, nil
			}
		}
	}
	return out, nil
}

// PutIfAbsent implements store.Store with Put Blob and If-None-Match: *.
//
// It retries on its own rather than through the SDK so that it can tell a
// lost race from its own earlier attempt having landed: when a retry meets
// an existing blob whose bytes equal data, the first attempt created it and
// the call succeeds.
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
	once := policy.WithRetryOptions(ctx, policy.RetryOptions{MaxRetries: -1, TryTimeout: min(s.timeout, time.Minute)})
	etagAny := azcore.ETagAny
	uo := &blockblob.UploadOptions{AccessConditions: &blob.AccessConditions{
		ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: &etagAny},
	}}
	bb := s.client.NewBlockBlobClient(okey)
	delay := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		_, err := bb.Upload(once, nopCloser{bytes.NewReader(data)}, uo)
		if err == nil {
			return nil
		}
		mapped := s.mapErr("create", key, err)
		if errors.Is(mapped, store.ErrExists) {
			if attempt > 1 && s.sameContent(ctx, okey, data) {
				return nil
			}
			return mapped
		}
		if attempt >= s.maxAttempts || !retryable(err) || ctx.Err() != nil {
			return mapped
		}
		if err := sleep(ctx, delay); err != nil {
			return s.mapErr("create", key, err)
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// retryable reports whether a failed request may succeed when repeated:
// 408, 429 and 5xx answers and transport errors, never a 4xx verdict or a
// cancelled context.
func retryable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode == http.StatusRequestTimeout || re.StatusCode == http.StatusTooManyRequests || re.StatusCode >= 500
	}
	return true
}

// sameContent reports whether the blob okey holds exactly data.
func (s *Store) sameContent(ctx context.Context, okey string, data []byte) bool {
	resp, err := s.client.NewBlobClient(okey).DownloadStream(ctx, nil)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(io.LimitReader(resp.Body, int64(len(data))+1))
	return err == nil && bytes.Equal(got, data)
}

// Put implements store.Store with Put Blob.
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
	_, err = s.client.NewBlockBlobClient(okey).Upload(ctx, nopCloser{bytes.NewReader(data)}, nil)
	return s.mapErr("put", key, err)
}

// Delete implements store.Store with Delete Blob; a missing blob is not an
// error.
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
	if _, err := s.client.NewBlobClient(okey).Delete(ctx, nil); err != nil {
		if m := s.mapErr("delete", key, err); !errors.Is(m, store.ErrNotFound) {
			return m
		}
	}
	return nil
}

// nopCloser is a bytes.Reader with a Close that does nothing.
type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

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

// newBlockPrefix returns a random prefix for the block ids of one upload,
// so that two writers of one key never commit each other's blocks.
func newBlockPrefix() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
