package lancefile

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kv0/kv0/core/encoding/bitpack"
	"github.com/kv0/kv0/core/internal/lancepb/enc20pb"
)

// bitpackedNonNeg decodes BitpackedForNonNeg: FastLanes blocks of 1024
// values, each 1024*w/8 bytes, the last block padded with zeros.
func (d *decoder20) bitpackedNonNeg(b *enc20pb.BitpackedForNonNeg, n int, dt arrow.DataType) (arrow.Array, error) {
	bits := fixedBits20(dt)
	w := b.GetCompressedBitsPerValue()
	if bits < 8 || dt.ID() == arrow.BOOL || b.GetUncompressedBitsPerValue() != uint64(bits) || w > uint64(bits) {
		return nil, fmt.Errorf("%w: bitpacked_for_non_neg %d→%d bits for %v", ErrUnsupportedEncoding,
			w, b.GetUncompressedBitsPerValue(), dt)
	}
	src, err := d.res.buffer(b.GetBuffer())
	if err != nil {
		return nil, err
	}
	blocks := (n + bitpack.BlockLen - 1) / bitpack.BlockLen
	packed := bitpack.PackedBytes(int(w))
	if len(src) < blocks*packed {
		return nil, fmt.Errorf("bitpacked buffer of %d bytes, need %d", len(src), blocks*packed)
	}
	size := bits / 8
	out := make([]byte, blocks*bitpack.BlockLen*size)
	blockOut := bitpack.BlockLen * size
	for i := range blocks {
		if err := bitpack.UnpackBlock(bits, int(w), out[i*blockOut:(i+1)*blockOut], src[i*packed:(i+1)*packed]); err != nil {
			return nil, err
		}
	}
	return fixedArray20(dt, n, out[:n*size:n*size]), nil
}

// decompress20 undoes the general-purpose compression of a Flat buffer.
// need is the size the caller expects; larger outputs are refused.
func decompress20(scheme string, src []byte, need int) ([]byte, error) {
	return nil, fmt.Errorf("%w: %q compression", ErrUnsupportedEncoding, scheme)
}

// newFSST20 parses an FSST symbol table and returns a function that
// appends the decompressed form of one value to dst.
func newFSST20(table []byte) (func(dst, src []byte) ([]byte, error), error) {
	return nil, fmt.Errorf("%w: fsst", ErrUnsupportedEncoding)
}
