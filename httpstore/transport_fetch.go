//go:build js

package httpstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall/js"
)

// Fetch returns the Transport that calls the JavaScript global fetch (the
// default on js/wasm). Requests carry only the headers asked for, so a
// plain ranged GET stays a CORS "simple" request with no preflight.
func Fetch() Transport { return fetchTransport{} }

func defaultTransport() Transport { return fetchTransport{} }

type fetchTransport struct{}

// inFlight counts the transport's requests by URL (without its fragment)
// from the call of fetch until the body is read or closed. A browser's HTTP
// cache serves one request of a URL at a time (Chromium's cache lock): a
// second range request of a file would wait until the first had its whole
// answer, so reads sent together would go one after another. A request
// whose URL already has one in flight therefore asks fetch to bypass the
// cache (cache: "no-store", which adds only headers the browser sets itself
// and so no CORS preflight); a request on its own uses the cache as usual.
// kv0.mjs's fetchRange, which the wasm module uses in its place, does the
// same. The list holds one entry per request (a few at most: a store bounds
// its requests in flight), so scanning it is all a lookup needs.
var inFlight struct {
	sync.Mutex
	urls []string
}

// enter counts a request of key and reports whether another was already in
// flight; leave undoes it.
func enter(key string) (busy bool) {
	inFlight.Lock()
	defer inFlight.Unlock()
	busy = slices.Contains(inFlight.urls, key)
	inFlight.urls = append(inFlight.urls, key)
	return busy
}

func leave(key string) {
	inFlight.Lock()
	defer inFlight.Unlock()
	if i := slices.Index(inFlight.urls, key); i >= 0 {
		inFlight.urls = slices.Delete(inFlight.urls, i, i+1)
	}
}

func (fetchTransport) Get(ctx context.Context, url string, header map[string][]string) (*Response, error) {
	global := js.Global()
	fetch := global.Get("fetch")
	if fetch.Type() != js.TypeFunction {
		return nil, errors.New("this JavaScript runtime has no fetch function")
	}
	ac := global.Get("AbortController").New()
	init := global.Get("Object").New()
	h := global.Get("Object").New()
	for k, v := range header {
		if len(v) > 0 {
			h.Set(k, v[0])
		}
	}
	init.Set("method", "GET")
	init.Set("headers", h)
	init.Set("signal", ac.Get("signal"))
	key, _, _ := strings.Cut(url, "#")
	if enter(key) {
		init.Set("cache", "no-store")
	}
	stop := context.AfterFunc(ctx, func() { ac.Call("abort") })
	resp, err := await(fetch.Invoke(url, init))
	if err != nil {
		stop()
		leave(key)
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	// The headers as one array of [name, value] pairs (names are lower
	// case), read by calls into JavaScript: no callback into Go per header.
	hdr := map[string]string{}
	pairs := global.Get("Array").Call("from", resp.Get("headers"))
	for i, n := 0, pairs.Length(); i < n; i++ {
		p := pairs.Index(i)
		hdr[p.Index(0).String()] = p.Index(1).String()
	}
	n := int64(-1)
	if v, ok := hdr["content-length"]; ok {
		if x, err := strconv.ParseInt(v, 10, 64); err == nil && x >= 0 {
			n = x
		}
	}
	return &Response{
		Status:        resp.Get("status").Int(),
		Header:        hdr,
		ContentLength: n,
		Body:          &fetchBody{ctx: ctx, resp: resp, ac: ac, stop: stop, key: key},
	}, nil
}

// fetchBody reads a fetch Response's body as one ArrayBuffer, then copies
// each Read straight from it into the caller's slice (one copy in all).
type fetchBody struct {
	ctx    context.Context
	resp   js.Value
	ac     js.Value
	stop   func() bool
	key    string // the request's entry in inFlight, until left
	left   bool
	bytes  js.Value // Uint8Array over the body, once read
	n, off int
	err    error
	closed bool
}

func (b *fetchBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.bytes.IsUndefined() {
		buf, err := await(b.resp.Call("arrayBuffer"))
		b.leave()
		if err != nil {
			if cerr := b.ctx.Err(); cerr != nil {
				b.err = cerr
			} else {
				// The connection broke or ended before Content-Length.
				b.err = fmt.Errorf("%w: %v", io.ErrUnexpectedEOF, err)
			}
			return 0, b.err
		}
		b.bytes = js.Global().Get("Uint8Array").New(buf)
		b.n = b.bytes.Get("length").Int()
	}
	if b.off >= b.n {
		return 0, io.EOF
	}
	m := min(len(p), b.n-b.off)
	js.CopyBytesToGo(p[:m], b.bytes.Call("subarray", b.off, b.off+m))
	b.off += m
	return m, nil
}

// leave ends the request's count in flight, once: when its body has
// arrived (or failed) or, unread, is closed.
func (b *fetchBody) leave() {
	if !b.left {
		b.left = true
		leave(b.key)
	}
}

func (b *fetchBody) Close() error {
	if !b.closed {
		b.closed = true
		b.leave()
		b.stop()
		if b.bytes.IsUndefined() {
			b.ac.Call("abort") // the body is not wanted: stop its transfer
		}
		b.bytes = js.Undefined()
	}
	return nil
}

// await waits for a JavaScript promise. The callbacks only hand the result
// over, so they never block the event loop.
func await(p js.Value) (js.Value, error) {
	type result struct {
		v   js.Value
		err error
	}
	ch := make(chan result, 1)
	then := js.FuncOf(func(this js.Value, args []js.Value) any {
		ch <- result{v: args[0]}
		return nil
	})
	catch := js.FuncOf(func(this js.Value, args []js.Value) any {
		ch <- result{err: jsError(args[0])}
		return nil
	})
	p.Call("then", then, catch)
	r := <-ch
	then.Release()
	catch.Release()
	return r.v, r.err
}

// jsError turns a rejection value into a Go error with its name and
// message (a fetch TypeError's cause, when present, too).
func jsError(v js.Value) error {
	if v.Type() != js.TypeObject {
		return errors.New(js.Global().Call("String", v).String())
	}
	msg := v.Get("message").String()
	if name := v.Get("name"); name.Type() == js.TypeString {
		msg = name.String() + ": " + msg
	}
	if c := v.Get("cause"); c.Type() == js.TypeObject {
		if m := c.Get("message"); m.Type() == js.TypeString && m.String() != "" {
			msg += " (" + m.String() + ")"
		}
	}
	return errors.New(msg)
}
