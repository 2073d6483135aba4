//go:build js && wasm

package httpstore

// The fetch transport against a stand-in for the JavaScript global fetch
// whose answers the test gives by hand, so a request can be held in flight.
// Run by `make test-wasm` (GOOS=js GOARCH=wasm go test -run TestFetchTransport,
// under Node); the package's other tests need a network listener.

import (
	"context"
	"errors"
	"io"
	"strings"
	"syscall/js"
	"testing"
	"time"
)

// fakeFetch replaces globalThis.fetch for the test and returns the list
// its calls are pushed onto: { url, init, resolve, reject } each, rejected
// with an AbortError when the request's signal aborts.
func fakeFetch(t *testing.T) js.Value {
	t.Helper()
	global := js.Global()
	saved := global.Get("fetch")
	t.Cleanup(func() { global.Set("fetch", saved) })
	return global.Call("eval", `(() => {
		const calls = [];
		globalThis.fetch = (url, init) => new Promise((resolve, reject) => {
			calls.push({ url, init, resolve, reject });
			init?.signal?.addEventListener('abort', () => reject(new DOMException('the request was aborted', 'AbortError')));
		});
		return calls;
	})()`)
}

// nthCall waits until the stand-in has had n+1 calls and returns call n.
func nthCall(t *testing.T, calls js.Value, n int) js.Value {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for calls.Length() <= n {
		if time.Now().After(deadline) {
			t.Fatalf("fetch was called %d times, want %d", calls.Length(), n+1)
		}
		time.Sleep(time.Millisecond) // lets the event loop run the Go side's call
	}
	return calls.Index(n)
}

// answer settles a call with a Response of status, headers and body.
func answer(c js.Value, status int, headers map[string]any, body string) {
	opts := js.ValueOf(map[string]any{"status": status, "headers": headers})
	c.Call("resolve", js.Global().Get("Response").New(body, opts))
}

type result struct {
	r   *Response
	err error
}

func get(ctx context.Context, url string, header map[string][]string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		r, err := Fetch().Get(ctx, url, header)
		ch <- result{r, err}
	}()
	return ch
}

func readAll(t *testing.T, r *Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	return string(b)
}

// cacheOf is the cache mode a call asked for ("" when none).
func cacheOf(c js.Value) string {
	if v := c.Get("init").Get("cache"); v.Type() == js.TypeString {
		return v.String()
	}
	return ""
}

func TestFetchTransportRequest(t *testing.T) {
	calls := fakeFetch(t)
	ch := get(context.Background(), "https://data.example/t.lance/_versions/1.manifest", map[string][]string{"Range": {"bytes=0-4"}})
	c := nthCall(t, calls, 0)
	init := c.Get("init")
	if got := init.Get("method").String(); got != "GET" {
		t.Errorf("method %q, want GET", got)
	}
	if got := init.Get("headers").Get("Range").String(); got != "bytes=0-4" {
		t.Errorf("Range header %q, want bytes=0-4", got)
	}
	if got := cacheOf(c); got != "" {
		t.Errorf("a request on its own asked for cache %q, want the default", got)
	}
	answer(c, 206, map[string]any{"Content-Range": "bytes 0-4/10", "Content-Length": "5"}, "hello")
	res := <-ch
	if res.err != nil {
		t.Fatal(res.err)
	}
	if res.r.Status != 206 || res.r.ContentLength != 5 || res.r.Header["content-range"] != "bytes 0-4/10" {
		t.Errorf("status %d, length %d, headers %v", res.r.Status, res.r.ContentLength, res.r.Header)
	}
	if got := readAll(t, res.r); got != "hello" {
		t.Errorf("body %q, want hello", got)
	}
}

func TestFetchTransportInFlight(t *testing.T) {
	calls := fakeFetch(t)
	const a, b = "https://data.example/t.lance/data/a.lance", "https://data.example/t.lance/data/b.lance"
	ctx := context.Background()
	first := get(ctx, a, map[string][]string{"Range": {"bytes=0-9"}})
	c0 := nthCall(t, calls, 0)
	second := get(ctx, a+"#x", map[string][]string{"Range": {"bytes=10-19"}})
	c1 := nthCall(t, calls, 1)
	other := get(ctx, b, map[string][]string{"Range": {"bytes=0-9"}})
	c2 := nthCall(t, calls, 2)
	if got := cacheOf(c0); got != "" {
		t.Errorf("the first request of a URL asked for cache %q, want the default", got)
	}
	if got := cacheOf(c1); got != "no-store" {
		t.Errorf("a second request of a URL in flight asked for cache %q, want no-store", got)
	}
	if got := cacheOf(c2); got != "" {
		t.Errorf("a request of another URL asked for cache %q, want the default", got)
	}

	// Each stays counted until its body has arrived or is closed.
	answer(c0, 200, nil, "0123456789")
	r0 := <-first
	answer(c1, 200, nil, "abcdefghij")
	r1 := <-second
	third := get(ctx, a, nil)
	if got := cacheOf(nthCall(t, calls, 3)); got != "no-store" {
		t.Errorf("a request sent while two answers of its URL were unread asked for cache %q, want no-store", got)
	}
	readAll(t, r0.r)
	r1.r.Body.Close() // closed unread
	answer(calls.Index(3), 404, nil, "")
	r3 := <-third
	readAll(t, r3.r)
	answer(c2, 200, nil, "x")
	readAll(t, (<-other).r)
	fourth := get(ctx, a, nil)
	if got := cacheOf(nthCall(t, calls, 4)); got != "" {
		t.Errorf("a request sent once the others were done asked for cache %q, want the default", got)
	}

	// A request that fails ends its count too.
	calls.Index(4).Call("reject", js.Global().Get("TypeError").New("Failed to fetch"))
	if r := <-fourth; r.err == nil || !strings.Contains(r.err.Error(), "TypeError: Failed to fetch") {
		t.Fatalf("a rejected fetch gave %v, want the TypeError", r.err)
	}
	fifth := get(ctx, a, nil)
	if got := cacheOf(nthCall(t, calls, 5)); got != "" {
		t.Errorf("a request after a failed one asked for cache %q, want the default", got)
	}
	answer(calls.Index(5), 200, nil, "")
	readAll(t, (<-fifth).r)
	if n := len(inFlight.urls); n != 0 {
		t.Errorf("%d requests still counted in flight after every request ended: %v", n, inFlight.urls)
	}
}

func TestFetchTransportCancel(t *testing.T) {
	calls := fakeFetch(t)
	ctx, cancel := context.WithCancel(context.Background())
	ch := get(ctx, "https://data.example/t.lance/_versions/2.manifest", nil)
	nthCall(t, calls, 0)
	cancel()
	select {
	case r := <-ch:
		if !errors.Is(r.err, context.Canceled) {
			t.Fatalf("a canceled request gave %v, want context.Canceled", r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a canceled request did not return")
	}
	if n := len(inFlight.urls); n != 0 {
		t.Errorf("a canceled request is still counted in flight: %v", inFlight.urls)
	}
}
