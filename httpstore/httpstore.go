package httpstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kv0/kv0/core/store"
)

// Defaults used when the matching Options field is zero.
const (
	DefaultMaxConcurrency = 8
	DefaultMaxAttempts    = 4
	DefaultRequestTimeout = 60 * time.Second
	DefaultCoalesceGap    = 64 << 10
	DefaultMaxCoalesce    = 8 << 20
	DefaultURLTTL         = time.Minute
	DefaultSizeTTL        = time.Minute
)

// Options configure a Store. The zero value is ready to use.
type Options struct {
	// Transport sends the requests (default: net/http natively, the
	// JavaScript fetch on js/wasm; RequestTimeout bounds each attempt).
	Transport Transport
	// MaxConcurrency bounds the requests in flight (default 8).
	MaxConcurrency int
	// MaxAttempts is the number of tries of one request (default 4).
	MaxAttempts int
	// RequestTimeout bounds one attempt, body included (default 60 s).
	RequestTimeout time.Duration
	// CoalesceGap is the largest hole between two waiting reads of one
	// object that still merges them into one request (default 64 KiB;
	// negative disables coalescing).
	CoalesceGap int64
	// MaxCoalesce caps the span of a merged request (default 8 MiB).
	MaxCoalesce int64
	// URLTTL is how long a signed GET URL is reused (default 1 min; keep it
	// below the signer's expiry). A 403 on a cached URL re-signs once.
	URLTTL time.Duration
	// SizeTTL is how long a size learned from a listing or a response is
	// trusted by ReadTail (default 1 min). A stale size costs one more
	// request, never wrong data.
	SizeTTL time.Duration
	// Header is added to every request (e.g. an Authorization header for a
	// private static server). Avoid headers that trigger CORS preflights
	// in browsers unless the server allows them.
	Header map[string][]string
}

// Store is a read-only store.Store over HTTP range requests.
type Store struct {
	base   *url.URL // static mode
	signer Signer   // signed mode
	opts   Options
	client Transport
	sem    chan struct{}

	mu     sync.Mutex
	queue  []*readReq // reads waiting for a worker, oldest first
	active int        // running workers
	urls   map[string]cachedURL
	sizes  map[string]cachedSize
}

type cachedURL struct {
	url string
	at  time.Time
}

type cachedSize struct {
	size int64
	at   time.Time
}

var (
	_ store.Store      = (*Store)(nil)
	_ store.TailReader = (*Store)(nil)
)

// OpenStatic returns a store that reads key K from baseURL + "/" + K. The
// base URL may carry a query string, which is kept on every request.
func OpenStatic(baseURL string, opts Options) (*Store, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("httpstore: %q is not an http(s) URL", redact(baseURL))
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	u.Fragment = ""
	return newStore(u, nil, opts), nil
}

// OpenSigned returns a store that asks signer for the URL of every request.
func OpenSigned(signer Signer, opts Options) (*Store, error) {
	if signer == nil {
		return nil, errors.New("httpstore: nil signer")
	}
	return newStore(nil, signer, opts), nil
}

func newStore(base *url.URL, signer Signer, opts Options) *Store {
	if opts.Transport == nil {
		opts.Transport = defaultTransport()
	}
	if opts.MaxConcurrency <= 0 {
		opts.MaxConcurrency = DefaultMaxConcurrency
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.CoalesceGap == 0 {
		opts.CoalesceGap = DefaultCoalesceGap
	}
	if opts.MaxCoalesce <= 0 {
		opts.MaxCoalesce = DefaultMaxCoalesce
	}
	if opts.URLTTL <= 0 {
		opts.URLTTL = DefaultURLTTL
	}
	if opts.SizeTTL <= 0 {
		opts.SizeTTL = DefaultSizeTTL
	}
	return &Store{
		base:   base,
		signer: signer,
		opts:   opts,
		client: opts.Transport,
		sem:    make(chan struct{}, opts.MaxConcurrency),
		urls:   map[string]cachedURL{},
		sizes:  map[string]cachedSize{},
	}
}

// objectURL returns the URL of key: the static one, a cached signed one,
// or a freshly signed one when fresh is set or the cache is stale.
func (s *Store) objectURL(ctx context.Context, key string, fresh bool) (string, error) {
	if s.base != nil {
		u := *s.base
		segs := strings.Split(key, "/")
		esc := make([]string, len(segs))
		for i, seg := range segs {
			esc[i] = url.PathEscape(seg)
		}
		u.Path = s.base.Path + "/" + key
		u.RawPath = s.base.EscapedPath() + "/" + strings.Join(esc, "/")
		return u.String(), nil
	}
	now := time.Now()
	if !fresh {
		s.mu.Lock()
		c, ok := s.urls[key]
		s.mu.Unlock()
		if ok && now.Sub(c.at) < s.opts.URLTTL {
			return c.url, nil
		}
	}
	u, err := s.signer.Sign(ctx, OpGet, key, ListParams{})
	if err != nil {
		return "", &Error{Op: "sign", URL: key, Msg: "signing a GET", Err: err}
	}
	s.mu.Lock()
	s.urls[key] = cachedURL{u, now}
	s.mu.Unlock()
	return u, nil
}

func (s *Store) knownSize(key string) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.sizes[key]
	if !ok || time.Since(c.at) > s.opts.SizeTTL {
		return 0, false
	}
	return c.size, true
}

