//go:build js && wasm

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall/js"
	"time"
	"unsafe"

	"github.com/kv0/kv0/core/inspect"
	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/lancefile"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/tracking"
	"github.com/kv0/kv0/httpstore"
)

// Error codes of rejected Promises (the `code` of the JavaScript Error).
const (
	codeNotFound    = "NotFound"
	codeForbidden   = "Forbidden"
	codeNetwork     = "Network"
	codeCorrupt     = "Corrupt"
	codeUnsupported = "Unsupported"
	codeInvalid     = "Invalid"
	codeClosed      = "Closed"
)

// callError is an error with the code it rejects with.
type callError struct {
	code string
	err  error
}

func (e *callError) Error() string { return e.err.Error() }
func (e *callError) Unwrap() error { return e.err }

func invalid(format string, args ...any) error {
	return &callError{code: codeInvalid, err: fmt.Errorf(format, args...)}
}

// code classifies err. Order matters: a transport failure may wrap a
// not-found sentinel of a higher layer.
func code(err error) string {
	var ce *callError
	switch {
	case errors.As(err, &ce):
		return ce.code
	case errors.Is(err, httpstore.ErrForbidden):
		return codeForbidden
	case errors.Is(err, httpstore.ErrNetwork), errors.Is(err, httpstore.ErrTruncated),
		errors.Is(err, httpstore.ErrServer), errors.Is(err, context.DeadlineExceeded):
		return codeNetwork
	case errors.Is(err, tracking.ErrClosed):
		return codeClosed
	case errors.Is(err, inspect.ErrInvalid), errors.Is(err, tracking.ErrInvalid), errors.Is(err, store.ErrInvalidKey):
		return codeInvalid
	case errors.Is(err, lancefile.ErrUnsupportedVersion), errors.Is(err, lancefile.ErrUnsupportedEncoding),
		errors.Is(err, lancefile.ErrUnsupportedType), errors.Is(err, lance.ErrUnsupportedFeature),
		errors.Is(err, store.ErrNotSupported):
		return codeUnsupported
	case errors.Is(err, store.ErrNotFound), errors.Is(err, lance.ErrNotFound), errors.Is(err, tracking.ErrNotFound):
		return codeNotFound
	}
	return codeCorrupt
}

// jsError builds the Error a Promise rejects with; its message starts with
// the location (a URL without its query string).
func jsError(where string, err error) js.Value {
	msg := err.Error()
	if where != "" && !strings.HasPrefix(msg, where) {
		msg = where + ": " + msg
	}
	e := js.Global().Get("Error").New(msg)
	e.Set("code", code(err))
	e.Set("name", "Kv0Error")
	return e
}

// promise runs fn on a goroutine and returns a Promise of its result. A
// panic inside fn rejects the Promise (code Corrupt: the input broke an
// assumption of the decoder) and leaves the module serving.
func promise(where func() string, fn func(ctx context.Context) (any, error)) js.Value {
	var handler js.Func
	handler = js.FuncOf(func(this js.Value, args []js.Value) any {
		resolve, reject := args[0], args[1]
		go func() {
			defer func() {
				if p := recover(); p != nil {
					err := &callError{code: codeCorrupt, err: fmt.Errorf("internal error (please report): %v\n%s", p, debug.Stack())}
					reject.Invoke(jsError(where(), err))
				}
			}()
			v, err := fn(context.Background())
			if err != nil {
				reject.Invoke(jsError(where(), err))
				return
			}
			resolve.Invoke(v)
		}()
		return nil
	})
	p := js.Global().Get("Promise").New(handler)
	handler.Release()
	return p
}

// yielder hands the JavaScript event loop a turn when the goroutine of a
// long call (a scan) has run for a while: Go's js/wasm scheduler returns to
// JavaScript only when every goroutine waits, so a sleep lets the page
// paint and handle input between batches.
type yielder struct{ last time.Time }

// yieldEvery is the longest stretch a call runs without yielding.
const yieldEvery = 20 * time.Millisecond

