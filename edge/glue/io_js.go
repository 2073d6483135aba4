//go:build js && wasm

package glue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"syscall/js"

	"github.com/kv0/kv0/httpstore"
)

// Do runs op in ctx's request (or, when that one has finished, in another
// live request of the isolate) without taking a connection slot.
func Do(ctx context.Context, drop func(js.Value), op string, args ...any) (js.Value, error) {
	for try := 0; ; try++ {
		g := GateOf(ctx)
		if g == nil {
			return js.Undefined(), fmt.Errorf("%s: %w", op, ErrNoRequest)
		}
		v, err := g.Call(ctx, drop, op, args...)
		if errors.Is(err, ErrNoRequest) && try == 0 {
			continue // the gate closed between the choice and the call
		}
		return v, err
	}
}

// Connect is Do for an operation that opens a connection: it waits for one
// of the request's connection slots first. The caller calls the returned
// release once the connection is done (for one with a body, when the body
// is read or closed: see NewBody).
func Connect(ctx context.Context, op string, args ...any) (v js.Value, g *Gate, release func(), err error) {
	gate := GateOf(ctx)
	if gate == nil {
		return js.Undefined(), nil, nil, fmt.Errorf("%s: %w", op, ErrNoRequest)
	}
	if err := gate.Limit.Acquire(ctx); err != nil {
		return js.Undefined(), nil, nil, err
	}
	var once sync.Once
	free := func() { once.Do(gate.Limit.Release) }
	// A late answer's body must still be cancelled, or its connection
	// stays open until the request ends.
	drop := func(v js.Value) {
		if r := readerOf(v); r.Truthy() {
			_, _ = gate.Call(context.Background(), nil, "cancel", r)
		}
		free()
	}
	v, err = gate.Call(ctx, drop, op, args...)
	if err != nil {
		if ctx.Err() == nil {
			free()
		}
		return js.Undefined(), nil, nil, err
	}
	return v, gate, free, nil
}

func readerOf(v js.Value) js.Value {
	if v.Type() != js.TypeObject {
		return js.Undefined()
	}
	return v.Get("reader")
}

// Bytes copies a body read whole in JavaScript (an operation's "bytes")
// into Go, or reports that the answer carries a stream instead.
func Bytes(v js.Value) ([]byte, bool) {
	b := v.Get("bytes")
	if !b.Truthy() {
		return nil, false
	}
	p := make([]byte, b.Get("byteLength").Int())
	js.CopyBytesToGo(p, b)
	return p, true
}

// Body reads a JavaScript ReadableStream's reader through its gate, one
// chunk at a time, each copied once, straight into the caller's buffer.
// It frees its connection slot at the end of the stream, on an error, or
// on Close.
type Body struct {
	ctx     context.Context
	g       *Gate
	reader  js.Value
	release func()
	want    int64 // announced length, -1 when unknown
	got     int64
	chunk   js.Value // rest of the current chunk
	off, n  int
	err     error
}

// NewBody returns the body read from reader (a ReadableStreamDefaultReader,
// or null for none) in gate g; want is the announced length (-1: unknown),
// checked at the end so a body cut short is an error, never a clean EOF.
func NewBody(ctx context.Context, g *Gate, reader js.Value, want int64, release func()) *Body {
	b := &Body{ctx: ctx, g: g, reader: reader, release: release, want: want}
	if !reader.Truthy() {
		b.err = io.EOF
		if want > 0 {
			b.err = io.ErrUnexpectedEOF
		}
		release()
	}
	return b
}

// Read implements io.Reader.
func (b *Body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	for b.off >= b.n {
		v, err := b.g.Call(b.ctx, nil, "read", b.reader)
		if err != nil {
			b.fail(fmt.Errorf("%w: %v", io.ErrUnexpectedEOF, err))
			if cerr := b.ctx.Err(); cerr != nil {
				b.err = cerr
			}
			return 0, b.err
		}
		if v.IsNull() || v.IsUndefined() {
			if b.want >= 0 && b.got < b.want {
				b.fail(fmt.Errorf("%w: %d of %d bytes", io.ErrUnexpectedEOF, b.got, b.want))
			} else {
				b.fail(io.EOF)
			}
			return 0, b.err
		}
		b.chunk, b.off, b.n = v, 0, v.Get("byteLength").Int()
	}
	m := min(len(p), b.n-b.off)
	if b.off == 0 && m == b.n {
		js.CopyBytesToGo(p[:m], b.chunk)
	} else {
		js.CopyBytesToGo(p[:m], b.chunk.Call("subarray", b.off, b.off+m))
	}
	b.off += m
	b.got += int64(m)
	if b.off >= b.n {
		b.chunk = js.Undefined()
	}
	return m, nil
}

func (b *Body) fail(err error) {
	b.err = err
	b.chunk = js.Undefined()
	b.release()
}

// Close cancels the rest of the stream.
func (b *Body) Close() error {
	if b.err == nil {
		b.err = errors.New("edge: body closed")
		b.chunk = js.Undefined()
		_, _ = b.g.Call(context.WithoutCancel(b.ctx), nil, "cancel", b.reader)
		b.release()
	}
	return nil
}

// Transport is the httpstore.Transport of the worker: the global fetch,
// called in the request's own context through its gate, under its
// connection bound.
type Transport struct{}

var _ httpstore.Transport = Transport{}

// Get implements httpstore.Transport.
func (Transport) Get(ctx context.Context, url string, header map[string][]string) (*httpstore.Response, error) {
	h := js.Global().Get("Object").New()
	for k, v := range header {
		if len(v) > 0 {
			h.Set(k, v[0])
		}
	}
	v, g, release, err := Connect(ctx, "fetch", url, h)
	if err != nil {
		return nil, err
	}
	flat := v.Get("headers")
	hdr := make(map[string]string, flat.Length()/2)
	for i := 0; i+1 < flat.Length(); i += 2 {
		hdr[flat.Index(i).String()] = flat.Index(i + 1).String()
	}
	n := int64(-1)
	if s, ok := hdr["content-length"]; ok {
		if x, err := strconv.ParseInt(s, 10, 64); err == nil && x >= 0 {
			n = x
		}
	}
	want := n
	if hdr["content-encoding"] != "" {
		want = -1 // fetch decodes the body: the length is the encoded one
	}
	resp := &httpstore.Response{Status: v.Get("status").Int(), Header: hdr, ContentLength: n}
	if b, ok := Bytes(v); ok {
		release()
		if want >= 0 && int64(len(b)) != want {
			return nil, fmt.Errorf("fetch %s: %d of %d bytes", url, len(b), want)
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		return resp, nil
	}
	resp.Body = NewBody(ctx, g, v.Get("reader"), want, release)
	return resp, nil
}
