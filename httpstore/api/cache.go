package api

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
)

// apiVersion is part of every ETag, so answers of another encoding never
// revalidate against this one's.
const apiVersion = "kv0-api-1"

// makeETag returns a strong entity tag over the parts.
func makeETag(parts ...string) string {
	h := sha256.New()
	h.Write([]byte(apiVersion))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return `"` + hex.EncodeToString(h.Sum(nil)[:16]) + `"`
}

// ifNoneMatch reports whether the request's If-None-Match matches tag
// (weak comparison, as RFC 9110 wants for If-None-Match).
func ifNoneMatch(r *http.Request, tag string) bool {
	for _, v := range r.Header.Values("If-None-Match") {
		for _, t := range strings.Split(v, ",") {
			t = strings.TrimSpace(t)
			if t == "*" || strings.TrimPrefix(t, "W/") == strings.TrimPrefix(tag, "W/") {
				return true
			}
		}
	}
	return false
}

// validator is how an answer may be cached: by its ETag, for
// Options.LatestMaxAge. No answer is immutable: whatever a request names (a
// version, a tag, an object of /files/), a cleanup or purge may remove it
// and a dataset deleted and written again may give it other contents, and
// an immutable answer would outlive that in every cache on the way for a
// year (the edge worker's Cache API among them). Answers about datasets
// carry the manifest's identity in their ETag (lance.Dataset.ManifestID), so
// a client revalidating gets a 304 only for the same contents.
type validator struct {
	etag string
}

// maxAge is the Cache-Control of every answer that may be cached: a short
// max-age (Options.LatestMaxAge), public unless a token guards the API.
func (h *Handler) maxAge() string {
	return fmt.Sprintf("%s, max-age=%d", h.scope(), int(h.opts.LatestMaxAge/time.Second))
}

// setCaching writes the caching headers and reports whether the request is
// answered by a 304 (it then is).
func (h *Handler) setCaching(w http.ResponseWriter, r *http.Request, v validator) bool {
	hd := w.Header()
	hd.Set("ETag", v.etag)
	hd.Set("Cache-Control", h.maxAge())
	if h.opts.Token != "" {
		hd.Add("Vary", "Authorization")
	}
	if ifNoneMatch(r, v.etag) {
		w.WriteHeader(http.StatusNotModified)
		return true
	}
	return false
}

// writeJSONBytes answers a JSON document already encoded.
func writeJSONBytes(w http.ResponseWriter, r *http.Request, status int, b []byte) {
	writeBytes(w, r, status, "application/json", b)
}

// writeBytes answers b, of the Content-Type ctype.
func writeBytes(w http.ResponseWriter, r *http.Request, status int, ctype string, b []byte) {
	hd := w.Header()
	hd.Set("Content-Type", ctype)
	hd.Set("Content-Length", strconv.Itoa(len(b)))
	hd.Set("X-Content-Type-Options", "nosniff")
	if r.Method == http.MethodHead {
		w.WriteHeader(status)
		return
	}
	writeHeld(w, r, len(b), func() {
		w.WriteHeader(status)
		_, _ = w.Write(b)
	})
}

// encodeJSON encodes v as the CLI does: indented by two spaces with
// encoding/json's HTML escaping (the tracking commands' writeJSON), or on
// one line without HTML escaping (kv0 lance info|log --json, and the
// API's own answers).
func encodeJSON(v any, indented bool) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if indented {
		enc.SetIndent("", "  ")
	} else {
		enc.SetEscapeHTML(false)
	}
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encoding the answer: %w", err)
	}
	return buf.Bytes(), nil
}

// writeJSONValue encodes v and answers it, or answers the encoding error.
func writeJSONValue(w http.ResponseWriter, r *http.Request, status int, v any, indented bool) {
	b, err := encodeJSON(v, indented)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSONBytes(w, r, status, b)
}

// datasetCache keeps opened versions of datasets by key and version, least
// recently used out first. A version's number does not name its contents
// for ever (a cleanup or purge removes it, a dataset deleted and written
// again has a version of that number of its own), so an entry is used only
// after its manifest was found still stored, byte for byte
// (lance.Dataset.Stored), by the request that uses it, or less than
// Options.VersionTTL ago (checked).
type datasetCache struct {
	mu    sync.Mutex
	max   int
	items map[string]*list.Element // of *dsEntry
	lru   list.List
}

type dsEntry struct {
	key     string
	d       *lance.Dataset
	checked time.Time // when d was last found still stored
}

func newDatasetCache(n int) datasetCache {
	return datasetCache{max: n, items: map[string]*list.Element{}}
}

// get returns the entry of key and when it was last checked.
func (c *datasetCache) get(key string) (*lance.Dataset, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.lru.MoveToFront(el)
		e := el.Value.(*dsEntry)
		return e.d, e.checked
	}
	return nil, time.Time{}
}

