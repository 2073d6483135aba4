package lancefile

import (
	"encoding/binary"
	"fmt"

	"github.com/kv0/kv0/core/encoding/bitpack"
	"github.com/kv0/kv0/core/internal/lancepb/enc21pb"
)

// Compressive encodings of Lance 2.1 (CompressiveEncoding in
// encodings_v2_1.proto), in the three roles a page uses them:
//
//   - mini-block: decode the buffers of one chunk (Flat, Variable,
//     InlineBitpacking, Fsst, Rle, General, Constant, FixedSizeList);
//   - block: decode one whole buffer (rep/def levels of a chunk or of a
//     constant page, the dictionary of a page: Flat, InlineBitpacking,
//     OutOfLineBitpacking, Variable in its block form, Constant, General,
//     and from 2.2 Rle in its block form);
//   - per value: the values of a full-zip page (Flat, FixedSizeList,
//     Constant for fixed width; Variable, Fsst, General for variable width).
//
// A description is compiled once per page into a codec; decoding a chunk
// then costs one call, never one per value.

// Byte layouts, all little-endian:
//
//	Flat{b}               n values of b bits (b = 1: bitmap, LSB first)
//	InlineBitpacking{T}   blocks of 1024 values: [T-bit word w][1024*w/8 bytes]
//	                      (FastLanes layout; the last block is zero-padded)
//	OutOfLineBitpacking   whole blocks of 1024*w/8 bytes at width w (from its
//	                      Flat values), then a tail packed as a padded block or
//	                      stored raw as T-bit words (told apart by length)
//	Variable, mini-block  (k+1) u32|u64 offsets from the buffer start, bytes
//	Variable, block       u32|u64 width (32|64), u32|u64 start of bytes,
//	                      (k+1) offsets relative to the bytes, bytes
//	Rle, mini-block       buffer 0: run values (Flat); buffer 1: u8 run lengths
//	Rle, block            u64 V, V bytes of run values (Flat), u8 run lengths
//	ByteStreamSplit{w}    n values of w bytes as w streams of n bytes: byte j
//	                      of value i at j*n + i (chunk-local)
//	General               the inner encoding's first buffer, compressed
//	                      (zstd: u64 length + frame; lz4: u32 length + block)

// maxChunkItems bounds the values a single mini-block chunk may claim.
const maxChunkItems = 1 << 16

// v21Error is an error of the 2.1 decoders: a message that matches a
// package sentinel with errors.Is without repeating its text, since
// File.pageErr prints the sentinel next to the message.
type v21Error struct {
	sentinel error
	msg      string
}

func (e *v21Error) Error() string { return e.msg }
func (e *v21Error) Unwrap() error { return e.sentinel }

func unsupportedf(format string, args ...any) error {
	return &v21Error{ErrUnsupportedEncoding, fmt.Sprintf(format, args...)}
}

func corruptf(format string, args ...any) error {
	return &v21Error{ErrCorrupt, fmt.Sprintf(format, args...)}
}

// encName names the variant of a CompressiveEncoding for error messages.
func encName(e *enc21pb.CompressiveEncoding) string {
	switch c := e.GetCompression().(type) {
	case nil:
		return "empty encoding"
	case *enc21pb.CompressiveEncoding_Flat:
		return fmt.Sprintf("Flat(%d)", c.Flat.GetBitsPerValue())
	case *enc21pb.CompressiveEncoding_Variable:
		return "Variable"
	case *enc21pb.CompressiveEncoding_Constant:
		return "Constant"
	case *enc21pb.CompressiveEncoding_OutOfLineBitpacking:
		return "OutOfLineBitpacking"
	case *enc21pb.CompressiveEncoding_InlineBitpacking:
		return "InlineBitpacking"
	case *enc21pb.CompressiveEncoding_Fsst:
		return "Fsst"
	case *enc21pb.CompressiveEncoding_Dictionary:
		return "Dictionary"
	case *enc21pb.CompressiveEncoding_Rle:
		return "Rle"
	case *enc21pb.CompressiveEncoding_ByteStreamSplit:
		return "ByteStreamSplit"
	case *enc21pb.CompressiveEncoding_General:
		return "General"
	case *enc21pb.CompressiveEncoding_FixedSizeList:
		return "FixedSizeList"
	case *enc21pb.CompressiveEncoding_PackedStruct:
		return "PackedStruct"
	case *enc21pb.CompressiveEncoding_VariablePackedStruct:
		return "VariablePackedStruct"
	}
	return fmt.Sprintf("%T", e.GetCompression())
}

