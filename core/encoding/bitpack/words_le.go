//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm) && !purego

package bitpack

import "unsafe"

// asWords views b as a slice of little-endian words without copying. It
// reports false if this is not possible: b is not aligned for U. On this
// little-endian platform the in-memory word layout matches the encoding.
func asWords[U word](b []byte) ([]U, bool) {
	n := wordBytes[U]()
	if len(b) == 0 {
		return nil, true
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	if uintptr(p)%uintptr(n) != 0 {
		return nil, false
	}
	return unsafe.Slice((*U)(p), len(b)/n), true
}