func (s *Store) learnSize(key string, size int64) {
	if size < 0 {
		return
	}
	s.mu.Lock()
	s.sizes[key] = cachedSize{size, time.Now()}
	s.mu.Unlock()
}

// ReadAt implements store.Store. Reads that wait for a free connection are
// merged with nearby reads of the same object.
func (s *Store) ReadAt(ctx context.Context, key string, p []byte, off int64) error {
	if err := store.ValidateKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if off < 0 {
		return fmt.Errorf("httpstore read %s at %d: %w", key, off, store.ErrShortObject)
	}
	if len(p) == 0 {
		info, err := s.Stat(ctx, key)
		if err != nil {
			return err
		}
		if off > info.Size {
			return fmt.Errorf("httpstore read %s at %d of %d bytes: %w", key, off, info.Size, store.ErrShortObject)
		}
		return nil
	}
	return s.read(ctx, key, p, off)
}

// Stat implements store.Store with "GET Range: bytes=0-0" (HEAD is not
// allowed on GET-presigned URLs); the size comes from Content-Range.
func (s *Store) Stat(ctx context.Context, key string) (store.ObjectInfo, error) {
	if err := store.ValidateKey(key); err != nil {
		return store.ObjectInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return store.ObjectInfo{}, err
	}
	_, total, err := s.fetch(ctx, "stat", key, 0, 1)
	if err != nil && !errors.Is(err, store.ErrShortObject) {
		return store.ObjectInfo{}, err
	}
	if total < 0 {
		return store.ObjectInfo{}, &Error{Op: "stat", URL: key, Msg: "the server did not report the object size (is Content-Range exposed through CORS?)", Err: ErrServer}
	}
	return store.ObjectInfo{Key: key, Size: total}, nil
}

// ReadTail implements store.TailReader. With a known size it is one ranged
// request for the tail; otherwise it asks for the first n bytes, which is
// the whole answer when the object has at most n bytes and otherwise
// reports the size for a second request.
func (s *Store) ReadTail(ctx context.Context, key string, n int) ([]byte, int64, error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, 0, err
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	if n < 0 {
		return nil, 0, fmt.Errorf("httpstore: ReadTail %s: negative length %d", key, n)
	}
	if size, ok := s.knownSize(key); ok && size > 0 && n > 0 {
		m := min(int64(n), size)
		data, total, err := s.fetch(ctx, "read", key, size-m, size)
		if err == nil && total == size && int64(len(data)) == m {
			return data, size, nil
		}
		if err != nil && !errors.Is(err, store.ErrShortObject) {
			return nil, 0, err
		}
		// The object changed size since we learned it: start over.
	}
	first := max(int64(n), 1)
	data, total, err := s.fetch(ctx, "read", key, 0, first)
	if err != nil && !errors.Is(err, store.ErrShortObject) {
		return nil, 0, err
	}
	if total < 0 {
		return nil, 0, &Error{Op: "read", URL: key, Msg: "the server did not report the object size (is Content-Range exposed through CORS?)", Err: ErrServer}
	}
	m := min(int64(n), total)
	if int64(len(data)) == total {
		return data[total-m:], total, nil
	}
	tail := make([]byte, m)
	if m > 0 {
		if err := s.read(ctx, key, tail, total-m); err != nil {
			return nil, 0, err
		}
	}
	return tail, total, nil
}

// List implements store.Store: store.ErrNotSupported in static mode, signed
// ListObjectsV2 requests in signed mode.
func (s *Store) List(ctx context.Context, opts store.ListOptions) ([]store.ObjectInfo, error) {
	if err := store.ValidatePrefix(opts.Prefix); err != nil {
		return nil, err
	}
	if s.signer == nil {
		return nil, fmt.Errorf("httpstore list %s: static HTTP servers cannot list: %w", opts.Prefix, store.ErrNotSupported)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.list(ctx, opts)
}

// PutIfAbsent returns store.ErrNotSupported: the store is read-only.
func (s *Store) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return fmt.Errorf("httpstore create %s: read-only store: %w", key, store.ErrNotSupported)
}

// Put returns store.ErrNotSupported: the store is read-only.
func (s *Store) Put(ctx context.Context, key string, data []byte) error {
	return fmt.Errorf("httpstore put %s: read-only store: %w", key, store.ErrNotSupported)
}