// codecKind is the decoding routine of a compiled codec.
type codecKind uint8

const (
	cFlat      codecKind = iota // fixed width, plain
	cBitmap                     // Flat(1)
	cInline                     // InlineBitpacking
	cOutOfLine                  // OutOfLineBitpacking (block only)
	cVariable                   // Variable (mini-block or block form)
	cFsst                       // Fsst over an inner Variable
	cRle                        // Rle
	cGeneral                    // General over an inner codec
	cConstant                   // Constant
	cBSS                        // ByteStreamSplit over Flat values
	cVarPacked                  // VariablePackedStruct (per value; v22_struct.go)
)

// codec is a compiled CompressiveEncoding.
type codec struct {
	kind   codecKind
	out    valKind
	width  int // output bytes per value (kindFixed)
	bits   int // cInline/cOutOfLine: word width T; cVariable: offset width
	packed int // cOutOfLine: packed width
	// comp is the buffer compression of Flat data or of a General wrapper.
	comp     enc21pb.CompressionScheme
	inner    *codec
	fsst     fsstTable
	constant []byte
	// fslDim and fslValid describe a FixedSizeList whose items may be null:
	// each value then comes with dim validity bits.
	fslDim   int
	fslValid bool
	// packedWidths are the member widths (bytes) of a PackedStruct, which
	// decodes as Flat values of their total width.
	packedWidths []int
	vp           *varPacked // cVarPacked
}

type codecRole uint8

const (
	roleMiniBlock codecRole = iota
	roleBlock
	rolePerValue
)

func (r codecRole) String() string {
	return [...]string{"mini-block", "block", "per-value"}[r]
}

// compileCodec compiles e for the given role.
func compileCodec(e *enc21pb.CompressiveEncoding, role codecRole) (*codec, error) {
	return compileCodecDepth(e, role, 0)
}

