// Package bitpack implements FastLanes bit packing of 1024-value blocks as
// Lance uses it (InlineBitpacking and OutOfLineBitpacking in Lance file
// format 2.1).
//
// A block holds 1024 unsigned values of a word type of T bits (T is 8, 16,
// 32 or 64), each stored in the low W bits (0 ≤ W ≤ T). The packed block is
// 1024*W/T words of T bits, stored little-endian: 1024*W/8 bytes.
//
// The block is split into LANES = 1024/T independent lanes. Lane l owns the
// packed words l, l+LANES, l+2*LANES, …, and holds T values, one per row
// r = 0…T-1. Row r of lane l carries the value at index
//
//	order[r/8]*16 + (r%8)*128 + l,   order = [0 4 2 6 1 5 3 7]
//
// and its W bits start at bit position r*W of the lane's bit stream, which
// runs from bit 0 (least significant) of the lane's first word upwards and
// then on into its next word:
//
//	lane l of a block with T = 16, W = 3 (LANES = 64); "r5.hi" = the high
//	bits of the value of row 5, which spills into the lane's next word
//
//	           bit 15                                         bit 0
//	word l     [r5.lo:1][ r4:3 ][ r3:3 ][ r2:3 ][ r1:3 ][ r0:3 ]
//	word l+64  [r10.lo:2][ r9:3 ][ r8:3 ][ r7:3 ][ r6:3 ][r5.hi:2]
//	word l+128 [ r15:3 ][ r14:3 ][ r13:3 ][ r12:3 ][ r11:3 ][r10.hi:1]
//
//	bytes: word k of the block is bytes 2k (low half) and 2k+1 (high half)
//
// W = 0 packs to nothing and unpacks to zeros; W = T stores every value
// whole, in the same transposed order. Unpacking is the exact inverse of
// packing, so a packed block survives an unpack and a re-pack byte for byte.
//
// The typed functions (Unpack64, Pack32, …) run per-width kernels generated
// by gen.go and allocate nothing; in WebAssembly builds unpacking goes
// through one loop for every width instead (unpackLoop: about a quarter of
// the kernels' speed, a tenth of a megabyte less of the browser module). UnpackBlock and PackBlock work on
// little-endian bytes and check every size; on little-endian machines they
// reinterpret 8-byte aligned buffers in place instead of copying them
// (build tag purego turns that off).
//
// All functions are safe for concurrent use; they keep no state.
package bitpack

//go:generate go run gen.go
