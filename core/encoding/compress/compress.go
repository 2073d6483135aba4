package compress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Scheme is a general compression scheme. The values are those of Lance's
// CompressionScheme protobuf enum.
type Scheme int

const (
	// SchemeLZ4 is LZ4 block compression with a 4-byte size prefix.
	SchemeLZ4 Scheme = 1
	// SchemeZstd is zstd with an 8-byte size prefix.
	SchemeZstd Scheme = 2
)

// String returns the scheme's name as Lance spells it in field metadata.
func (s Scheme) String() string {
	switch s {
	case SchemeLZ4:
		return "lz4"
	case SchemeZstd:
		return "zstd"
	}
	return fmt.Sprintf("Scheme(%d)", int(s))
}

// ErrCorrupt is wrapped by every error Decompress returns for malformed
// input. Match it with errors.Is.
var ErrCorrupt = errors.New("compress: corrupt data")

// ErrUnsupported is returned for a scheme this package does not implement.
// Match it with errors.Is.
var ErrUnsupported = errors.New("compress: unsupported scheme")

const (
	// MaxSize is the largest uncompressed size Decompress accepts, 1 GiB.
	MaxSize = 1 << 30

	// lz4MaxRatio bounds how much an LZ4 block may expand. The format
	// cannot exceed about 255:1 (each length byte adds at most 255), so
	// 1000 rejects only corrupt sizes.
	lz4MaxRatio = 1000
	// zstdMaxRatio bounds how much zstd input may expand: a block of 4
	// bytes (3 header + 1 RLE byte) is the smallest, and it yields at most
	// 128 KiB. Real data does get close (a run of zeros), so the bound
	// is the format's, not a guess.
	zstdMaxRatio = 128 << 10 / 4

	zstdPrefix = 8
	lz4Prefix  = 4
	zstdMagic  = 0xFD2FB528
)

// Decompress appends the decompression of src, a buffer compressed with
// scheme, to dst and returns the extended slice. Errors for malformed input
// wrap ErrCorrupt; sizes over 1 GiB or beyond what the compressed bytes can
// expand to are refused without allocating. An empty zstd buffer decodes to
// nothing.
func Decompress(scheme Scheme, dst, src []byte) ([]byte, error) {
	switch scheme {
	case SchemeZstd:
		return decompressZstd(dst, src)
	case SchemeLZ4:
		return decompressLZ4(dst, src)
	}
	return dst, fmt.Errorf("%w: %v", ErrUnsupported, scheme)
}