func compileCodecDepth(e *enc21pb.CompressiveEncoding, role codecRole, depth int) (*codec, error) {
	if depth > 4 {
		return nil, unsupportedf("compressive encodings nested too deeply")
	}
	if e == nil || e.GetCompression() == nil {
		return nil, corruptf("missing compressive encoding")
	}
	bad := func() error { return unsupportedf("%s as a %s encoding", encName(e), role) }
	switch c := e.GetCompression().(type) {
	case *enc21pb.CompressiveEncoding_Flat:
		b := c.Flat.GetBitsPerValue()
		cd := &codec{kind: cFlat, out: kindFixed}
		if c.Flat.Data != nil {
			s, err := bufferScheme(c.Flat.Data)
			if err != nil {
				return nil, err
			}
			cd.comp = s
		}
		switch {
		case b == 1:
			cd.kind, cd.out = cBitmap, kindBool
		case b > 0 && b%8 == 0 && b <= 1<<20:
			cd.width = int(b / 8)
		default:
			return nil, unsupportedf("Flat with %d bits per value", b)
		}
		return cd, nil
	case *enc21pb.CompressiveEncoding_FixedSizeList:
		// A fixed-size list of plain items without validity is plain fixed
		// width data.
		fsl := c.FixedSizeList
		dim := fsl.GetItemsPerValue()
		inner, err := compileCodecDepth(fsl.GetValues(), role, depth+1)
		if err != nil {
			return nil, err
		}
		if inner.kind != cFlat || inner.comp != 0 || dim == 0 || dim > 1<<20 {
			return nil, unsupportedf("FixedSizeList of %s with %d items", encName(fsl.GetValues()), dim)
		}
		return &codec{kind: cFlat, out: kindFixed, width: inner.width * int(dim), fslDim: int(dim), fslValid: fsl.GetHasValidity()}, nil
	case *enc21pb.CompressiveEncoding_PackedStruct:
		ps := c.PackedStruct
		inner, err := compileCodecDepth(ps.GetValues(), role, depth+1)
		if err != nil {
			return nil, err
		}
		total := 0
		var widths []int
		for _, b := range ps.GetBitsPerValue() {
			if b == 0 || b%8 != 0 || b > 1<<12 {
				return nil, unsupportedf("PackedStruct member of %d bits", b)
			}
			widths = append(widths, int(b/8))
			total += int(b / 8)
		}
		if inner.kind != cFlat || inner.comp != 0 || inner.width != total || inner.fslDim != 0 || len(widths) == 0 {
			return nil, unsupportedf("PackedStruct of %d bytes over %s", total, encName(ps.GetValues()))
		}
		return &codec{kind: cFlat, out: kindFixed, width: total, packedWidths: widths}, nil
	case *enc21pb.CompressiveEncoding_VariablePackedStruct:
		if role != rolePerValue {
			return nil, bad()
		}
		return compileVarPacked(c.VariablePackedStruct)
	case *enc21pb.CompressiveEncoding_InlineBitpacking:
		if role == rolePerValue {
			return nil, bad()
		}
		if c.InlineBitpacking.Values != nil {
			return nil, unsupportedf("InlineBitpacking with buffer compression")
		}
		t := int(c.InlineBitpacking.GetUncompressedBitsPerValue())
		if t != 8 && t != 16 && t != 32 && t != 64 {
			return nil, unsupportedf("InlineBitpacking of %d-bit values", t)
		}
		return &codec{kind: cInline, out: kindFixed, width: t / 8, bits: t}, nil
	case *enc21pb.CompressiveEncoding_OutOfLineBitpacking:
		if role != roleBlock {
			return nil, bad()
		}
		t := int(c.OutOfLineBitpacking.GetUncompressedBitsPerValue())
		if t != 8 && t != 16 && t != 32 && t != 64 {
			return nil, unsupportedf("OutOfLineBitpacking of %d-bit values", t)
		}
		f := c.OutOfLineBitpacking.GetValues().GetFlat()
		if f == nil || f.Data != nil {
			return nil, unsupportedf("OutOfLineBitpacking values encoded as %s", encName(c.OutOfLineBitpacking.GetValues()))
		}
		w := int(f.GetBitsPerValue())
		if w > t {
			return nil, corruptf("OutOfLineBitpacking packs %d-bit values at %d bits", t, w)
		}
		return &codec{kind: cOutOfLine, out: kindFixed, width: t / 8, bits: t, packed: w}, nil
	case *enc21pb.CompressiveEncoding_Variable:
		f := c.Variable.GetOffsets().GetFlat()
		if f == nil || (f.GetBitsPerValue() != 32 && f.GetBitsPerValue() != 64) || f.Data != nil {
			return nil, unsupportedf("Variable with offsets encoded as %s", encName(c.Variable.GetOffsets()))
		}
		if c.Variable.Values != nil {
			return nil, unsupportedf("Variable with buffer compression")
		}
		return &codec{kind: cVariable, out: kindVar, bits: int(f.GetBitsPerValue())}, nil
	case *enc21pb.CompressiveEncoding_Fsst:
		if role == roleBlock {
			return nil, bad()
		}
		t, err := parseFsst(c.Fsst.GetSymbolTable())
		if err != nil {
			return nil, err
		}
		cd := &codec{kind: cFsst, out: kindVar, fsst: t}
		if role == rolePerValue && c.Fsst.GetValues() == nil {
			// Per-value FSST stores the compressed strings directly.
			cd.inner = &codec{kind: cVariable, out: kindVar, bits: 32}
			return cd, nil
		}
		inner, err := compileCodecDepth(c.Fsst.GetValues(), role, depth+1)
		if err != nil {
			return nil, err
		}
		if inner.kind != cVariable {
			return nil, unsupportedf("Fsst over %s", encName(c.Fsst.GetValues()))
		}
		cd.inner = inner
		return cd, nil
	case *enc21pb.CompressiveEncoding_Rle:
		// Mini-block RLE has two buffers (values, run lengths); block RLE
		// (2.2's level compression) is one buffer (v22_codec.go).
		if role == rolePerValue {
			return nil, bad()
		}
		vf := c.Rle.GetValues().GetFlat()
		lf := c.Rle.GetRunLengths().GetFlat()
		if vf == nil || lf == nil || lf.GetBitsPerValue() != 8 || vf.Data != nil || lf.Data != nil {
			return nil, unsupportedf("Rle with values %s and run lengths %s", encName(c.Rle.GetValues()), encName(c.Rle.GetRunLengths()))
		}
		b := vf.GetBitsPerValue()
		if b != 8 && b != 16 && b != 32 && b != 64 {
			return nil, unsupportedf("Rle of %d-bit values", b)
		}
		return &codec{kind: cRle, out: kindFixed, width: int(b / 8)}, nil
	case *enc21pb.CompressiveEncoding_General:
		s, err := bufferScheme(c.General.GetCompression())
		if err != nil {
			return nil, err
		}
		if role == rolePerValue {
			// Each value is compressed on its own; what is inside is plain
			// bytes (the inner description names the offsets only).
			return &codec{kind: cGeneral, out: kindVar, comp: s}, nil
		}
		inner, err := compileCodecDepth(c.General.GetValues(), role, depth+1)
		if err != nil {
			return nil, err
		}
		return &codec{kind: cGeneral, out: inner.out, width: inner.width, comp: s, inner: inner}, nil
	case *enc21pb.CompressiveEncoding_ByteStreamSplit:
		if role != roleMiniBlock {
			return nil, bad()
		}
		f := c.ByteStreamSplit.GetValues().GetFlat()
		if f == nil || f.Data != nil || f.GetBitsPerValue()%8 != 0 || f.GetBitsPerValue() < 8 || f.GetBitsPerValue() > 64 {
			return nil, unsupportedf("ByteStreamSplit of %s", encName(c.ByteStreamSplit.GetValues()))
		}
		return &codec{kind: cBSS, out: kindFixed, width: int(f.GetBitsPerValue() / 8)}, nil
	case *enc21pb.CompressiveEncoding_Constant:
		v := c.Constant.GetValue()
		cd := &codec{kind: cConstant, out: kindFixed, width: len(v), constant: v}
		if len(v) == 0 {
			cd.width = 0
		}
		return cd, nil
	}
	return nil, bad()
}

