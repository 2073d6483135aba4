// Package compress implements the general-purpose buffer compression of
// Lance file format 2.1 (the General compressive encoding and per-value
// compression of large values): zstd and LZ4, framed the way Lance frames
// them.
//
// zstd: an 8-byte little-endian length of the uncompressed data, then one or
// more zstd frames. Decompress also accepts bare zstd frames (older files),
// recognised as Lance does: the input is shorter than 8 bytes, or it starts
// with the zstd magic number and the frame header's bit 0x10 is clear.
//
//	┌──────────────────────────┬─────────────────────────────────────┐
//	│ u64 LE uncompressed size │ zstd frame(s): 28 B5 2F FD …        │
//	└──────────────────────────┴─────────────────────────────────────┘
//	  or, for an empty buffer, nothing at all
//
// LZ4: a 4-byte little-endian length of the uncompressed data, then one LZ4
// block (the raw block format, not the LZ4 frame format).
//
//	┌──────────────────────────┬─────────────────────────────────────┐
//	│ u32 LE uncompressed size │ LZ4 block (sequences of token,      │
//	│                          │ literals, offset, match length)     │
//	└──────────────────────────┴─────────────────────────────────────┘
//
// Decompress never trusts a size field further than the format allows: it
// refuses sizes over 1 GiB and sizes that the compressed bytes could not
// possibly expand to, and checks that the output has exactly the stated size.
//
// The zstd encoders and the decoder are built on first use and shared; they
// start no goroutines. All functions are safe for concurrent use.
package compress
