package bitpack

import "unsafe"

// rowStart[r] is the index of the value that row r of lane 0 holds (see the
// package documentation); row r of lane l holds value rowStart[r]+l.
var rowStart = func() (s [64]int) {
	order := [8]int{0, 4, 2, 6, 1, 5, 3, 7}
	for r := range s {
		s[r] = order[r/8]*16 + (r%8)*128
	}
	return s
}()

// unpackLoop unpacks one block packed at width w with one loop for every
// width, instead of a kernel generated for each: a few hundred bytes of code
// instead of a few kilobytes per width. The WebAssembly builds use it, where
// the module's size matters more (bitpack_wasm.go). It goes row by row: row r
// of every lane starts at the same bit of the same word of its lane, so one
// shift (and, when the value spills into the lane's next word, a second one)
// serves the whole row. It panics unless 0 <= w <= T and src holds 1024*w/T
// words.
func unpackLoop[U word](w int, dst *[BlockLen]U, src []U) {
	T := int(unsafe.Sizeof(U(0))) * 8 // a constant in each instantiation
	lanes := BlockLen / T
	if w == 0 {
		clear(dst[:])
		return
	}
	if w < 0 || w > T {
		panic("bitpack: packed width out of range")
	}
	src = src[:lanes*w]
	mask := ^U(0) >> (T - w)
	for r := range T {
		k, shift := r*w/T, uint(r*w%T)
		out := dst[rowStart[r] : rowStart[r]+lanes]
		lo := src[k*lanes : k*lanes+lanes][:len(out)]
		if int(shift)+w <= T {
			for l := range out {
				out[l] = lo[l] >> shift & mask
			}
			continue
		}
		hi := src[(k+1)*lanes : (k+1)*lanes+lanes][:len(out)]
		for l := range out {
			out[l] = (lo[l]>>shift | hi[l]<<(uint(T)-shift)) & mask
		}
	}
}