func bufferScheme(bc *enc21pb.BufferCompression) (enc21pb.CompressionScheme, error) {
	switch s := bc.GetScheme(); s {
	case enc21pb.CompressionScheme_COMPRESSION_ALGORITHM_ZSTD, enc21pb.CompressionScheme_COMPRESSION_ALGORITHM_LZ4:
		return s, nil
	default:
		return 0, unsupportedf("buffer compression scheme %v", s)
	}
}

// decodeMiniBlock decodes the n values of one mini-block chunk from its
// buffers into b.
func (c *codec) decodeMiniBlock(bufs [][]byte, n int, b *valBuilder) error {
	switch c.kind {
	case cFlat, cBitmap, cInline, cConstant, cBSS:
		if c.fslValid {
			// Buffer 0: item validity (n*dim bits); buffer 1: the items.
			if len(bufs) < 2 {
				return corruptf("%d buffers in a fixed-size-list chunk, want 2", len(bufs))
			}
			if len(bufs[0])*8 < n*c.fslDim || b.dim != c.fslDim {
				return corruptf("item validity of %d bytes for %d lists of %d", len(bufs[0]), n, c.fslDim)
			}
			if len(bufs[1]) < n*c.width {
				return corruptf("fixed-size-list buffer of %d bytes holds fewer than %d values", len(bufs[1]), n)
			}
			b.appendItems(bufs[0], 0, n)
			copy(b.grow(n), bufs[1][:n*c.width])
			return nil
		}
		if b.dim > 0 {
			b.appendItems(nil, 0, n)
		}
		if len(bufs) < 1 && c.kind != cConstant {
			return corruptf("%d buffers in a chunk, want 1", len(bufs))
		}
		var buf []byte
		if len(bufs) > 0 {
			buf = bufs[0]
		}
		return c.decodeFixed(buf, n, b)
	case cVariable:
		if len(bufs) < 1 {
			return corruptf("no buffer in a variable-width chunk")
		}
		return decodeVarChunk(bufs[0], n, c.bits/8, b)
	case cFsst:
		if len(bufs) < 1 {
			return corruptf("no buffer in an FSST chunk")
		}
		tmp := newValBuilder(kindVar, 0, n)
		if err := decodeVarChunk(bufs[0], n, c.inner.bits/8, tmp); err != nil {
			return err
		}
		return fsstDecodeInto(c.fsst, tmp.data, tmp.offs, b)
	case cRle:
		if len(bufs) < 2 {
			return corruptf("%d buffers in an RLE chunk, want 2", len(bufs))
		}
		return decodeRle(bufs[0], bufs[1], n, c.width, b)
	case cGeneral:
		if len(bufs) < 1 {
			return corruptf("no buffer in a compressed chunk")
		}
		raw, err := decompressBuffer(c.comp, bufs[0], maxChunkItems*max(c.width, 16)+(1<<20))
		if err != nil {
			return err
		}
		nb := append([][]byte{raw}, bufs[1:]...)
		return c.inner.decodeMiniBlock(nb, n, b)
	}
	return unsupportedf("codec %d in a mini-block chunk", c.kind)
}

