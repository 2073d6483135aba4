package main

import (
	"container/list"
	"net/http"
	"strings"
	"sync"
)

// answerCache keeps the API's recent answers about the latest versions
// (ETag-validated, not immutable) in the isolate: a request for a kept
// answer goes to the handler with the kept ETag in If-None-Match, so the
// handler only checks the versions (a few small reads) and answers 304
// without reading data, and the kept bytes are sent as the 200 they were.
// A warm read of a series then costs the versions check, not the decoding
// and downsampling of its points again. Requests that carry their own
// If-None-Match or a Range, other methods, and paths outside /api/ pass
// through untouched.
type answerCache struct {
	h        http.Handler
	maxEntry int // largest answer kept, in bytes
	maxTotal int // bound of all kept answers

	mu    sync.Mutex
	total int
	items map[string]*list.Element // of *answer
	lru   list.List
}

type answer struct {
	key    string
	etag   string
	header http.Header
	body   []byte
}

func newAnswerCache(h http.Handler, maxEntry, maxTotal int) *answerCache {
	return &answerCache{h: h, maxEntry: maxEntry, maxTotal: maxTotal, items: map[string]*list.Element{}}
}

func (c *answerCache) get(key string) *answer {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.lru.MoveToFront(el)
		return el.Value.(*answer)
	}
	return nil
}

func (c *answerCache) put(a *answer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[a.key]; ok {
		c.total -= len(el.Value.(*answer).body)
		c.lru.Remove(el)
	}
	c.items[a.key] = c.lru.PushFront(a)
	c.total += len(a.body)
	for c.total > c.maxTotal && c.lru.Len() > 0 {
		el := c.lru.Back()
		old := el.Value.(*answer)
		c.lru.Remove(el)
		delete(c.items, old.key)
		c.total -= len(old.body)
	}
}

func (c *answerCache) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || !strings.HasPrefix(r.URL.Path, "/api/") ||
		r.Header.Get("If-None-Match") != "" || r.Header.Get("Range") != "" {
		c.h.ServeHTTP(w, r)
		return
	}
	key := r.URL.RequestURI()
	kept := c.get(key)
	t := &teeWriter{w: w, hdr: http.Header{}, limit: c.maxEntry}
	if kept != nil {
		r = r.Clone(r.Context())
		r.Header.Set("If-None-Match", kept.etag)
		t.revalidating = true
	}
	c.h.ServeHTTP(t, r)
	if t.swallowed {
		// Unchanged: the kept answer, as the handler sent it.
		for k, v := range kept.header {
			w.Header()[k] = v
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(kept.body)
		return
	}
	t.WriteHeader(http.StatusOK) // an answer without a body still has a status
	etag := t.hdr.Get("ETag")
	cc := t.hdr.Get("Cache-Control")
	if t.status == http.StatusOK && !t.over && etag != "" && !strings.Contains(cc, "no-store") && !strings.Contains(cc, "immutable") {
		c.put(&answer{key: key, etag: etag, header: t.hdr.Clone(), body: t.buf})
	}
}

// teeWriter passes an answer on while keeping its bytes (up to limit),
// or swallows the handler's 304 to a revalidation the cache sent.
type teeWriter struct {
	w            http.ResponseWriter
	hdr          http.Header
	status       int
	revalidating bool
	swallowed    bool
	buf          []byte
	over         bool
	limit        int
}

func (t *teeWriter) Header() http.Header { return t.hdr }

func (t *teeWriter) WriteHeader(code int) {
	if t.status != 0 {
		return
	}
	t.status = code
	if code == http.StatusNotModified && t.revalidating {
		t.swallowed = true
		return
	}
	for k, v := range t.hdr {
		t.w.Header()[k] = v
	}
	t.w.WriteHeader(code)
}

func (t *teeWriter) Write(p []byte) (int, error) {
	t.WriteHeader(http.StatusOK)
	if t.swallowed {
		return len(p), nil
	}
	if !t.over {
		if len(t.buf)+len(p) > t.limit {
			t.over, t.buf = true, nil
		} else {
			t.buf = append(t.buf, p...)
		}
	}
	return t.w.Write(p)
}

// Flush passes a flush on.
func (t *teeWriter) Flush() {
	if f, ok := t.w.(http.Flusher); ok && !t.swallowed {
		f.Flush()
	}
}
