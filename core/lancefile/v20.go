package lancefile

import (
	"fmt"
)

// newDecoder20 returns the decoder of one top-level field of a 2.0 file.
func newDecoder20(f *File, fld *Field, columnOf map[int32]int, opts ReadOptions) (fieldDecoder, error) {
	return nil, fmt.Errorf("%w: 2.0 decoding is not implemented yet", ErrUnsupportedEncoding)
}
