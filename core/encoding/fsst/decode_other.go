//go:build !((386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm) && !purego)

package fsst

import "encoding/binary"

// decodeRun decodes codes from the start of src up to the first escape or
// undefined code, four at a time while it can and then one by one. It
// returns the bytes written to out and the codes consumed. This is the
// portable version: bounds-checked little-endian stores.
func (t *Table) decodeRun(out, src []byte) (pos, i int) {
	for ; i+4 <= len(src) && len(out)-pos >= 32; i += 4 {
		c := src[i : i+4 : i+4]
		l0, l1, l2, l3 := t.lens[c[0]], t.lens[c[1]], t.lens[c[2]], t.lens[c[3]]
		if anySpecial(l0, l1, l2, l3) {
			break
		}
		o := out[pos : pos+32 : pos+32]
		binary.LittleEndian.PutUint64(o, t.symbols[c[0]])
		p := int(l0)
		binary.LittleEndian.PutUint64(o[p&31:], t.symbols[c[1]])
		p += int(l1)
		binary.LittleEndian.PutUint64(o[p&31:], t.symbols[c[2]])
		p += int(l2)
		binary.LittleEndian.PutUint64(o[p&31:], t.symbols[c[3]])
		pos += p + int(l3)
	}
	// Then one at a time up to the next special code or the end.
	for ; i < len(src) && len(out)-pos >= 8; i++ {
		c := src[i]
		l := t.lens[c]
		if l == 0 {
			break
		}
		binary.LittleEndian.PutUint64(out[pos:], t.symbols[c])
		pos += int(l)
	}
	return pos, i
}