// put keeps d under key, checked at the time at, replacing any other
// version kept there (one found replaced).
func (c *datasetCache) put(key string, d *lance.Dataset, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.lru.MoveToFront(el)
		e := el.Value.(*dsEntry)
		if e.d != d {
			e.d, e.checked = d, at
		} else if e.checked.Before(at) {
			e.checked = at
		}
		return
	}
	c.items[key] = c.lru.PushFront(&dsEntry{key: key, d: d, checked: at})
	for c.lru.Len() > c.max {
		el := c.lru.Back()
		c.lru.Remove(el)
		delete(c.items, el.Value.(*dsEntry).key)
	}
}

// touch records that the entry of key, when it still holds d, was found
// stored at the time at.
func (c *datasetCache) touch(key string, d *lance.Dataset, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		if e := el.Value.(*dsEntry); e.d == d && e.checked.Before(at) {
			e.checked = at
		}
	}
}

// drop removes the entry of key when it holds d.
func (c *datasetCache) drop(key string, d *lance.Dataset) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok && el.Value.(*dsEntry).d == d {
		c.lru.Remove(el)
		delete(c.items, key)
	}
}

// versionKey is the datasetCache key of a version of the dataset at key.
func versionKey(key string, version uint64) string {
	return key + "\x00" + strconv.FormatUint(version, 10)
}

// trusted reports whether a version confirmed at the time checked may be
// used without asking the store again (Options.VersionTTL).
func (h *Handler) trusted(checked time.Time) bool {
	return h.opts.VersionTTL > 0 && h.clock().Sub(checked) < h.opts.VersionTTL
}

// openVersion opens one version of the dataset at key: the one opened
// before when its manifest is still the one stored (one ranged read of it,
// no listing), else the stored one (ErrNotFound, from lance, when the
// version was removed).
func (h *Handler) openVersion(ctx context.Context, key string, version uint64) (*lance.Dataset, error) {
	ck := versionKey(key, version)
	if d, checked := h.datasets.get(ck); d != nil {
		if h.trusted(checked) {
			noteRead(ctx, d)
			return d, nil
		}
		now := h.clock()
		ok, err := d.Stored(ctx)
		if err != nil {
			return nil, err
		}
		if ok {
			h.datasets.touch(ck, d, now)
			noteRead(ctx, d)
			return d, nil
		}
		h.forget(d)
	}
	now := h.clock()
	d, err := lance.Open(ctx, h.st, key, lance.OpenOptions{Version: version, Files: h.files})
	if err != nil {
		return nil, err
	}
	h.datasets.put(ck, d, now)
	noteRead(ctx, d)
	return d, nil
}

// forget drops a version found removed or replaced from the handler's
// caches: the opened version, the followed latest version when it is d,
// and its data files (no version it names is stored any more).
func (h *Handler) forget(d *lance.Dataset) {
	key := d.Root()
	h.datasets.drop(versionKey(key, d.Version()), d)
	h.followMu.Lock()
	if cur, ok := h.follow[key]; ok && cur.d == d {
		delete(h.follow, key)
	}
	h.followMu.Unlock()
	h.files.Forget(d, nil)
}

// listEvery is how long after a listing the latest version of a table is
// confirmed by lance's cheap probes (Dataset.IsLatest: the next version's
// manifest, the hint, and that the version's own manifest is still the one
// stored) instead of another listing, whose cost grows with the versions
// kept. The tracking layer follows its tables the same way.
const listEvery = time.Second

// followed is the newest version of a dataset the handler has seen.
type followed struct {
	d       *lance.Dataset
	listed  time.Time
	checked time.Time // when d was last confirmed the latest version
}

// latest returns the number of the newest version of the dataset at key
// (ErrNotFound, from lance, when there is none).
func (h *Handler) latest(ctx context.Context, key string) (uint64, error) {
	d, err := h.latestDataset(ctx, key)
	if err != nil {
		return 0, err
	}
	return d.Version(), nil
}

// latestDataset returns the newest version of the dataset at key
// (ErrNotFound, from lance, when there is none), confirmed by this request
// (or less than Options.VersionTTL ago): its number is the newest, and its
// manifest is the one stored under that number, so a dataset deleted and
// written again is never answered from the old one's version.
func (h *Handler) latestDataset(ctx context.Context, key string) (*lance.Dataset, error) {
	h.followMu.Lock()
	prev := h.follow[key]
	h.followMu.Unlock()
	now := h.clock()
	if prev.d != nil && h.opts.VersionTTL > 0 && now.Sub(prev.checked) < h.opts.VersionTTL {
		// Confirmed moments ago (Options.VersionTTL): the request's other
		// reads take the same version (lance's scope of the request).
		lance.NoteLatest(ctx, prev.d)
		noteRead(ctx, prev.d)
		return prev.d, nil
	}
	if prev.d != nil && now.Sub(prev.listed) < listEvery {
		same, err := prev.d.IsLatest(ctx)
		if err != nil {
			return nil, err
		}
		if same && !lance.Speculative(ctx) { // else confirmed with the request (Handler.confirmFollowed)
			h.followMu.Lock()
			if cur, ok := h.follow[key]; ok && cur.d == prev.d {
				cur.checked = now
				h.follow[key] = cur
			}
			h.followMu.Unlock()
		}
		if same {
			noteRead(ctx, prev.d)
			return prev.d, nil
		}
	}
	listed := now
	d, err := h.findLatest(ctx, key, prev.d)
	if err != nil {
		h.followMu.Lock()
		delete(h.follow, key)
		h.followMu.Unlock()
		return nil, err
	}
	lance.NoteLatest(ctx, d)
	h.followMu.Lock()
	// Newer than the version followed, or what this request started from
	// was replaced (a dataset written again may be at a lower version).
	if cur := h.follow[key]; cur.d == nil || cur.d.Version() <= d.Version() || cur.d == prev.d {
		if len(h.follow) >= 1024 {
			clear(h.follow) // bounded: followers are cheap to rebuild
		}
		f := followed{d: d, listed: listed, checked: listed}
		if lance.Speculative(ctx) {
			f.checked = time.Time{} // not confirmed yet: see Handler.confirmFollowed
		}
		h.follow[key] = f
	}
	h.followMu.Unlock()
	noteRead(ctx, d)
	return d, nil
}

