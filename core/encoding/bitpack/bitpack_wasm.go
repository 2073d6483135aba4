//go:build wasm

package bitpack

// In WebAssembly builds every width unpacks through unpackLoop: the kernels
// generated for each width (unpack_gen.go) are 0.33 MB of a browser module's
// code.

func unpack8(w int, dst *[BlockLen]uint8, src []uint8)    { unpackLoop(w, dst, src) }
func unpack16(w int, dst *[BlockLen]uint16, src []uint16) { unpackLoop(w, dst, src) }
func unpack32(w int, dst *[BlockLen]uint32, src []uint32) { unpackLoop(w, dst, src) }
func unpack64(w int, dst *[BlockLen]uint64, src []uint64) { unpackLoop(w, dst, src) }
