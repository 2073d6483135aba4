package lancefile

import (
	"fmt"

	"github.com/kv0/kv0/core/encoding/compress"
	"github.com/kv0/kv0/core/internal/lancepb/enc21pb"
)

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
	out, err := compress.Decompress(scheme, nil, src)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if len(out) > limit {
		return nil, corruptf("%v buffer decompresses to %d bytes, more than the %d expected", scheme, len(out), limit)
	}
	return out, nil
}
