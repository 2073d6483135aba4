package httpstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kv0/kv0/core/store"
)

// Op is the operation a signed URL is good for.
type Op int

// Operations a Signer signs.
const (
	// OpGet is a GetObject of one key (ranged reads use it too).
	OpGet Op = iota + 1
	// OpList is a ListObjectsV2 of a key prefix.
	OpList
)

// String returns "get" or "list", the names the sign server uses.
func (o Op) String() string {
	switch o {
	case OpGet:
		return "get"
	case OpList:
		return "list"
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// ListParams are the ListObjectsV2 parameters of an OpList request. Keys
// are relative to the repository, like every store key. A signer for GCS
// or Azure maps them onto its service's listing (startOffset/pageToken,
// marker); the store drops keys up to StartAfter itself, so a service
// without start-after still lists correctly.
type ListParams struct {
	StartAfter        string
	ContinuationToken string
	MaxKeys           int // 0: the server's default (1000)
}

// Signer turns an operation on a key into a URL that performs it. For OpGet
// key is an object key; for OpList it is the listing prefix (may be empty)
// and list carries the other parameters. Keys are relative to the
// repository; the signer adds its prefix. Implementations must be safe for
// concurrent use.
type Signer interface {
	Sign(ctx context.Context, op Op, key string, list ListParams) (string, error)
}

// listBucketResult is the part of an S3 ListObjectsV2 answer we read, and
// what every listing format is read into (see parseListing).
type listBucketResult struct {
	Prefix                string
	IsTruncated           bool
	NextContinuationToken string
	Contents              []listEntry
}

// listEntry is one object of a listing: its full bucket key and its size.
type listEntry struct {
	Key  string
	Size int64
}

// list pages through signed ListObjectsV2 requests. The answers carry full
// bucket keys; the repository prefix is the answer's Prefix minus the
// relative prefix we asked for.
func (s *Store) list(ctx context.Context, opts store.ListOptions) ([]store.ObjectInfo, error) {
	var out []store.ObjectInfo
	params := ListParams{StartAfter: opts.StartAfter}
	for {
		params.MaxKeys = 1000
		if opts.Limit > 0 {
			params.MaxKeys = min(1000, opts.Limit-len(out))
		}
		res, err := s.listPage(ctx, opts.Prefix, params)
		if err != nil {
			return nil, err
		}
		repo, ok := strings.CutSuffix(res.Prefix, opts.Prefix)
		if !ok {
			return nil, &Error{Op: "list", URL: opts.Prefix, Msg: fmt.Sprintf("answer is for prefix %q", res.Prefix), Err: ErrServer}
		}
		for _, c := range res.Contents {
			k, ok := strings.CutPrefix(c.Key, repo)
			if !ok || k <= opts.StartAfter || !strings.HasPrefix(k, opts.Prefix) || store.ValidateKey(k) != nil {
				continue
			}
			out = append(out, store.ObjectInfo{Key: k, Size: c.Size})
			s.learnSize(k, c.Size)
			if opts.Limit > 0 && len(out) >= opts.Limit {
				return out, nil
			}
		}
		if !res.IsTruncated || res.NextContinuationToken == "" {
			return out, nil
		}
		params.ContinuationToken = res.NextContinuationToken
	}
}

func (s *Store) listPage(ctx context.Context, prefix string, params ListParams) (*listBucketResult, error) {
	var last error
	for attempt := 0; attempt < s.opts.MaxAttempts; attempt++ {
		if attempt > 0 {
			if err := backoff(ctx, attempt); err != nil {
				return nil, err
			}
		}
		// List URLs are signed for every page: they carry the token.
		u, err := s.signer.Sign(ctx, OpList, prefix, params)
		if err != nil {
			return nil, &Error{Op: "sign", URL: prefix, Msg: "signing a list", Err: err}
		}
		res, err, retry := s.listOnce(ctx, u)
		if err == nil {
			return res, nil
		}
		if !retry || ctx.Err() != nil {
			return nil, err
		}
		last = err
	}
	return nil, fmt.Errorf("giving up after %d attempts: %w", s.opts.MaxAttempts, last)
}

func (s *Store) listOnce(ctx context.Context, rawURL string) (*listBucketResult, error, bool) {
	resp, done, err := s.get(ctx, "list", rawURL, "")
	if err != nil {
		return nil, err, errors.Is(err, ErrNetwork)
	}
	defer done()
	defer resp.Body.Close()
	fail := func(msg string, sentinel error) *Error {
		return &Error{Op: "list", URL: redact(rawURL), Status: resp.Status, Msg: msg, Err: sentinel}
	}
	switch code := resp.Status; {
	case code == statusOK:
	case code == statusForbidden || code == statusUnauthorized:
		return nil, fail(s3Message(resp.Body), ErrForbidden), false
	case code == statusNotFound:
		return nil, fail(s3Message(resp.Body), store.ErrNotFound), false
	case code == statusTooManyRequests || code >= 500:
		return nil, fail("", ErrServer), true
	default:
		return nil, fail(s3Message(resp.Body), ErrServer), false
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr, false
		}
		return nil, fail(err.Error(), ErrTruncated), true
	}
	res, err := parseListing(rawURL, body)
	if err != nil {
		// A cut-off document fails here too; try again.
		return nil, fail(err.Error(), ErrTruncated), true
	}
	return res, nil, false
}

// gcsObjects is the part of a GCS JSON objects.list answer we read.
type gcsObjects struct {
	Items []struct {
		Name string `json:"name"`
		Size string `json:"size"` // a decimal string, as the JSON API sends int64s
	} `json:"items"`
	NextPageToken string `json:"nextPageToken"`
}

// parseListing reads a listing answer in any of the formats signed list
// URLs return: S3's (and GCS's XML API's) ListBucketResult, Azure's
// EnumerationResults, or GCS's JSON objects list, whose answer does not
// repeat the prefix: it is taken from the URL's "prefix" parameter. Page
// tokens (NextContinuationToken, NextMarker, nextPageToken) all become
// NextContinuationToken, which the signer puts back into the next URL.
func parseListing(rawURL string, body []byte) (*listBucketResult, error) {
	res, err := parseListingFormat(rawURL, body)
	if err != nil {
		return nil, err
	}
	for _, c := range res.Contents {
		if c.Size < 0 {
			return nil, fmt.Errorf("bad listing: negative size %d of %q", c.Size, c.Key)
		}
	}
	return res, nil
}

func parseListingFormat(rawURL string, body []byte) (*listBucketResult, error) {
	trimmed := bytes.TrimSpace(body)
	switch {
	case bytes.HasPrefix(trimmed, []byte("{")):
		var g gcsObjects
		if err := json.Unmarshal(trimmed, &g); err != nil {
			return nil, fmt.Errorf("bad GCS object list: %v", err)
		}
		u, err := url.Parse(rawURL)
		if err != nil {
			return nil, fmt.Errorf("bad list URL: %v", err)
		}
		res := &listBucketResult{Prefix: u.Query().Get("prefix"), NextContinuationToken: g.NextPageToken, IsTruncated: g.NextPageToken != ""}
		for _, it := range g.Items {
			n, err := strconv.ParseInt(it.Size, 10, 64)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("bad GCS object list: size %q of %q", it.Size, it.Name)
			}
			res.Contents = append(res.Contents, listEntry{it.Name, n})
		}
		return res, nil
	case bytes.Contains(trimmed[:min(len(trimmed), 512)], []byte("<EnumerationResults")):
		return parseListXML(body, true)
	}
	return parseListXML(body, false)
}

