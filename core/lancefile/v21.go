package lancefile

import (
	"fmt"
)

// newDecoder21 returns the decoder of one top-level field of a 2.1 file.
func newDecoder21(f *File, fld *Field, columnOf map[int32]int, opts ReadOptions) (fieldDecoder, error) {
	return nil, fmt.Errorf("%w: 2.1 decoding is not implemented yet", ErrUnsupportedEncoding)
}