// Delete returns store.ErrNotSupported: the store is read-only.
func (s *Store) Delete(ctx context.Context, key string) error {
	return fmt.Errorf("httpstore delete %s: read-only store: %w", key, store.ErrNotSupported)
}

// fetch reads [start, end) of key with retries. It returns the bytes the
// server has in that range (fewer only when the object ends first, as its
// Content-Range total proves), the object's total size (-1 if unknown),
// and store.ErrShortObject when start is at or past the end.
func (s *Store) fetch(ctx context.Context, op, key string, start, end int64) ([]byte, int64, error) {
	resigned := false
	var last error
	for attempt := 0; attempt < s.opts.MaxAttempts; attempt++ {
		if attempt > 0 {
			if err := backoff(ctx, attempt); err != nil {
				return nil, -1, err
			}
		}
		u, err := s.objectURL(ctx, key, false)
		if err != nil {
			return nil, -1, err
		}
		data, total, err, retry := s.fetchOnce(ctx, op, u, start, end)
		if err == nil || errors.Is(err, store.ErrShortObject) {
			s.learnSize(key, total)
			return data, total, err
		}
		if errors.Is(err, ErrForbidden) && s.signer != nil && !resigned {
			// The cached URL may have expired: sign again, right away.
			resigned = true
			if _, serr := s.objectURL(ctx, key, true); serr != nil {
				return nil, -1, serr
			}
			attempt--
			continue
		}
		if !retry || ctx.Err() != nil {
			if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
				return nil, -1, fmt.Errorf("%w (%w)", cerr, err)
			}
			return nil, -1, err
		}
		last = err
	}
	return nil, -1, fmt.Errorf("giving up after %d attempts: %w", s.opts.MaxAttempts, last)
}

// backoff sleeps before retry attempt (1, 2, ...): 50 ms doubling, capped
// at 2 s, with full jitter.
func backoff(ctx context.Context, attempt int) error {
	d := min(50*time.Millisecond<<min(attempt-1, 10), 2*time.Second)
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Store) acquire(ctx context.Context) error {
	select {
	case s.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Store) release() { <-s.sem }

// get sends one GET under the concurrency bound and the per-attempt
// timeout. The caller must call done after reading the body.
func (s *Store) get(ctx context.Context, op, rawURL, rng string) (resp *Response, done func(), err error) {
	if err := s.acquire(ctx); err != nil {
		return nil, nil, err
	}
	actx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	done = func() { cancel(); s.release() }
	header := s.opts.Header
	if rng != "" {
		header = make(map[string][]string, len(s.opts.Header)+1)
		for k, v := range s.opts.Header {
			header[k] = v
		}
		header["Range"] = []string{rng}
	}
	resp, err = s.client.Get(actx, rawURL, header)
	if err != nil {
		done()
		if cerr := ctx.Err(); cerr != nil {
			return nil, nil, cerr
		}
		cause := err
		var ue *url.Error
		if errors.As(err, &ue) {
			// url.Error quotes the full URL, signature included.
			cause = &scrubbed{msg: ue.Err.Error(), cause: ue.Err}
		}
		return nil, nil, &Error{Op: op, URL: redact(rawURL), Msg: cause.Error(), Err: ErrNetwork}
	}
	return resp, done, nil
}

// fetchOnce is one attempt of fetch; retry says whether another may help.
func (s *Store) fetchOnce(ctx context.Context, op, rawURL string, start, end int64) (data []byte, total int64, err error, retry bool) {
	rng := fmt.Sprintf("bytes=%d-%d", start, end-1)
	resp, done, err := s.get(ctx, op, rawURL, rng)
	if err != nil {
		return nil, -1, err, errors.Is(err, ErrNetwork)
	}
	defer done()
	defer resp.Body.Close()
	fail := func(status int, msg string, sentinel error) *Error {
		return &Error{Op: op, URL: redact(rawURL), Status: status, Msg: msg, Err: sentinel}
	}
	switch code := resp.Status; {
	case code == statusPartialContent:
		cr := resp.header("Content-Range")
		a, b, tot, ok := parseContentRange(cr)
		if !ok {
			if tot, past := pastEndRange(cr); past && tot <= start {
				// Azurite answers a range of an empty blob with 206
				// "bytes 0--1/0": nothing from start, of tot bytes.
				return nil, tot, fail(code, fmt.Sprintf("range %s starts past the end (%d bytes)", rng, tot), store.ErrShortObject), false
			}
			if cr == "" {
				return nil, -1, fail(code, "206 answer without Content-Range (is it exposed through CORS?)", ErrServer), false
			}
			return nil, -1, fail(code, fmt.Sprintf("bad Content-Range %q", cr), ErrServer), false
		}
		if a != start || b >= end || b < a || (b < end-1 && tot != b+1) {
			return nil, -1, fail(code, fmt.Sprintf("asked for %s, got Content-Range %q", rng, cr), ErrServer), false
		}
		buf := make([]byte, b-a+1)
		if n, err := io.ReadFull(resp.Body, buf); err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return nil, -1, cerr, false
			}
			return nil, -1, fail(code, fmt.Sprintf("got %d of %d bytes of %s: %v", n, len(buf), rng, err), ErrTruncated), true
		}
		return buf, tot, nil, false
	case code == statusOK:
		// The server ignored the range and sends the whole object.
		tot := resp.ContentLength
		if tot >= 0 && start >= tot {
			return nil, tot, fail(code, fmt.Sprintf("range %s starts past the end (%d bytes)", rng, tot), store.ErrShortObject), false
		}
		if _, err := io.CopyN(io.Discard, resp.Body, start); err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return nil, -1, cerr, false
			}
			if tot < 0 && errors.Is(err, io.EOF) {
				return nil, start, fail(code, "range starts past the end", store.ErrShortObject), false
			}
			return nil, -1, fail(code, err.Error(), ErrTruncated), true
		}
		want := end - start
		if tot >= 0 {
			want = min(want, tot-start)
		}
		buf := make([]byte, want)
		n, err := io.ReadFull(resp.Body, buf)
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return nil, -1, cerr, false
			}
			if tot >= 0 || !errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, -1, fail(code, fmt.Sprintf("got %d of %d bytes: %v", n, want, err), ErrTruncated), true
			}
			// Unknown length and the body ended: that is the object's end.
			return buf[:n], start + int64(n), nil, false
		}
		if tot < 0 {
			tot = -1
		}
		return buf, tot, nil, false
	case code == statusRangeNotSatisfiable:
		tot := int64(-1)
		if _, _, t, ok := parseContentRange(resp.header("Content-Range")); ok {
			tot = t
		} else if start == 0 {
			tot = 0 // bytes=0-... is unsatisfiable only for an empty object
		}
		return nil, tot, fail(code, fmt.Sprintf("range %s", rng), store.ErrShortObject), false
	case code == statusNotFound || code == statusGone:
		return nil, -1, fail(code, "", store.ErrNotFound), false
	case code == statusForbidden || code == statusUnauthorized:
		return nil, -1, fail(code, s3Message(resp.Body), ErrForbidden), false
	case code == statusTooManyRequests || code >= 500:
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return nil, -1, fail(code, "", ErrServer), true
	default:
		return nil, -1, fail(code, s3Message(resp.Body), ErrServer), false
	}
}