func (y *yielder) maybe() {
	if y.last.IsZero() {
		y.last = time.Now()
		return
	}
	if time.Since(y.last) >= yieldEvery {
		time.Sleep(time.Millisecond)
		y.last = time.Now()
	}
}

// location is where a dataset or repository lives: a static URL, or a key
// under the prefix a sign server signs for.
type location struct {
	st   store.Store
	root string
	name string // for messages: the URL, or the key and the signer's URL
	path string // `info`'s path: the URL, or the key
}

// testPanic, from the environment kv0.mjs's load({ env }) passes, makes
// parseLocation panic for locations containing it: the test suites check
// with it that a panic rejects only its own call.
var testPanic = os.Getenv("KV0_WASM_TEST_PANIC")

// parseLocation reads a location as kv0.mjs passes it: an http(s) URL, or
// the JSON of { signer: { url, token }, key } (kv0.mjs reads the caller's
// object, so no JavaScript getter runs inside Go).
func parseLocation(v js.Value) (*location, error) {
	if v.Type() != js.TypeString {
		return nil, invalid("location must be an http(s) URL or { signer: { url, token }, key }")
	}
	s := v.String()
	if testPanic != "" && strings.Contains(s, testPanic) {
		panic("test panic (KV0_WASM_TEST_PANIC)")
	}
	if !strings.HasPrefix(s, "{") {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, invalid("location %q is not an http(s) URL nor { signer, key }", redact(s))
		}
		st, err := httpstore.OpenStatic(s, httpstore.Options{Transport: transport()})
		if err != nil {
			return nil, invalid("%v", err)
		}
		return &location{st: st, name: redact(s), path: redact(s)}, nil
	}
	var l struct {
		Signer *struct {
			URL   *string `json:"url"`
			Token *string `json:"token"`
		} `json:"signer"`
		Key *string `json:"key"`
	}
	if err := json.Unmarshal([]byte(s), &l); err != nil || l.Signer == nil || l.Signer.URL == nil || l.Signer.Token == nil {
		return nil, invalid("location: want { signer: { url: string, token: string }, key: string }")
	}
	k := ""
	if l.Key != nil {
		k = strings.Trim(*l.Key, "/")
	}
	if k != "" {
		if err := store.ValidateKey(k); err != nil {
			return nil, invalid("location: key %q: %v", k, err)
		}
	}
	signerURL := *l.Signer.URL
	if u, err := url.Parse(signerURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, invalid("location: signer url %q is not an http(s) URL", redact(signerURL))
	}
	st, err := httpstore.OpenSigned(&httpstore.ServerSigner{URL: signerURL, Token: *l.Signer.Token, Transport: transport()}, httpstore.Options{Transport: transport()})
	if err != nil {
		return nil, invalid("%v", err)
	}
	name := k
	if name == "" {
		name = "(signer root)"
	}
	return &location{st: st, root: k, name: name + " via " + redact(signerURL), path: k}, nil
}

func redact(s string) string {
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		return s[:i]
	}
	return s
}

// options decodes a JSON options argument (JSON.stringify'd by kv0.mjs)
// into dst, refusing unknown fields so that a misspelt option is an error.
func options(args []js.Value, i int, dst any) error {
	if len(args) <= i || args[i].IsUndefined() || args[i].IsNull() {
		return nil
	}
	if args[i].Type() != js.TypeString {
		return invalid("options must be an object")
	}
	dec := json.NewDecoder(strings.NewReader(args[i].String()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return invalid("options: %v", err)
	}
	return nil
}

// bytesToJS copies b into a new Uint8Array in one copy. With kv0.mjs's
// slice, the copy is ArrayBuffer.prototype.slice over the module's memory,
// which skips the zeroing of a new Uint8Array that CopyBytesToJS fills.
func bytesToJS(b []byte) js.Value {
	if len(b) > 0 && glue.slice.Type() == js.TypeFunction {
		u := glue.slice.Invoke(uintptr(unsafe.Pointer(unsafe.SliceData(b))), len(b))
		runtime.KeepAlive(b)
		return u
	}
	u := js.Global().Get("Uint8Array").New(len(b))
	js.CopyBytesToJS(u, b)
	return u
}