// Compress appends src compressed with scheme, in Lance's framing, to dst and
// returns the extended slice. For zstd, level is a zstd level (0 means the
// zstd default, 3; levels map onto the encoder's four speeds: below 3
// fastest, 3-5 default, 6-9 better, 10 and up best). LZ4 ignores level, as
// Lance does, and produces the block LZ4_compress_default would.
func Compress(scheme Scheme, level int, dst, src []byte) ([]byte, error) {
	switch scheme {
	case SchemeZstd:
		if len(src) > MaxSize {
			return dst, fmt.Errorf("compress: %d bytes exceed the %d-byte limit", len(src), MaxSize)
		}
		dst = binary.LittleEndian.AppendUint64(dst, uint64(len(src)))
		return zstdEncoder(level).EncodeAll(src, dst), nil
	case SchemeLZ4:
		if len(src) > MaxSize {
			return dst, fmt.Errorf("compress: %d bytes exceed the %d-byte limit", len(src), MaxSize)
		}
		return compressLZ4(dst, src)
	}
	return dst, fmt.Errorf("%w: %v", ErrUnsupported, scheme)
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// checkSize validates a size prefix against the payload that follows it.
func checkSize(scheme Scheme, size uint64, payload int, ratio uint64) error {
	if size > MaxSize {
		return corrupt("%v size %d exceeds the %d-byte limit", scheme, size, MaxSize)
	}
	if size > uint64(payload)*ratio {
		return corrupt("%v size %d is impossible for %d compressed bytes", scheme, size, payload)
	}
	return nil
}

// isRawZstd reports whether src is a bare zstd frame rather than a
// size-prefixed one, by Lance's rule: shorter than a prefix, or the zstd
// magic followed by a frame header byte whose bit 0x10 is clear. (A prefix
// could only look like the magic for sizes of about 4 GiB.)
func isRawZstd(src []byte) bool {
	if len(src) < zstdPrefix {
		return true
	}
	return binary.LittleEndian.Uint32(src) == zstdMagic && src[4]&0x10 == 0
}

func decompressZstd(dst, src []byte) ([]byte, error) {
	if len(src) == 0 {
		return dst, nil
	}
	start := len(dst)
	if isRawZstd(src) {
		dec, err := zstdDecoders(false)
		if err != nil {
			return dst, err
		}
		out, err := dec.DecodeAll(src, dst)
		if err != nil {
			return dst, fmt.Errorf("%w: zstd: %w", ErrCorrupt, err)
		}
		return out, nil
	}
	size := binary.LittleEndian.Uint64(src)
	payload := src[zstdPrefix:]
	if err := checkSize(SchemeZstd, size, len(payload), zstdMaxRatio); err != nil {
		return dst, err
	}
	dec, err := zstdDecoders(true)
	if err != nil {
		return dst, err
	}
	// The capacity is exactly the stated size, and this decoder never
	// writes past the capacity, so frames claiming more fail early.
	buf := slices.Grow(dst, int(size))[: start : start+int(size)]
	out, err := dec.DecodeAll(payload, buf)
	if err != nil {
		return dst, fmt.Errorf("%w: zstd: %w", ErrCorrupt, err)
	}
	if got := len(out) - start; uint64(got) != size {
		return dst, corrupt("zstd data decodes to %d bytes, its prefix says %d", got, size)
	}
	return out, nil
}

func decompressLZ4(dst, src []byte) ([]byte, error) {
	if len(src) < lz4Prefix {
		return dst, corrupt("lz4 buffer of %d bytes lacks its size prefix", len(src))
	}
	size := uint64(binary.LittleEndian.Uint32(src))
	payload := src[lz4Prefix:]
	if err := checkSize(SchemeLZ4, size, len(payload), lz4MaxRatio); err != nil {
		return dst, err
	}
	if size == 0 {
		// The only block that decodes to nothing is a lone 0 token (or,
		// leniently, no block at all). Handled here because the amd64
		// assembly of lz4.UncompressBlock faults on a nil dst.
		if len(payload) > 1 || len(payload) == 1 && payload[0] != 0 {
			return dst, corrupt("lz4 block of %d bytes for an empty buffer", len(payload))
		}
		return dst, nil
	}
	start := len(dst)
	dst = slices.Grow(dst, int(size))
	out := dst[start : start+int(size)]
	n, err := lz4.UncompressBlock(payload, out)
	if err != nil {
		return dst[:start], fmt.Errorf("%w: lz4: %w", ErrCorrupt, err)
	}
	if uint64(n) != size {
		return dst[:start], corrupt("lz4 block decodes to %d bytes, its prefix says %d", n, size)
	}
	return dst[:start+n], nil
}

var lz4Compressors = sync.Pool{New: func() any { return new(lz4.CompressorCCompat) }}

func compressLZ4(dst, src []byte) ([]byte, error) {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(src)))
	start := len(dst)
	dst = slices.Grow(dst, lz4.CompressBlockBound(len(src)))
	buf := dst[start : start+lz4.CompressBlockBound(len(src))]
	c := lz4Compressors.Get().(*lz4.CompressorCCompat)
	n, err := c.CompressBlock(src, buf)
	lz4Compressors.Put(c)
	if err != nil {
		return dst[:start-lz4Prefix], fmt.Errorf("compress: lz4: %w", err)
	}
	if n == 0 {
		// Nothing to compress (empty input): a block of one sequence of
		// literals, which is what the reference implementation writes.
		return appendLiteralBlock(dst[:start], src), nil
	}
	return dst[:start+n], nil
}

// appendLiteralBlock appends an LZ4 block that stores src as literals only.
func appendLiteralBlock(dst, src []byte) []byte {
	n := len(src)
	if n < 15 {
		dst = append(dst, byte(n<<4))
	} else {
		dst = append(dst, 0xF0)
		for n -= 15; n >= 255; n -= 255 {
			dst = append(dst, 0xFF)
		}
		dst = append(dst, byte(n))
	}
	return append(dst, src...)
}

var (
	decOnce                sync.Once
	rawDecoder, capDecoder *zstd.Decoder
	decErr                 error

	encMu    sync.Mutex
	encoders = map[zstd.EncoderLevel]*zstd.Encoder{}
)

// zstdDecoders returns a shared decoder: with capped set, one whose
// DecodeAll writes no further than the capacity of its dst; otherwise one
// bounded only by MaxSize. DecodeAll on them is safe for concurrent use; it
// runs in the calling goroutine and starts none.
func zstdDecoders(capped bool) (*zstd.Decoder, error) {
	decOnce.Do(func() {
		rawDecoder, decErr = zstd.NewReader(nil, zstd.WithDecoderMaxMemory(MaxSize))
		if decErr == nil {
			capDecoder, decErr = zstd.NewReader(nil, zstd.WithDecoderMaxMemory(MaxSize),
				zstd.WithDecodeAllCapLimit(true))
		}
	})
	if capped {
		return capDecoder, decErr
	}
	return rawDecoder, decErr
}

// zstdEncoder returns the shared encoder for a zstd level. EncodeAll on it
// is safe for concurrent use and starts no goroutines.
func zstdEncoder(level int) *zstd.Encoder {
	l := zstd.EncoderLevelFromZstd(level)
	if level == 0 {
		l = zstd.SpeedDefault
	}
	encMu.Lock()
	defer encMu.Unlock()
	e := encoders[l]
	if e == nil {
		var err error
		// Lance writes no frame checksum; neither do we.
		e, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(l), zstd.WithEncoderCRC(false))
		if err != nil {
			// Only invalid options fail, and these are fixed.
			panic("compress: zstd encoder: " + err.Error())
		}
		encoders[l] = e
	}
	return e
}