// s3Message extracts Code and Message from an S3 XML error body, which
// tells an expired URL ("Request has expired") from a bad signature.
func s3Message(body io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(body, 8<<10))
	text := string(b)
	var parts []string
	for _, tag := range []string{"Code", "Message"} {
		if _, after, ok := strings.Cut(text, "<"+tag+">"); ok {
			if v, _, ok := strings.Cut(after, "</"+tag+">"); ok {
				parts = append(parts, v)
			}
		}
	}
	return strings.Join(parts, ": ")
}

// parseContentRange parses "bytes A-B/TOTAL" and "bytes */TOTAL"; total is
// -1 when the server sends "*".
// pastEndRange recognizes "bytes A-(A-1)/A", an empty range at the end of
// an object of A bytes, and returns A.
func pastEndRange(v string) (int64, bool) {
	var a, b, total int64
	if n, err := fmt.Sscanf(strings.TrimSpace(v), "bytes %d-%d/%d", &a, &b, &total); err != nil || n != 3 {
		return 0, false
	}
	return total, a >= 0 && b == a-1 && total == a
}

func parseContentRange(v string) (a, b, total int64, ok bool) {
	v, ok = strings.CutPrefix(strings.TrimSpace(v), "bytes ")
	if !ok {
		return 0, 0, 0, false
	}
	rng, tot, ok := strings.Cut(v, "/")
	if !ok {
		return 0, 0, 0, false
	}
	total = -1
	if tot != "*" {
		t, err := strconv.ParseInt(tot, 10, 64)
		if err != nil || t < 0 {
			return 0, 0, 0, false
		}
		total = t
	}
	if rng == "*" {
		return -1, -1, total, total >= 0
	}
	as, bs, ok := strings.Cut(rng, "-")
	if !ok {
		return 0, 0, 0, false
	}
	a, err1 := strconv.ParseInt(as, 10, 64)
	b, err2 := strconv.ParseInt(bs, 10, 64)
	if err1 != nil || err2 != nil || a < 0 || b < a || (total >= 0 && b >= total) {
		return 0, 0, 0, false
	}
	return a, b, total, true
}
