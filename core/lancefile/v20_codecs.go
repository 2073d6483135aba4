package lancefile

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kv0/kv0/core/encoding/bitpack"
	"github.com/kv0/kv0/core/encoding/compress"
	"github.com/kv0/kv0/core/encoding/fsst"
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

// decompress20 undoes the general-purpose compression of a Flat buffer
// (lance writes it for binary bytes when a field's metadata asks for
// "lance-encoding:compression" zstd or lz4). need is the size the caller
// expects; less is corruption.
func decompress20(scheme string, src []byte, need int) ([]byte, error) {
	var s compress.Scheme
	switch scheme {
	case "zstd":
		s = compress.SchemeZstd
	case "lz4":
		s = compress.SchemeLZ4
	default:
		return nil, fmt.Errorf("%w: %q compression", ErrUnsupportedEncoding, scheme)
	}
	// Lance frames both with the uncompressed size (zstd: u64, unless the
	// buffer is a bare zstd frame; lz4: u32). The page says how many bytes
	// it uses, so refuse larger claims before anything is allocated.
	var claim uint64
	switch {
	case s == compress.SchemeLZ4 && len(src) >= 4:
		claim = uint64(binary.LittleEndian.Uint32(src))
	case s == compress.SchemeZstd && len(src) >= 8 && !(binary.LittleEndian.Uint32(src) == 0xFD2FB528 && src[4]&0x10 == 0):
		claim = binary.LittleEndian.Uint64(src)
	}
	if claim > uint64(need) {
		return nil, fmt.Errorf("%s buffer claims %d bytes, the page uses %d", scheme, claim, need)
	}
	out, err := compress.Decompress(s, nil, src)
	if err != nil {
		if errors.Is(err, compress.ErrUnsupported) {
			return nil, fmt.Errorf("%w: %v", ErrUnsupportedEncoding, err)
		}
		return nil, err
	}
	if len(out) < need {
		return nil, fmt.Errorf("%s buffer decompressed to %d bytes, want %d", scheme, len(out), need)
	}
	return out, nil
}

// newFSST20 parses an FSST symbol table (lance's 2312-byte layout) and
// returns a function that appends the decompressed form of one value to dst.
func newFSST20(table []byte) (func(dst, src []byte) ([]byte, error), error) {
	t, err := fsst.ParseTable(table)
	if err != nil {
		return nil, err
	}
	return t.Decode, nil
}
