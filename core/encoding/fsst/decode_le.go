//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm) && !purego

package fsst

import "unsafe"

// decodeRun decodes codes from the start of src up to the first escape or
// undefined code, four at a time while it can and then one by one. It
// returns the bytes written to out and the codes consumed.
//
// out must hold at least 8*len(src) bytes (see decode for why the stores
// then stay inside it). On this little-endian platform a symbol's in-memory
// word is its byte sequence, so each is stored with one unaligned write.
func (t *Table) decodeRun(out, src []byte) (pos, i int) {
	if len(out) < 8*len(src) {
		return 0, 0
	}
	base := unsafe.Pointer(unsafe.SliceData(out))
	for ; i+4 <= len(src); i += 4 {
		c := src[i : i+4 : i+4]
		l0, l1, l2, l3 := t.lens[c[0]], t.lens[c[1]], t.lens[c[2]], t.lens[c[3]]
		if anySpecial(l0, l1, l2, l3) {
			break
		}
		*(*uint64)(unsafe.Add(base, pos)) = t.symbols[c[0]]
		pos += int(l0)
		*(*uint64)(unsafe.Add(base, pos)) = t.symbols[c[1]]
		pos += int(l1)
		*(*uint64)(unsafe.Add(base, pos)) = t.symbols[c[2]]
		pos += int(l2)
		*(*uint64)(unsafe.Add(base, pos)) = t.symbols[c[3]]
		pos += int(l3)
	}
	// Then one at a time up to the next special code or the end.
	for ; i < len(src); i++ {
		c := src[i]
		l := t.lens[c]
		if l == 0 {
			break
		}
		*(*uint64)(unsafe.Add(base, pos)) = t.symbols[c]
		pos += int(l)
	}
	return pos, i
}
