package lancefile

import "encoding/binary"

// Codecs new in format 2.2.

// rleBlock splits the block form of Rle, which 2.2 writers use for
// repetition and definition levels:
//
//	u64 V | V bytes: V/w run values of w bytes | one u8 run length per value
func rleBlock(buf []byte, w int) (values, lengths []byte, err error) {
	if len(buf) < 8 {
		return nil, nil, corruptf("RLE block of %d bytes", len(buf))
	}
	v := binary.LittleEndian.Uint64(buf)
	if v > uint64(len(buf)-8) || v%uint64(w) != 0 {
		return nil, nil, corruptf("RLE block claims %d bytes of %d-byte values in %d bytes", v, w, len(buf))
	}
	values, lengths = buf[8:8+v], buf[8+v:]
	if uint64(len(lengths)) != v/uint64(w) {
		return nil, nil, corruptf("RLE block with %d run values and %d run lengths", v/uint64(w), len(lengths))
	}
	return values, lengths, nil
}

// rleTotal is the number of values an RLE block expands to.
func rleTotal(buf []byte, w int) (int, error) {
	_, lengths, err := rleBlock(buf, w)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, l := range lengths {
		n += int(l)
	}
	return n, nil
}

// decodeRleBlock expands an RLE block that must hold exactly n values of w
// bytes.
func decodeRleBlock(buf []byte, n, w int) (vals, error) {
	values, lengths, err := rleBlock(buf, w)
	if err != nil {
		return vals{}, err
	}
	total := 0
	for _, l := range lengths {
		total += int(l)
	}
	if total != n {
		return vals{}, corruptf("RLE runs cover %d values, want %d", total, n)
	}
	b := newValBuilder(kindFixed, w, n)
	if err := decodeRle(values, lengths, n, w, b); err != nil {
		return vals{}, err
	}
	return b.finish(), nil
}

// wrappedLevels returns the level count of a chunk of the u32 grammar. Its
// header keeps a u16 count, which wraps when a chunk has more than 65,535
// levels; lance then takes the count of the RLE-compressed levels, provided
// it agrees with the header modulo 65,536.
func wrappedLevels(header int, repC *codec, repB []byte, defC *codec, defB []byte) (int, error) {
	for _, l := range []struct {
		c *codec
		b []byte
	}{{repC, repB}, {defC, defB}} {
		if l.c == nil || l.c.kind != cRle {
			continue
		}
		n, err := rleTotal(l.b, l.c.width)
		if err != nil {
			return 0, err
		}
		if n != header {
			if n%65536 != header {
				return 0, corruptf("RLE levels count %d, the chunk header %d, not congruent modulo 65536", n, header)
			}
			return n, nil
		}
	}
	return header, nil
}
