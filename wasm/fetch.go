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
// the status, the headers and, for a 206, the whole body are there; and
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
// string instead of a value per header.
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
	// [status, "name\nvalue\n" per header, body Uint8Array | null,
	// Response | null (the body not read yet), body error | null]
	r, err := await(t.fetch.Invoke(url, h, ac.Get("signal")))
	if err != nil {
		stop()
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
	b := &glueBody{ctx: ctx, ac: ac, stop: stop}
	switch {
	case r.Index(2).Type() == js.TypeObject:
		b.bytes = r.Index(2)
		b.n = b.bytes.Get("length").Int()
	case r.Index(4).Type() != js.TypeNull && r.Index(4).Type() != js.TypeUndefined:
		b.err = b.bodyError(jsErr(r.Index(4)))
	default:
		b.resp = r.Index(3)
	}
	return &httpstore.Response{Status: r.Index(0).Int(), Header: hdr, ContentLength: n, Body: b}, nil
}

// glueBody is a response body: the bytes fetchRange read, or the Response
// whose body is read as one ArrayBuffer at the first Read. Each Read copies
// straight from the JavaScript bytes into the caller's slice.
type glueBody struct {
	ctx    context.Context
	ac     js.Value
	stop   func() bool
	resp   js.Value // set while the body is not read
	bytes  js.Value // Uint8Array over the body, once read
	n, off int
	err    error
	closed bool
}

func (b *glueBody) bodyError(err error) error {
	if cerr := b.ctx.Err(); cerr != nil {
		return cerr
	}
	// The connection broke or ended before Content-Length.
	return fmt.Errorf("%w: %v", io.ErrUnexpectedEOF, err)
}

func (b *glueBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.closed {
		return 0, errors.New("read of a closed body")
	}
	if b.bytes.IsUndefined() {
		buf, err := await(b.resp.Call("arrayBuffer"))
		if err != nil {
			b.err = b.bodyError(err)
			return 0, b.err
		}
		b.resp = js.Undefined()
		b.bytes = js.Global().Get("Uint8Array").New(buf)
		b.n = b.bytes.Get("length").Int()
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
	if !b.closed {
		b.closed = true
		b.stop()
		if !b.resp.IsUndefined() {
			b.ac.Call("abort") // the body is not wanted: stop its transfer
		}
		b.resp, b.bytes = js.Undefined(), js.Undefined()
	}
	return nil
}

// await waits for a JavaScript promise; the callbacks only hand the result
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
		ch <- result{err: jsErr(args[0])}
		return nil
	})
	p.Call("then", then, catch)
	r := <-ch
	then.Release()
	catch.Release()
	return r.v, r.err
}

// jsErr turns a rejection value into a Go error with its name and message
// (a fetch TypeError's cause too, when present).
func jsErr(v js.Value) error {
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
