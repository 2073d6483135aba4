package lance

import (
	"errors"
	"fmt"
)

// Errors of this package. Match them with errors.Is: returned errors wrap
// them with the dataset, file and offset concerned. Errors from data files
// are *lancefile.FormatError values passed through unchanged, so
// errors.Is(err, lancefile.ErrUnsupportedVersion) and friends work too.
var (
	// ErrNotFound means there is no dataset at the root, or the requested
	// version or tag does not exist. The message says which.
	ErrNotFound = errors.New("lance: not found")
	// ErrCorrupt means a manifest, transaction, tag or deletion file is
	// truncated, malformed or inconsistent. The message names the file and,
	// where it helps, the byte offset.
	ErrCorrupt = errors.New("lance: corrupt dataset file")
	// ErrUnsupportedFeature means the dataset uses a feature kv0 does not
	// read: unknown reader feature flag bits, external base paths, branches.
	ErrUnsupportedFeature = errors.New("lance: unsupported feature")
	// ErrInvalidRowAddress means a row address given to Take names a
	// fragment that does not exist, an offset past the fragment's end, or a
	// deleted row. The error is a *RowAddressError.
	ErrInvalidRowAddress = errors.New("lance: invalid row address")
	// ErrDataFormat means a write asked for a data file format kv0 does not
	// write (it writes 2.1 and 2.2), or for one that differs from the
	// dataset's: the files of a dataset all have its format, so appends,
	// updates and compactions keep it. The message names both formats.
	ErrDataFormat = errors.New("lance: data format")
)

// corruptErr is a corruption error about one file at one offset.
func corruptErr(key string, off int64, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if off >= 0 {
		return fmt.Errorf("%w: %s at offset %d: %s", ErrCorrupt, key, off, msg)
	}
	return fmt.Errorf("%w: %s: %s", ErrCorrupt, key, msg)
}

// RowAddressError reports a row address Take cannot serve.
type RowAddressError struct {
	Addr     uint64 // the address as given
	Fragment uint64 // Addr >> 32
	Offset   uint32 // Addr & 0xffffffff
	Reason   string // "no such fragment", "offset out of range", "row deleted"
}

func (e *RowAddressError) Error() string {
	return fmt.Sprintf("lance: row address %d (fragment %d, offset %d): %s", e.Addr, e.Fragment, e.Offset, e.Reason)
}

// Unwrap returns ErrInvalidRowAddress.
func (e *RowAddressError) Unwrap() error { return ErrInvalidRowAddress }
