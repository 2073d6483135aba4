package lancefile

import (
	"encoding/binary"
	"math"

	"github.com/kv0/kv0/core/internal/lancepb/enc21pb"
)

// decodeConstantPage decodes a ConstantLayout page of a 2.2 file. The page
// has a scalar when inline_value is set or it has one or three buffers:
//
//	inline_value, no buffers         the scalar at every row, no levels
//	inline_value, [rep, def]         the scalar at every visible item
//	[value]                          the scalar in a value buffer, no levels
//	[value, rep, def]                both
//
// Level buffers of a scalar page are raw u16s, an empty one meaning absent.
// Without a scalar the page is all null: with the single layer
// NULLABLE_ITEM it has no buffers; otherwise its buffers are [rep, def],
// each raw u16s or, when rep_compression / def_compression says so,
// compressed with a block codec into num_rep_values / num_def_values
// levels.
func decodeConstantPage(li *leafInfo, cl *enc21pb.ConstantLayout, bufs [][]byte, rows uint64) (*leafPage, error) {
	layers := cl.GetLayers()
	dm, err := li.defMap(layers)
	if err != nil {
		return nil, err
	}
	inline := cl.InlineValue
	hasScalar := inline != nil || len(bufs) == 1 || len(bufs) == 3
	var valueBuf, repB, defB []byte
	var repC, defC *codec
	var nRep, nDef int
	if hasScalar {
		switch {
		case inline != nil && len(bufs) == 0:
		case inline != nil && len(bufs) == 2:
			repB, defB = bufs[0], bufs[1]
		case inline == nil && len(bufs) == 1:
			valueBuf = bufs[0]
		case inline == nil && len(bufs) == 3:
			valueBuf, repB, defB = bufs[0], bufs[1], bufs[2]
		default:
			return nil, corruptf("constant page with an inline value and %d buffers", len(bufs))
		}
		if cl.RepCompression != nil || cl.DefCompression != nil || cl.NumRepValues != 0 || cl.NumDefValues != 0 {
			return nil, unsupportedf("constant page with a scalar and compressed levels")
		}
	} else {
		simple := len(layers) == 1 && layers[0] == enc21pb.RepDefLayer_REPDEF_NULLABLE_ITEM
		if !simple {
			switch len(bufs) {
			case 0:
			case 2:
				repB, defB = bufs[0], bufs[1]
			default:
				return nil, corruptf("all-null page with %d buffers", len(bufs))
			}
		}
		if cl.RepCompression != nil {
			if repC, err = compileCodec(cl.RepCompression, roleBlock); err != nil {
				return nil, err
			}
			if nRep, err = levelCount(cl.NumRepValues, repB); err != nil {
				return nil, err
			}
		}
		if cl.DefCompression != nil {
			if defC, err = compileCodec(cl.DefCompression, roleBlock); err != nil {
				return nil, err
			}
			if nDef, err = levelCount(cl.NumDefValues, defB); err != nil {
				return nil, err
			}
		}
	}
	pg := &leafPage{li: li, rows: int(rows), constDef: li.base[len(li.path)-1]}
	if hasScalar {
		pg.constDef = 0
	}
	if repB, err = constantLevels(repB, repC, nRep); err != nil {
		return nil, err
	}
	if defB, err = constantLevels(defB, defC, nDef); err != nil {
		return nil, err
	}
	if len(repB)%2 != 0 || len(defB)%2 != 0 {
		return nil, corruptf("constant page levels of odd length")
	}
	if len(repB) > 0 {
		if li.maxRep == 0 {
			return nil, corruptf("repetition levels for a field without lists")
		}
		pg.rep = append([]uint16(nil), u16s(repB)...)
	}
	if len(defB) > 0 {
		pg.def = append([]uint16(nil), u16s(defB)...)
		if err := applyDefMap(pg.def, dm); err != nil {
			return nil, err
		}
	}
	if pg.rep != nil && pg.def != nil && len(pg.rep) != len(pg.def) {
		return nil, corruptf("%d repetition and %d definition levels", len(pg.rep), len(pg.def))
	}
	switch {
	case pg.rep != nil:
		pg.nlev = len(pg.rep)
	case pg.def != nil:
		pg.nlev = len(pg.def)
	default:
		pg.nlev = int(rows)
	}
	if pg.rep == nil && pg.nlev != int(rows) {
		return nil, corruptf("%d levels for %d rows", pg.nlev, rows)
	}
	pg.vals = vals{kind: li.kind, width: li.width, dim: li.dim, zero: true}
	if hasScalar {
		if li.packed != nil {
			return nil, corruptf("constant page for struct %q", li.field.Name)
		}
		sc, err := constantScalar(li, inline, valueBuf)
		if err != nil {
			return nil, err
		}
		pg.vals = vals{kind: li.kind, width: li.width, dim: li.dim, constant: true, scalar: sc}
	}
	pg.vals.n = pg.visible(0, pg.nlev)
	return pg, nil
}

// levelCount checks a constant page's count of compressed levels against
// the bytes that hold them, before anything is allocated for them.
func levelCount(n uint64, buf []byte) (int, error) {
	// No block codec packs a level into less than a bit, except RLE, whose
	// runs hold at most 255 levels a byte.
	if n > uint64(len(buf))*255+8 || n > math.MaxInt32 {
		return 0, corruptf("%d levels in %d bytes", n, len(buf))
	}
	return int(n), nil
}