// decodeFixed decodes n fixed-width (or bitmap) values from one buffer, for
// Flat, InlineBitpacking, OutOfLineBitpacking and Constant.
func (c *codec) decodeFixed(buf []byte, n int, b *valBuilder) error {
	if c.out != b.kind || (c.out == kindFixed && c.width != b.width) {
		return corruptf("%s values where %s of width %d are expected", c.out, b.kind, b.width)
	}
	switch c.kind {
	case cFlat:
		if c.comp != 0 {
			raw, err := decompressBuffer(c.comp, buf, n*c.width+64)
			if err != nil {
				return err
			}
			buf = raw
		}
		need := n * c.width
		if len(buf) < need {
			return corruptf("flat buffer of %d bytes holds fewer than %d values of %d bytes", len(buf), n, c.width)
		}
		copy(b.grow(n), buf[:need])
		return nil
	case cBitmap:
		if c.comp != 0 {
			raw, err := decompressBuffer(c.comp, buf, (n+7)/8+64)
			if err != nil {
				return err
			}
			buf = raw
		}
		if len(buf)*8 < n {
			return corruptf("bitmap of %d bytes holds fewer than %d values", len(buf), n)
		}
		b.appendBits(buf, 0, n)
		return nil
	case cInline:
		return unpackInline(buf, n, c.bits, b)
	case cBSS:
		w := c.width
		if len(buf) < n*w {
			return corruptf("byte-stream-split buffer of %d bytes holds fewer than %d values of %d bytes", len(buf), n, w)
		}
		dst := b.grow(n)
		for j := 0; j < w; j++ {
			stream := buf[j*n : (j+1)*n]
			for i, v := range stream {
				dst[i*w+j] = v
			}
		}
		return nil
	case cOutOfLine:
		return unpackOutOfLine(buf, n, c.bits, c.packed, b)
	case cConstant:
		if n > maxChunkItems*16 {
			return corruptf("constant expands to %d values", n)
		}
		dst := b.grow(n)
		if c.width > 0 {
			for i := 0; i < n; i++ {
				copy(dst[i*c.width:], c.constant)
			}
		} else {
			clear(dst)
		}
		return nil
	case cGeneral:
		raw, err := decompressBuffer(c.comp, buf, n*max(c.width, 1)+(1<<20))
		if err != nil {
			return err
		}
		return c.inner.decodeFixed(raw, n, b)
	}
	return unsupportedf("codec %d for fixed-width values", c.kind)
}

// unpackInline decodes InlineBitpacking: blocks of [T-bit width word][packed
// block], as many as n values need.
func unpackInline(buf []byte, n, T int, b *valBuilder) error {
	wb := T / 8
	var tmp []byte
	for n > 0 {
		if len(buf) < wb {
			return corruptf("bit-packed block truncated before its width word")
		}
		w := readUint(buf, wb)
		if w > uint64(T) {
			return corruptf("bit width %d for %d-bit values", w, T)
		}
		pb := bitpack.PackedBytes(int(w))
		if len(buf)-wb < pb {
			return corruptf("bit-packed block of width %d needs %d bytes, has %d", w, pb, len(buf)-wb)
		}
		src := buf[wb : wb+pb]
		buf = buf[wb+pb:]
		k := min(n, bitpack.BlockLen)
		if k == bitpack.BlockLen {
			if err := bitpack.UnpackBlock(T, int(w), b.grow(k), src); err != nil {
				return corruptf("%v", err)
			}
		} else {
			if tmp == nil {
				tmp = alignedBytes(bitpack.BlockLen*wb, 0)
			}
			if err := bitpack.UnpackBlock(T, int(w), tmp, src); err != nil {
				return corruptf("%v", err)
			}
			copy(b.grow(k), tmp)
		}
		n -= k
	}
	return nil
}

