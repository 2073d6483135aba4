package lancefile

import "github.com/kv0/kv0/core/internal/lancepb/enc21pb"

// decompressBuffer undoes General / Flat buffer compression. limit bounds
// the decompressed size.
func decompressBuffer(s enc21pb.CompressionScheme, src []byte, limit int) ([]byte, error) {
	return nil, unsupportedf("buffer compression %v", s)
}