// constantLevels returns the raw u16 levels of a constant page's level
// buffer, decompressing it when c is set.
func constantLevels(buf []byte, c *codec, n int) ([]byte, error) {
	if c == nil || len(buf) == 0 {
		return buf, nil
	}
	// No room is made for the levels before the codec has checked that
	// the buffer holds them.
	lv, err := c.decodeLevels(buf, n, nil)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 2*len(lv))
	for i, l := range lv {
		binary.LittleEndian.PutUint16(out[2*i:], l)
	}
	return out, nil
}

// constantScalar returns the bytes of a constant page's scalar in the form
// vals.scalar holds it. An inline value is the value's little-endian bytes
// (a boolean: one byte whose bit 0 is the value); a value buffer holds the
// Arrow buffers of a one-value array:
//
//	u32 n | u32 len[n] | the n buffers' bytes, unpadded
//
// (strings and binary: i32 or i64 offsets [start, end], then the bytes).
func constantScalar(li *leafInfo, inline, valueBuf []byte) ([]byte, error) {
	var parts [][]byte
	if inline == nil {
		if len(valueBuf) < 4 {
			return nil, corruptf("constant value buffer of %d bytes", len(valueBuf))
		}
		n := binary.LittleEndian.Uint32(valueBuf)
		if n == 0 || n > 3 || uint64(len(valueBuf)) < 4+4*uint64(n) {
			return nil, corruptf("constant value buffer with %d parts in %d bytes", n, len(valueBuf))
		}
		at := 4 + 4*int(n)
		for i := 0; i < int(n); i++ {
			l := uint64(binary.LittleEndian.Uint32(valueBuf[4+4*i:]))
			if l > uint64(len(valueBuf)-at) {
				return nil, corruptf("constant value part %d of %d bytes overruns its buffer", i, l)
			}
			parts = append(parts, valueBuf[at:at+int(l)])
			at += int(l)
		}
		if at != len(valueBuf) {
			return nil, corruptf("constant value buffer has %d bytes after its parts", len(valueBuf)-at)
		}
	}
	switch li.kind {
	case kindFixed:
		v := inline
		if inline == nil {
			if len(parts) != 1 {
				return nil, corruptf("constant value of %d parts for fixed-width field %q", len(parts), li.field.Name)
			}
			v = parts[0]
		}
		if len(v) != li.width || li.dim > 0 {
			return nil, corruptf("constant value of %d bytes for field %q of type %v", len(v), li.field.Name, li.field.Type)
		}
		return v, nil
	case kindBool:
		v := inline
		if inline == nil {
			if len(parts) != 1 {
				return nil, corruptf("constant value of %d parts for boolean field %q", len(parts), li.field.Name)
			}
			v = parts[0]
		}
		if len(v) != 1 {
			return nil, corruptf("constant boolean of %d bytes", len(v))
		}
		return []byte{v[0] & 1}, nil
	case kindVar:
		if inline != nil || len(parts) != 2 {
			return nil, corruptf("constant value for variable-width field %q is not an offsets and a data buffer", li.field.Name)
		}
		offs, data := parts[0], parts[1]
		var lo, hi uint64
		switch len(offs) {
		case 8:
			lo, hi = uint64(binary.LittleEndian.Uint32(offs)), uint64(binary.LittleEndian.Uint32(offs[4:]))
		case 16:
			lo, hi = binary.LittleEndian.Uint64(offs), binary.LittleEndian.Uint64(offs[8:])
		default:
			return nil, corruptf("constant value with %d bytes of offsets", len(offs))
		}
		if lo > hi || hi > uint64(len(data)) {
			return nil, corruptf("constant value offsets [%d, %d] outside %d bytes", lo, hi, len(data))
		}
		return data[lo:hi], nil
	}
	return nil, unsupportedf("constant values of kind %v", li.kind)
}

// maxExpand bounds the bytes a constant expands to in one batch.
const maxExpand = 1 << 34

// expand returns the n values of a constant vals with their buffers made.
func (v *vals) expand() (vals, error) {
	n := v.n
	out := vals{kind: v.kind, width: v.width, n: n, dim: v.dim}
	switch v.kind {
	case kindFixed:
		if n > maxExpand/max(v.width, 1) {
			return vals{}, unsupportedf("constant of %d bytes repeated %d times", v.width, n)
		}
		out.data = alignedBytes(n*v.width, 0)
		fillRepeat(out.data, v.scalar)
	case kindBool:
		out.data = make([]byte, (n+7)/8)
		if v.scalar[0] != 0 {
			for i := range out.data {
				out.data[i] = 0xff
			}
		}
	case kindVar:
		l := len(v.scalar)
		if l > 0 && n > maxExpand/l {
			return vals{}, unsupportedf("constant of %d bytes repeated %d times", l, n)
		}
		out.offs = make([]int64, n+1)
		for i := range out.offs {
			out.offs[i] = int64(i * l)
		}
		out.data = make([]byte, n*l)
		fillRepeat(out.data, v.scalar)
	}
	return out, nil
}

// fillRepeat fills dst with copies of v (len(dst) a multiple of len(v)).
func fillRepeat(dst, v []byte) {
	if len(v) == 0 || len(dst) == 0 {
		return
	}
	k := copy(dst, v)
	for k < len(dst) {
		k += copy(dst[k:], dst[:k])
	}
}
