//go:build js && wasm

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall/js"

	"github.com/kv0/kv0/httpstore"
)

// glue holds the functions kv0.mjs hands the program at start-up (see
// kv0.mjs, start): fetchRange, one Promise per request that settles once
// the status, the headers and the whole body are there; and
// slice, which copies a range of the module's memory into a new
// Uint8Array. Both are undefined when the program was started by another
// loader, which leaves httpstore's own fetch transport and bytesToJS.
var glue struct {
	fetchRange js.Value
	slice      js.Value
}

// setGlue reads the helpers from the ready callback kv0.mjs passed.
func setGlue(ready js.Value) {
	if ready.Type() != js.TypeFunction {
		return
	}
	h := ready.Get("kv0Glue")
	if h.Type() != js.TypeObject {
		return
	}
	if f := h.Get("fetchRange"); f.Type() == js.TypeFunction {
		glue.fetchRange = f
	}
	if f := h.Get("slice"); f.Type() == js.TypeFunction {
		glue.slice = f
	}
}

// transport is the httpstore.Transport of the module's stores: kv0.mjs's
// fetchRange when present, else httpstore's fetch transport. fetchRange
// costs one hand-over from JavaScript to Go per request where httpstore's
// costs two (the headers, then the body), and brings the headers as one
// string instead of a value per header. fetchRange reads every body whole
// before it settles, as httpstore's transport does at the first Read (the
// store reads each body it keeps, and the few it does not, answers such as
// a 404, are small).
func transport() httpstore.Transport {
	if glue.fetchRange.Type() == js.TypeFunction {
		return glueTransport{fetch: glue.fetchRange}
	}
	return httpstore.Fetch()
}

type glueTransport struct{ fetch js.Value }

func (t glueTransport) Get(ctx context.Context, url string, header map[string][]string) (*httpstore.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h := js.Global().Get("Object").New()
	for k, v := range header {
		if len(v) > 0 {
			h.Set(k, v[0])
		}
	}
	ac := js.Global().Get("AbortController").New()
	stop := context.AfterFunc(ctx, func() { ac.Call("abort") })
	// [status (0: no answer), "name\nvalue\n" per header, body Uint8Array
	// | null, the error's text | null]
	r, err := await(t.fetch.Invoke(url, h, ac.Get("signal")))
	stop()
	if err == nil && r.Index(0).Int() == 0 {
		err = errors.New(r.Index(3).String())
	}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	hdr := map[string]string{}
	lines := strings.Split(r.Index(1).String(), "\n")
	for i := 0; i+1 < len(lines); i += 2 {
		hdr[lines[i]] = lines[i+1]
	}
	n := int64(-1)
	if v, ok := hdr["content-length"]; ok {
		if x, err := strconv.ParseInt(v, 10, 64); err == nil && x >= 0 {
			n = x
		}
	}
	b := &glueBody{bytes: r.Index(2)}
	if b.bytes.Type() == js.TypeObject {
		b.n = b.bytes.Get("length").Int()
	} else if cerr := ctx.Err(); cerr != nil {
		b.err = cerr
	} else {
		// The connection broke or ended before Content-Length.
		b.err = fmt.Errorf("%w: %s", io.ErrUnexpectedEOF, r.Index(3).String())
	}
	return &httpstore.Response{Status: r.Index(0).Int(), Header: hdr, ContentLength: n, Body: b}, nil
}

// glueBody is a response body fetchRange read; each Read copies straight
// from the JavaScript bytes into the caller's slice.
type glueBody struct {
	bytes  js.Value // Uint8Array over the body
	n, off int
	err    error
}

func (b *glueBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.off >= b.n {
		return 0, io.EOF
	}
	m := min(len(p), b.n-b.off)
	src := b.bytes
	if b.off > 0 || m < b.n {
		src = b.bytes.Call("subarray", b.off, b.off+m)
	}
	js.CopyBytesToGo(p[:m], src)
	b.off += m
	return m, nil
}

func (b *glueBody) Close() error {
	b.bytes, b.err = js.Undefined(), io.ErrClosedPipe
	return nil
}

// await waits for the Promise of a fetchRange, which settles with an
// array (it catches every failure); anything else is reported as an error.
// The callback only hands the value over, so it never blocks the event
// loop.
func await(p js.Value) (js.Value, error) {
	ch := make(chan js.Value, 1)
	f := js.FuncOf(func(this js.Value, args []js.Value) any {
		ch <- args[0]
		return nil
	})
	p.Call("then", f, f)
	v := <-ch
	f.Release()
	if !js.Global().Get("Array").Call("isArray", v).Bool() {
		return js.Value{}, errors.New(js.Global().Call("String", v).String())
	}
	return v, nil
}
