//go:build !((386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm) && !purego)

package bitpack

// asWords always reports false here: on big-endian platforms, or with the
// purego tag, byte buffers are converted by copying.
func asWords[U word](b []byte) ([]U, bool) { return nil, false }