// unpackOutOfLine decodes OutOfLineBitpacking at packed width w: whole
// blocks, then a tail that is either raw T-bit words or one padded block.
func unpackOutOfLine(buf []byte, n, T, w int, b *valBuilder) error {
	wb := T / 8
	pb := bitpack.PackedBytes(w)
	whole, tail := n/bitpack.BlockLen, n%bitpack.BlockLen
	if pb > 0 && whole > len(buf)/pb {
		return corruptf("out-of-line bit-packed buffer of %d bytes for %d values at width %d", len(buf), n, w)
	}
	for i := 0; i < whole; i++ {
		if err := bitpack.UnpackBlock(T, w, b.grow(bitpack.BlockLen), buf[i*pb:(i+1)*pb]); err != nil {
			return corruptf("%v", err)
		}
	}
	if tail == 0 {
		return nil
	}
	rest := buf[whole*pb:]
	switch {
	case len(rest) == tail*wb:
		copy(b.grow(tail), rest)
	case len(rest) >= pb:
		tmp := alignedBytes(bitpack.BlockLen*wb, 0)
		if err := bitpack.UnpackBlock(T, w, tmp, rest[:pb]); err != nil {
			return corruptf("%v", err)
		}
		copy(b.grow(tail), tmp)
	default:
		return corruptf("out-of-line bit-packed tail of %d bytes for %d values", len(rest), tail)
	}
	return nil
}

// decodeVarChunk decodes the mini-block form of Variable: (n+1) offsets of
// ob bytes, relative to the buffer start, then the bytes.
func decodeVarChunk(buf []byte, n, ob int, b *valBuilder) error {
	if b.kind != kindVar {
		return corruptf("variable-width values where %s values are expected", b.kind)
	}
	if n+1 > len(buf)/ob {
		return corruptf("variable-width chunk of %d bytes cannot hold %d offsets", len(buf), n+1)
	}
	prev := readUint(buf, ob)
	if prev < uint64((n+1)*ob) || prev > uint64(len(buf)) {
		return corruptf("variable-width chunk data starts at %d, outside [%d, %d]", prev, (n+1)*ob, len(buf))
	}
	first := prev
	last := readUint(buf[n*ob:], ob)
	if last < first || last > uint64(len(buf)) {
		return corruptf("variable-width chunk data ends at %d, outside [%d, %d]", last, first, len(buf))
	}
	base := int64(len(b.data)) - int64(first)
	b.data = append(b.data, buf[first:last]...)
	for i := 1; i <= n; i++ {
		o := readUint(buf[i*ob:], ob)
		if o < prev || o > last {
			return corruptf("variable-width offset %d outside [%d, %d]", o, prev, last)
		}
		b.offs = append(b.offs, int64(o)+base)
		prev = o
	}
	b.n += n
	return nil
}

// decodeRle expands run values and u8 run lengths into n values of w bytes.
func decodeRle(values, lengths []byte, n, w int, b *valBuilder) error {
	runs := len(values) / w
	if len(values)%w != 0 || runs != len(lengths) {
		return corruptf("RLE chunk with %d value bytes and %d run lengths", len(values), len(lengths))
	}
	dst := b.grow(n)
	pos := 0
	for r := 0; r < runs && pos < n; r++ {
		k := min(int(lengths[r]), n-pos)
		v := values[r*w : (r+1)*w]
		switch w {
		case 8:
			fill64(dst[8*pos:8*(pos+k)], binary.LittleEndian.Uint64(v))
		case 4:
			fill32(dst[4*pos:4*(pos+k)], binary.LittleEndian.Uint32(v))
		default:
			for i := pos; i < pos+k; i++ {
				copy(dst[i*w:(i+1)*w], v)
			}
		}
		pos += k
	}
	if pos != n {
		return corruptf("RLE runs cover %d values, want %d", pos, n)
	}
	return nil
}

