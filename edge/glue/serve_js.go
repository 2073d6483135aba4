//go:build js && wasm

package glue

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"sync"
	"syscall/js"
)

// chunkSize is how much of an answer is gathered before it is sent: an
// answer that fits is sent whole, with its length; a longer one streams
// in pieces of this size.
const chunkSize = 64 << 10

// Serve hands h to the JavaScript half: it sets binding.handle(method,
// url, headers, gate, respond) and calls binding.ready(). It returns at
// once; the Go program must then stay alive (block in main).
//
// respond(status, headers, kind, body) answers once: headers is a flat
// [name, value, ...] array; kind 0 has no body, 1 a Uint8Array, 2 a source
// {next(cb), cancel()} whose next calls cb(error, chunk) with chunk null at
// the end.
func Serve(binding js.Value, h http.Handler) {
	handle := js.FuncOf(func(this js.Value, args []js.Value) any {
		if len(args) != 5 {
			panic(fmt.Sprintf("edge: handle wants 5 arguments, got %d", len(args)))
		}
		method, rawURL, flat, gate, respond := args[0].String(), args[1].String(), args[2], args[3], args[4]
		hdr := make(http.Header, flat.Length()/2)
		for i := 0; i+1 < flat.Length(); i += 2 {
			hdr.Add(flat.Index(i).String(), flat.Index(i+1).String())
		}
		go serveOne(h, method, rawURL, hdr, newGate(gate), respond)
		return nil
	})
	binding.Set("handle", handle)
	binding.Call("ready")
}

func serveOne(h http.Handler, method, rawURL string, hdr http.Header, g *Gate, respond js.Value) {
	ctx, cancel := context.WithCancel(WithGate(context.Background(), g))
	w := &writer{hdr: http.Header{}, respond: respond, head: method == http.MethodHead, cancel: cancel, gate: g}
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				fmt.Fprintf(os.Stderr, "kv0 edge: panic serving %s %s: %v\n%s", method, rawURL, v, debug.Stack())
			}
			w.abort(fmt.Errorf("the answer broke off: %v", v))
			return
		}
		w.end()
	}()
	u, err := url.Parse(rawURL)
	if err != nil {
		w.status = http.StatusBadRequest
		w.hdr.Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"error":{"code":"Invalid","message":"unparsable request URL"}}` + "\n"))
		return
	}
	r := (&http.Request{
		Method:     method,
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     hdr,
		Host:       u.Host,
		RequestURI: u.RequestURI(),
		RemoteAddr: hdr.Get("Cf-Connecting-Ip"),
	}).WithContext(ctx)
	h.ServeHTTP(w, r)
}

// writer is the http.ResponseWriter of one request (see chunkSize).
type writer struct {
	hdr     http.Header
	status  int
	respond js.Value
	head    bool
	cancel  context.CancelFunc
	gate    *Gate

	buf       []byte
	streaming bool
	chunks    chan []byte // to the stream's next; closed at the end
	failed    chan error  // a broken answer, after the chunks sent
	funcs     []js.Func
	done      sync.Once
}

func (w *writer) Header() http.Header { return w.hdr }

func (w *writer) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *writer) bodyless() bool {
	return w.head || w.status == http.StatusNoContent || w.status == http.StatusNotModified || (w.status >= 100 && w.status < 200)
}

func (w *writer) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	if w.bodyless() {
		return len(p), nil
	}
	n := len(p)
	for len(p) > 0 {
		room := chunkSize - len(w.buf)
		if room == 0 {
			if err := w.send(); err != nil {
				return n - len(p), err
			}
			continue
		}
		m := min(room, len(p))
		w.buf = append(w.buf, p[:m]...)
		p = p[m:]
	}
	return n, nil
}

// Flush sends what is gathered once the answer streams; before that,
// gathering more keeps small answers whole.
func (w *writer) Flush() {
	if w.streaming && len(w.buf) > 0 {
		_ = w.send()
	}
}

// send passes the gathered bytes to the stream, starting it first.
func (w *writer) send() error {
	if !w.streaming {
		w.start()
	}
	b := w.buf
	w.buf = make([]byte, 0, chunkSize)
	select {
	case w.chunks <- b:
		return nil
	case err := <-w.failed:
		w.failed <- err
		return err
	}
}

func (w *writer) flatHeaders() js.Value {
	var flat []any
	for k, vs := range w.hdr {
		for _, v := range vs {
			flat = append(flat, k, v)
		}
	}
	return js.ValueOf(flat)
}

// start answers with a streamed body whose source reads w.chunks.
func (w *writer) start() {
	w.streaming = true
	w.chunks = make(chan []byte)
	w.failed = make(chan error, 1)
	src := js.Global().Get("Object").New()
	var next, cancel js.Func
	next = js.FuncOf(func(this js.Value, args []js.Value) any {
		cb := args[0]
		go func() {
			b, ok := <-w.chunks
			switch {
			case ok:
				u := js.Global().Get("Uint8Array").New(len(b))
				js.CopyBytesToJS(u, b)
				cb.Invoke(js.Null(), u)
			default:
				select {
				case err := <-w.failed:
					cb.Invoke(err.Error(), js.Null())
				default:
					cb.Invoke(js.Null(), js.Null())
				}
				w.release()
			}
		}()
		return nil
	})
	cancel = js.FuncOf(func(this js.Value, args []js.Value) any {
		w.cancel() // the client went away: stop the handler
		go func() {
			for range w.chunks { // let a blocked Write return
			}
			w.release()
		}()
		select {
		case w.failed <- errors.New("edge: the client cancelled the answer"):
		default:
		}
		return nil
	})
	w.funcs = []js.Func{next, cancel}
	src.Set("next", next)
	src.Set("cancel", cancel)
	w.respond.Invoke(w.status, w.flatHeaders(), 2, src)
}

// release frees the stream's functions and finishes the request, once.
func (w *writer) release() {
	w.done.Do(func() {
		for _, f := range w.funcs {
			f.Release()
		}
		w.cancel()
		w.gate.finish()
	})
}

// end completes the answer after the handler returned.
func (w *writer) end() {
	w.WriteHeader(http.StatusOK)
	if w.streaming {
		if len(w.buf) > 0 {
			_ = w.send()
		}
		close(w.chunks)
		return
	}
	switch {
	case w.bodyless() || len(w.buf) == 0:
		w.respond.Invoke(w.status, w.flatHeaders(), 0, js.Null())
	default:
		u := js.Global().Get("Uint8Array").New(len(w.buf))
		js.CopyBytesToJS(u, w.buf)
		w.respond.Invoke(w.status, w.flatHeaders(), 1, u)
	}
	w.cancel()
	w.gate.finish()
}

// abort breaks the answer: what was sent stays, and the stream ends with
// an error, so the client never takes a cut answer for a whole one.
func (w *writer) abort(err error) {
	if w.status == 0 {
		// Nothing was written: answer the API's error body.
		w.status = http.StatusInternalServerError
		w.hdr = http.Header{"Content-Type": {"application/json"}, "Cache-Control": {"no-store"}}
		w.buf = []byte(`{"error":{"code":"Internal","message":"internal error"}}` + "\n")
		w.end()
		return
	}
	if !w.streaming {
		w.start()
	}
	if len(w.buf) > 0 {
		_ = w.send()
	}
	select {
	case w.failed <- err:
	default:
	}
	close(w.chunks)
}
