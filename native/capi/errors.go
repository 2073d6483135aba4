package main

import (
	"errors"
	"io/fs"

	"github.com/kv0/kv0/core/inspect"
	"github.com/kv0/kv0/core/kv"
	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/lancefile"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/tracking"
	"github.com/kv0/kv0/native/runlock"
	"github.com/kv0/kv0/native/wal"
)

// errInvalidArg is the ABI's own invalid-argument error (a malformed
// buffer, an unknown option value).
var errInvalidArg = errors.New("kv0: invalid argument")

// errorClasses lists, in the order they are tried, the Go errors each
// status code stands for. The order matters for errors that match several
// (a store I/O error wrapping a missing object is a store I/O error).
var errorClasses = []struct {
	code int
	errs []error
}{
	{codeClosed, []error{errClosedHandle, kv.ErrClosed, tracking.ErrClosed}},
	{codeWALCorruption, []error{wal.ErrCorrupt}},
	{codeCorruption, []error{kv.ErrCorruption, tracking.ErrCorrupt, lance.ErrCorrupt, lancefile.ErrCorrupt}},
	{codeNotSupported, []error{kv.ErrNotSupported, tracking.ErrReadOnly, store.ErrNotSupported,
		lance.ErrUnsupportedFeature, lancefile.ErrUnsupportedVersion, lancefile.ErrUnsupportedEncoding, lancefile.ErrUnsupportedType}},
	{codeConflict, []error{kv.ErrConflict, lance.ErrConflict, lance.ErrExists, lance.ErrTagExists, tracking.ErrExists,
		kv.ErrTagged, tracking.ErrTagHoldsDeleted, wal.ErrLocked, kv.ErrStaleWAL, runlock.ErrHeld}},
	{codeInvalidArgument, []error{errInvalidArg, tracking.ErrInvalid, inspect.ErrInvalid, store.ErrInvalidKey, lance.ErrSchemaMismatch,
		lance.ErrDataFormat}},
	{codeStoreIO, []error{kv.ErrStoreIO, wal.ErrBroken}},
	{codeNotFound, []error{kv.ErrNotFound, tracking.ErrNotFound, store.ErrNotFound, lance.ErrNotFound}},
	{codeStoreIO, []error{store.ErrShortObject}},
}

// errCode returns the status code of err (errors.Is against errorClasses;
// file-system errors are store I/O errors; anything else is codeOther).
func errCode(err error) int {
	for _, c := range errorClasses {
		for _, e := range c.errs {
			if errors.Is(err, e) {
				return c.code
			}
		}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return codeStoreIO
	}
	return codeOther
}
