//go:build js && wasm

package glue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall/js"
)

// ErrNoRequest means an operation had no live request to run in (every
// request of the isolate had finished).
var ErrNoRequest = errors.New("edge: no live request to perform I/O in")

// Gate runs one request's I/O operations in that request's context (see
// the package comment). The JavaScript half creates one per request.
type Gate struct {
	js    js.Value // {submit(op, args, cb), close()}
	Limit *Limiter

	mu       sync.Mutex
	inflight int  // operations submitted, not yet answered
	finished bool // the response is complete
	closed   bool // told JavaScript to stop
}

type gateKey struct{}

var (
	gatesMu sync.Mutex
	gates   = map[*Gate]struct{}{} // open gates, for operations whose own request ended
)

func newGate(v js.Value) *Gate {
	g := &Gate{js: v, Limit: NewLimiter(MaxConnections)}
	gatesMu.Lock()
	gates[g] = struct{}{}
	gatesMu.Unlock()
	return g
}

// WithGate returns ctx carrying g.
func WithGate(ctx context.Context, g *Gate) context.Context {
	return context.WithValue(ctx, gateKey{}, g)
}

// GateOf returns the gate of ctx's request when it still takes
// operations, or else any open gate of the isolate (an operation shared by
// several requests, such as a coalesced read, outliving the one that
// started it), or nil.
func GateOf(ctx context.Context) *Gate {
	if g, ok := ctx.Value(gateKey{}).(*Gate); ok && g.open() {
		return g
	}
	gatesMu.Lock()
	defer gatesMu.Unlock()
	for g := range gates {
		if g.open() {
			return g
		}
	}
	return nil
}

func (g *Gate) open() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.closed
}

// finish marks the response complete; the gate closes once its last
// operation is answered.
func (g *Gate) finish() {
	g.mu.Lock()
	g.finished = true
	g.mu.Unlock()
	g.maybeClose()
}

func (g *Gate) maybeClose() {
	g.mu.Lock()
	if g.closed || !g.finished || g.inflight > 0 {
		g.mu.Unlock()
		return
	}
	g.closed = true
	g.mu.Unlock()
	gatesMu.Lock()
	delete(gates, g)
	gatesMu.Unlock()
	g.js.Call("close")
}

// opError is a JavaScript exception of an operation.
type opError struct {
	op  string
	msg string
}

func (e *opError) Error() string { return e.op + ": " + e.msg }

// Call runs the JavaScript operation op (one of the glue's OPS) with args
// in the gate's request and returns its result. When ctx ends first, Call
// returns its error and drop (if not nil) receives the late result
// (undefined when the operation failed), to release what it holds.
func (g *Gate) Call(ctx context.Context, drop func(js.Value), op string, args ...any) (js.Value, error) {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return js.Undefined(), fmt.Errorf("%s: %w", op, ErrNoRequest)
	}
	g.inflight++
	g.mu.Unlock()
	type result struct {
		v   js.Value
		err error
	}
	ch := make(chan result, 1)
	var cb js.Func
	cb = js.FuncOf(func(this js.Value, a []js.Value) any {
		cb.Release()
		var r result
		if e := a[0]; !e.IsNull() && !e.IsUndefined() {
			r.err = &opError{op: op, msg: e.String()}
		} else {
			r.v = a[1]
		}
		ch <- r
		g.mu.Lock()
		g.inflight--
		g.mu.Unlock()
		g.maybeClose()
		return nil
	})
	g.js.Call("submit", op, js.ValueOf(args), cb)
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		if drop != nil {
			go func() {
				drop((<-ch).v) // undefined when the operation failed
			}()
		}
		return js.Undefined(), ctx.Err()
	}
}