// confirmFollowed marks the tables' followed versions that are v's (the
// tables v names: a version 0 was not read) as confirmed at the time at
// (Options.VersionTTL counts from it), once the request's speculative
// scope confirmed them.
func (h *Handler) confirmFollowed(v Versions, at time.Time) {
	h.followMu.Lock()
	defer h.followMu.Unlock()
	for _, t := range tablesOf(allTables, &v) {
		key := store.Join(h.root, t.name)
		if cur, ok := h.follow[key]; ok && *t.dst != 0 && cur.d.Version() == *t.dst && cur.checked.Before(at) {
			cur.checked = at
			h.follow[key] = cur
		}
	}
}

// findLatest opens the latest version of the dataset at key. The first
// time (prev nil) it opens it with the manifest read that finds it (on a
// store that cannot list, the hint and probes read the manifest anyway);
// later it finds the number (one listing) and opens that version from the
// cache of opened versions when it is still stored there. A version a
// cleanup removes between the listing and the read makes it list again.
func (h *Handler) findLatest(ctx context.Context, key string, prev *lance.Dataset) (*lance.Dataset, error) {
	if prev == nil {
		now := h.clock()
		d, err := lance.Open(ctx, h.st, key, lance.OpenOptions{Files: h.files})
		if err != nil {
			return nil, err
		}
		ck := versionKey(key, d.Version())
		if c, _ := h.datasets.get(ck); c != nil && c.SameVersion(d) {
			h.datasets.touch(ck, c, now)
			return c, nil // the one already opened, with its files
		}
		h.datasets.put(ck, d, now)
		return d, nil
	}
	for attempt := 0; ; attempt++ {
		v, err := lance.LatestVersion(ctx, h.st, key)
		if err != nil {
			return nil, err
		}
		if v == 0 {
			return nil, lance.ErrNotFound
		}
		d, err := h.openVersion(ctx, key, v)
		if errors.Is(err, lance.ErrNotFound) && attempt < 2 {
			continue // removed since the listing: a newer version exists
		}
		return d, err
	}
}

// DefaultAnswerCache is the default of Options.AnswerCache: 16 MiB, some
// 160 answers of a 1,000-point series with bands.
const DefaultAnswerCache = 16 << 20

// answerCache keeps encoded answers of points and statistics by their ETag,
// least recently used out first, within a byte budget. The ETag names the
// route, the query and the versions of the tables the answer follows from
// (runs, series and metrics: dataTables), and an answer is kept only when
// the versions read after building it are those read before (see
// Handler.answer), so an entry is the exact answer of its versions: a new
// version of any of those tables makes a new key, never a stale answer.
type answerCache struct {
	mu    sync.Mutex
	max   int64 // 0: keep nothing
	size  int64
	items map[string]*list.Element // of *answerEntry
	lru   list.List
}

type answerEntry struct {
	key  string
	body []byte
}

func newAnswerCache(max int64) *answerCache {
	return &answerCache{max: max, items: map[string]*list.Element{}}
}

func (c *answerCache) get(key string) []byte {
	if c.max == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.lru.MoveToFront(el)
		return el.Value.(*answerEntry).body
	}
	return nil
}

// put keeps body (which must not change afterwards) under key. An answer
// larger than an eighth of the budget is not kept: it would push out many
// others and costs its decoding more than its lookup saves.
func (c *answerCache) put(key string, body []byte) {
	n := int64(len(body) + len(key))
	if c.max == 0 || n > c.max/8 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[key]; ok {
		return
	}
	c.items[key] = c.lru.PushFront(&answerEntry{key: key, body: body})
	c.size += n
	for c.size > c.max {
		el := c.lru.Back()
		e := el.Value.(*answerEntry)
		c.lru.Remove(el)
		delete(c.items, e.key)
		c.size -= int64(len(e.body) + len(e.key))
	}
}

// len is the number of answers kept (for tests).
func (c *answerCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}
