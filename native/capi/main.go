// Command capi is kv0's C ABI: built with `go build -buildmode=c-shared` it
// becomes libkv0.so, which the Python package kv0 (native/python) loads with
// ctypes. It is not a program; main does nothing.
//
// The ABI is small and handle based:
//
//   - Every object (database, iterator, repository, run) lives in a Go-side
//     table and is named by a positive 64-bit handle; closing it removes it,
//     and a handle that is not in the table fails with the Closed code.
//   - Byte strings go in as pointer + length and are only read during the
//     call. Results come back in a kv0_out: a buffer allocated with malloc
//     (data, len) that the caller releases with kv0_free, and a number (num:
//     a handle, a count, a flag).
//   - Every call returns a status code (codeOK or one of the error codes
//     below, each matching a class of kv0.errors); on an error, out.data
//     holds the message.
//   - Nothing calls back from Go into the caller.
//
// Hot paths have calls of their own (put, get, batches, iterator steps that
// return many entries, track and track_many over a float64 buffer, read_many
// returning columns); the rest of the repository API goes through one
// JSON-in, JSON-out call per handle kind.
package main

/*
#include "kv0out.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

func main() {}

// Status codes. They are part of the ABI: native/python/kv0/_native.py maps
// them to exception classes.
const (
	codeOK              = 0
	codeNotFound        = 1
	codeStoreIO         = 2
	codeCorruption      = 3
	codeNotSupported    = 4
	codeInvalidArgument = 5
	codeConflict        = 6
	codeClosed          = 7
	codeOther           = 8
	// codeWALCorruption is a damaged segment of the local write-ahead log
	// (wal.ErrCorrupt), kv0.errors.WALCorruption: a Corruption whose
	// message names `kv0 wal salvage LOCATION`. A Python side older than
	// it raises the base class kv0.errors.Error.
	codeWALCorruption = 9
)

// abiVersion changes whenever a call's signature or a buffer layout does;
// the Python side refuses a library of another version.
const abiVersion = 3

// kv0_abi_version returns abiVersion.
//
//export kv0_abi_version
func kv0_abi_version() C.int64_t { return abiVersion }

// kv0_free releases a buffer of a kv0_out.
//
//export kv0_free
func kv0_free(p unsafe.Pointer) { C.free(p) }

// errClosedHandle is the error of a call on a handle that is not (or no
// longer) in the table.
var errClosedHandle = errors.New("kv0: handle is closed")

// handles maps handle numbers to objects.
var (
	handles    sync.Map // int64 -> any
	nextHandle atomic.Int64
)

func newHandle(v any) int64 {
	h := nextHandle.Add(1)
	handles.Store(h, v)
	return h
}

// lookup returns the object of handle h if it has type T.
func lookup[T any](h C.int64_t) (T, error) {
	var zero T
	v, ok := handles.Load(int64(h))
	if !ok {
		return zero, errClosedHandle
	}
	t, ok := v.(T)
	if !ok {
		return zero, fmt.Errorf("%w: handle %d is a %T", errInvalidArg, int64(h), v)
	}
	return t, nil
}

// take removes handle h from the table and returns its object.
func take[T any](h C.int64_t) (T, bool) {
	var zero T
	v, ok := handles.Load(int64(h))
	if !ok {
		return zero, false
	}
	t, ok := v.(T)
	if !ok {
		return zero, false
	}
	if _, loaded := handles.LoadAndDelete(int64(h)); !loaded {
		return zero, false // another thread closed it first
	}
	return t, true
}

// goBytes views n bytes at p (nil when n is 0). The view is valid during
// the call only; everything kept is copied.
func goBytes(p unsafe.Pointer, n C.int64_t) []byte {
	if n <= 0 || p == nil {
		return nil
	}
	return unsafe.Slice((*byte)(p), int(n))
}

// goBytesOrEmpty is goBytes, but never nil: an empty key or value is a
// value, not an absent one.
func goBytesOrEmpty(p unsafe.Pointer, n C.int64_t) []byte {
	if b := goBytes(p, n); b != nil {
		return b
	}
	return []byte{}
}

func goString(p unsafe.Pointer, n C.int64_t) string { return string(goBytes(p, n)) }

// setOut stores b in out as a malloc'ed buffer the caller frees.
func setOut(out *C.kv0_out, b []byte) {
	out.data, out.len = nil, 0
	if len(b) == 0 {
		return
	}
	p := C.malloc(C.size_t(len(b)))
	copy(unsafe.Slice((*byte)(p), len(b)), b)
	out.data, out.len = p, C.int64_t(len(b))
}

// setOut2 stores a followed by b in out, as setOut(out, append(a, b...))
// without joining them first.
func setOut2(out *C.kv0_out, a, b []byte) {
	n := len(a) + len(b)
	out.data, out.len = nil, 0
	if n == 0 {
		return
	}
	p := C.malloc(C.size_t(n))
	dst := unsafe.Slice((*byte)(p), n)
	copy(dst, a)
	copy(dst[len(a):], b)
	out.data, out.len = p, C.int64_t(n)
}

// fail stores err's message in out and returns its code.
func fail(out *C.kv0_out, err error) C.int32_t {
	setOut(out, []byte(err.Error()))
	return C.int32_t(errCode(err))
}

// done returns codeOK, or fail(out, err).
func done(out *C.kv0_out, err error) C.int32_t {
	if err != nil {
		return fail(out, err)
	}
	return codeOK
}

// threadErrs holds the message of the last failed call of each thread
// among the calls that take no kv0_out (the hottest ones: put, track): a
// caller that gets a non-zero code fetches it with kv0_take_error from the
// same thread. A cgo call from C runs on the calling thread, so the C
// thread id names the caller.
var threadErrs sync.Map // uint64 thread -> string

// failThread keeps err's message for the calling thread and returns its
// code.
func failThread(err error) C.int32_t {
	threadErrs.Store(uint64(C.kv0_thread()), err.Error())
	return C.int32_t(errCode(err))
}

// recoverThread is recoverTo for calls without a kv0_out.
func recoverThread(code *C.int32_t) {
	if r := recover(); r != nil {
		*code = failThread(fmt.Errorf("kv0: internal error: %v\n%s", r, debug.Stack()))
	}
}

// kv0_take_error moves the message of the calling thread's last failed
// call without a kv0_out into out (nothing when there is none).
//
//export kv0_take_error
func kv0_take_error(out *C.kv0_out) {
	v, ok := threadErrs.LoadAndDelete(uint64(C.kv0_thread()))
	if !ok {
		setOut(out, nil)
		return
	}
	setOut(out, []byte(v.(string)))
}

// recoverTo turns a panic inside a call into an error result, so that a
// bug never takes the host process down. Use as
// `defer recoverTo(out, &code)`.
func recoverTo(out *C.kv0_out, code *C.int32_t) {
	if r := recover(); r != nil {
		*code = fail(out, fmt.Errorf("kv0: internal error: %v\n%s", r, debug.Stack()))
	}
}

// applyEnv makes the caller's environment the Go runtime's for the
// variables kv0 reads: env is "NAME=VALUE" entries separated by NUL bytes,
// holding every KV0_* and AWS_* variable the caller has. Variables of
// those families it does not list are unset. (A c-shared library keeps
// its own copy of the environment from process start.)
func applyEnv(env []byte) error {
	if env == nil {
		return nil
	}
	want := map[string]string{}
	for _, kv := range strings.Split(string(env), "\x00") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("%w: environment entry %q has no NAME=", errInvalidArg, kv)
		}
		want[k] = v
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := want[k]; !ok && envManaged(k) {
			os.Unsetenv(k)
		}
	}
	for k, v := range want {
		if os.Getenv(k) != v {
			if err := os.Setenv(k, v); err != nil {
				return fmt.Errorf("%w: environment %s: %v", errInvalidArg, k, err)
			}
		}
	}
	return nil
}

// envManaged reports whether the caller's environment decides variable k.
func envManaged(k string) bool {
	return strings.HasPrefix(k, "KV0_") || strings.HasPrefix(k, "AWS_")
}

// envMu serialises opens, so that two threads opening with different
// environments each open with their own.
var envMu sync.Mutex