// SignResponse is the JSON answer of a sign server for one request.
type SignResponse struct {
	URL     string    `json:"url,omitempty"`
	Expires time.Time `json:"expires,omitzero"`
	Error   string    `json:"error,omitempty"`
}

// ServerSigner is a Signer that asks a "kv0 sign-server" over HTTP:
// GET {URL}/sign?op=get&key=K with "Authorization: Bearer {Token}". A
// browser holds only the token, never the object store's credentials.
type ServerSigner struct {
	// URL is the sign server's base URL, e.g. "https://sign.example.com".
	URL string
	// Token is the bearer token.
	Token string
	// Transport sends the requests (default: as for a Store).
	Transport Transport
}

var _ Signer = (*ServerSigner)(nil)

// Sign implements Signer.
func (g *ServerSigner) Sign(ctx context.Context, op Op, key string, list ListParams) (string, error) {
	q := url.Values{"op": {op.String()}}
	switch op {
	case OpGet:
		q.Set("key", key)
	case OpList:
		q.Set("prefix", key)
		if list.StartAfter != "" {
			q.Set("start-after", list.StartAfter)
		}
		if list.ContinuationToken != "" {
			q.Set("continuation-token", list.ContinuationToken)
		}
		if list.MaxKeys > 0 {
			q.Set("max-keys", strconv.Itoa(list.MaxKeys))
		}
	default:
		return "", fmt.Errorf("httpstore: cannot sign %v", op)
	}
	endpoint := strings.TrimSuffix(g.URL, "/") + "/sign"
	t := g.Transport
	if t == nil {
		t = defaultTransport()
	}
	resp, err := t.Get(ctx, endpoint+"?"+q.Encode(), map[string][]string{"Authorization": {"Bearer " + g.Token}})
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return "", cerr
		}
		return "", &Error{Op: "sign", URL: redact(endpoint), Msg: "sign server unreachable", Err: ErrNetwork}
	}
	defer resp.Body.Close()
	var sr SignResponse
	derr := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&sr)
	switch {
	case resp.Status == statusUnauthorized || resp.Status == statusForbidden:
		return "", &Error{Op: "sign", URL: redact(endpoint), Status: resp.Status, Msg: sr.Error, Err: ErrForbidden}
	case resp.Status == statusBadRequest:
		return "", &Error{Op: "sign", URL: redact(endpoint), Status: resp.Status, Msg: sr.Error, Err: store.ErrInvalidKey}
	case resp.Status != statusOK || derr != nil || sr.URL == "":
		return "", &Error{Op: "sign", URL: redact(endpoint), Status: resp.Status, Msg: sr.Error, Err: ErrServer}
	}
	return sr.URL, nil
}

// BearerToken returns the token of an Authorization header value of the
// Bearer scheme, whose name is matched without regard to case (RFC 9110,
// section 11.1), and whether it is one.
func BearerToken(authorization string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(authorization), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(tok), true
}
