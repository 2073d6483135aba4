// Package fsst decodes and encodes strings compressed with FSST (Fast Static
// Symbol Table) in the layout Lance file format 2.1 uses for its Fsst
// compressive encoding.
//
// A symbol table maps each code byte to a symbol of 1 to 8 bytes. Lance
// stores the table as a fixed block of 2312 bytes (8 + 256*8 + 256), zero
// after the last length byte:
//
//	offset       size   field
//	0            8      header, u64 little-endian (bit 63 on the left):
//	                    ┌───────────────┬────────┬──────────┬──────────┬─────────┐
//	                    │ "FSST" 32 bits│ switch │suffix_lim│terminator│n_symbols│
//	                    │  0x46535354   │ 8 bits │  8 bits  │  8 bits  │ 8 bits  │
//	                    └───────────────┴────────┴──────────┴──────────┴─────────┘
//	8            8*n    symbols, one u64 little-endian each: byte k of the
//	                    symbol is bits 8k..8k+7
//	8+8*n        n      symbol lengths, one byte each (1..8)
//	8+9*n        …      zero up to byte 2312
//
// Only bit 0 of the switch byte matters: when it is clear the strings were
// stored uncompressed and decode to themselves. suffix_lim and terminator
// are hints for Lance's encoder; decoders ignore them.
//
// A compressed string is a sequence of codes. A code c < n_symbols stands
// for the first lens[c] bytes of symbols[c]; code 255 is an escape, and the
// byte after it is copied literally:
//
//	codes  [ 3 ][255][ 'x' ][ 0 ]       symbols[3] = "abc", symbols[0] = "de"
//	out    "abc" "x"         "de"   →   "abcxde"
//
// Lance compresses each string of a page on its own with one table per page
// and stores the codes as a Variable (offsets + bytes) buffer, so
// Table.DecodeOffsets takes offsets into the compressed bytes and returns
// offsets into the decoded bytes.
//
// A Table is immutable once built and safe for concurrent use.
package fsst
