package lancefile

import (
	"errors"
	"fmt"
)

// Errors of this package. Match them with errors.Is; the returned errors are
// *FormatError values that say which file, column, page and offset failed.
var (
	// ErrCorrupt means a data file is truncated, malformed or inconsistent.
	ErrCorrupt = errors.New("lancefile: corrupt data file")
	// ErrUnsupportedVersion means the file uses a format version kv0 does
	// not read (legacy 0.1/0.2, or 2.3 and later).
	ErrUnsupportedVersion = errors.New("lancefile: unsupported file format version")
	// ErrUnsupportedEncoding means a page uses an encoding kv0 does not read.
	ErrUnsupportedEncoding = errors.New("lancefile: unsupported encoding")
	// ErrInvalidUTF8 means a Writer was given a string (utf8) value that is
	// not valid UTF-8; store such values as binary.
	ErrInvalidUTF8 = errors.New("lancefile: string value is not valid UTF-8")
)

// FormatError describes a problem with one data file.
type FormatError struct {
	File   string // store key of the file
	Column int    // column index, -1 when not about a column
	Page   int    // page index within the column, -1 when not about a page
	Offset int64  // byte offset in the file, -1 when unknown
	Msg    string
	Err    error // ErrCorrupt, ErrUnsupportedVersion, ErrUnsupportedEncoding, or an I/O error
}

func (e *FormatError) Error() string {
	s := e.File
	if e.Column >= 0 {
		s += fmt.Sprintf(" column %d", e.Column)
	}
	if e.Page >= 0 {
		s += fmt.Sprintf(" page %d", e.Page)
	}
	if e.Offset >= 0 {
		s += fmt.Sprintf(" at offset %d", e.Offset)
	}
	if e.Msg != "" {
		return fmt.Sprintf("%s: %v: %s", s, e.Err, e.Msg)
	}
	return fmt.Sprintf("%s: %v", s, e.Err)
}

// Unwrap returns the underlying sentinel or I/O error.
func (e *FormatError) Unwrap() error { return e.Err }

// corruptf builds a corruption error about the whole file.
func (f *File) corruptf(off int64, format string, args ...any) error {
	return &FormatError{File: f.key, Column: -1, Page: -1, Offset: off, Msg: fmt.Sprintf(format, args...), Err: ErrCorrupt}
}

// pageErr attaches file, column and page to an error from a page decoder.
// Sentinel-wrapping errors keep their sentinel; anything else counts as
// corruption.
func (f *File) pageErr(col, page int, err error) error {
	if err == nil {
		return nil
	}
	var fe *FormatError
	if errors.As(err, &fe) {
		return err
	}
	base := ErrCorrupt
	for _, s := range []error{ErrUnsupportedEncoding, ErrUnsupportedType, ErrUnsupportedVersion} {
		if errors.Is(err, s) {
			base = s
		}
	}
	return &FormatError{File: f.key, Column: col, Page: page, Offset: -1, Msg: err.Error(), Err: base}
}