// decodeBlock decodes a whole buffer of n values with a block codec (levels
// and dictionaries).
func (c *codec) decodeBlock(buf []byte, n int) (vals, error) {
	switch c.kind {
	case cVariable:
		return decodeVarBlock(buf, n)
	case cGeneral:
		raw, err := decompressBuffer(c.comp, buf, 64*len(buf)+(1<<20))
		if err != nil {
			return vals{}, err
		}
		return c.inner.decodeBlock(raw, n)
	case cRle:
		return decodeRleBlock(buf, n, c.width)
	case cFlat, cBitmap, cInline, cOutOfLine, cConstant:
		if err := c.checkBlockCount(buf, n); err != nil {
			return vals{}, err
		}
		b := newValBuilder(c.out, c.width, n)
		if err := c.decodeFixed(buf, n, b); err != nil {
			return vals{}, err
		}
		return b.finish(), nil
	}
	return vals{}, unsupportedf("codec %d as a block encoding", c.kind)
}

// checkBlockCount rejects value counts the buffer cannot justify before
// anything is allocated.
func (c *codec) checkBlockCount(buf []byte, n int) error {
	if n < 0 {
		return corruptf("negative value count")
	}
	limit := 0
	switch c.kind {
	case cFlat:
		limit = len(buf) / max(c.width, 1)
		if c.comp != 0 {
			limit = 64*len(buf) + 1<<16
		}
	case cBitmap:
		limit = len(buf) * 8
	case cInline:
		limit = (len(buf)/(c.bits/8) + 1) * bitpack.BlockLen
	case cOutOfLine:
		limit = (len(buf)/max(1, bitpack.PackedBytes(c.packed)) + 1) * bitpack.BlockLen
		limit = max(limit, len(buf)/(c.bits/8))
	case cConstant:
		limit = 1 << 24
	}
	if n > limit {
		return corruptf("%d values cannot come from %d bytes", n, len(buf))
	}
	return nil
}

// decodeVarBlock decodes the block form of Variable (dictionaries).
func decodeVarBlock(buf []byte, n int) (vals, error) {
	if len(buf) < 8 {
		return vals{}, corruptf("variable-width block of %d bytes", len(buf))
	}
	ob := 4
	var start uint64
	switch binary.LittleEndian.Uint32(buf) {
	case 32:
		start = uint64(binary.LittleEndian.Uint32(buf[4:]))
	case 64:
		if len(buf) < 16 {
			return vals{}, corruptf("variable-width block of %d bytes", len(buf))
		}
		ob = 8
		start = binary.LittleEndian.Uint64(buf[8:])
	default:
		return vals{}, unsupportedf("variable-width block with %d-bit offsets", binary.LittleEndian.Uint32(buf))
	}
	hdr := 2 * ob
	if start < uint64(hdr) || start > uint64(len(buf)) {
		return vals{}, corruptf("variable-width block data starts at %d of %d bytes", start, len(buf))
	}
	offBytes := buf[hdr:start]
	if n < 0 || n+1 > len(offBytes)/ob {
		return vals{}, corruptf("variable-width block with %d offset bytes for %d values", len(offBytes), n)
	}
	data := buf[start:]
	offs := make([]int64, n+1)
	for i := range offs {
		offs[i] = int64(readUint(offBytes[i*ob:], ob))
	}
	if err := checkVarOffsets(offs, len(data)); err != nil {
		return vals{}, err
	}
	return vals{kind: kindVar, n: n, data: data, offs: offs}, nil
}

// decodeLevels decodes n u16 levels of one chunk and appends them to dst.
func (c *codec) decodeLevels(buf []byte, n int, dst []uint16) ([]uint16, error) {
	if c.out != kindFixed || c.width != 2 {
		return nil, unsupportedf("levels encoded as %s values of width %d", c.out, c.width)
	}
	v, err := c.decodeBlock(buf, n)
	if err != nil {
		return nil, err
	}
	if v.n != n {
		return nil, corruptf("decoded %d levels, want %d", v.n, n)
	}
	d := v.data[:2*n]
	for i := 0; i < n; i++ {
		dst = append(dst, binary.LittleEndian.Uint16(d[2*i:]))
	}
	return dst, nil
}
