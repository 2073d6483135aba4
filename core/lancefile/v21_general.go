package lancefile

import (
	"encoding/binary"

	"github.com/kv0/kv0/core/encoding/compress"
	"github.com/kv0/kv0/core/internal/lancepb/enc21pb"
)

// zstdMagic starts a bare zstd frame.
const zstdMagic = 0xFD2FB528

// decompressBuffer undoes General (and Flat) buffer compression: zstd or
// LZ4 in Lance's length-prefixed framing. Output larger than limit is
// rejected; the compress package already refuses sizes its input cannot
// justify before allocating.
func decompressBuffer(s enc21pb.CompressionScheme, src []byte, limit int) ([]byte, error) {
	var scheme compress.Scheme
	switch s {
	case enc21pb.CompressionScheme_COMPRESSION_ALGORITHM_ZSTD:
		scheme = compress.SchemeZstd
	case enc21pb.CompressionScheme_COMPRESSION_ALGORITHM_LZ4:
		scheme = compress.SchemeLZ4
	default:
		return nil, unsupportedf("buffer compression %v", s)
	}
	// Check the size prefix against the limit before anything is allocated
	// (a bare zstd frame, which lance's reader also accepts, has none).
	var size uint64
	switch {
	case scheme == compress.SchemeLZ4 && len(src) >= 4:
		size = uint64(binary.LittleEndian.Uint32(src))
	case scheme == compress.SchemeZstd && len(src) >= 8 && binary.LittleEndian.Uint32(src) != zstdMagic:
		size = binary.LittleEndian.Uint64(src)
	}
	if size > uint64(limit) {
		return nil, corruptf("%v buffer claims %d bytes, more than the %d expected", scheme, size, limit)
	}
	out, err := compress.Decompress(scheme, nil, src)
	if err != nil {
		return nil, corruptf("%v", err)
	}
	if len(out) > limit {
		return nil, corruptf("%v buffer decompresses to %d bytes, more than the %d expected", scheme, len(out), limit)
	}
	return out, nil
}
