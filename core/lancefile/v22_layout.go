package lancefile

import (
	"fmt"

	"github.com/kv0/kv0/core/internal/lancepb"
	"github.com/kv0/kv0/core/internal/lancepb/enc21pb"
	"github.com/kv0/kv0/core/internal/lancepb/wktpb"
)

// Page layouts of format 2.1 and 2.2.
//
// Both versions describe pages with the lance.encodings21 messages; 2.2 adds
// fields to them (MiniBlockLayout.has_large_chunk, ConstantLayout's scalar
// and compressed levels) and allows encodings 2.1 forbids
// (VariablePackedStruct). Each file is held to its own version's rules, as
// lance checks them: a 2.1 page that uses a 2.2 field is corrupt, and a 2.2
// mini-block page must use the u32 chunk grammar.
//
// Page layouts carry no feature flags, and a field added by a later writer
// can change what the rest of the message means (2.2's ConstantLayout took
// over the field numbers of 2.1's AllNullLayout: read without its new fields
// it is an all-null page). A page whose layout or encodings hold a field kv0
// does not know is therefore refused, never decoded by ignoring the field.

// laterFields names fields that writers newer than kv0's protos use, for
// the error that refuses them.
var laterFields = map[string]map[uint64]string{
	"PageLayout":          {5: "SparseLayout, format 2.3"},
	"CompressiveEncoding": {14: "Range encoding", 15: "Delta encoding"},
}

// pageLayout decodes the page encoding of a page of a file of version v and
// checks it against that version's grammar.
func pageLayout(enc []byte, v Version) (*enc21pb.PageLayout, error) {
	var a wktpb.Any
	if err := lancepb.Unmarshal(enc, &a); err != nil {
		return nil, corruptf("page encoding: %v", err)
	}
	if a.GetTypeUrl() != "/lance.encodings21.PageLayout" {
		return nil, unsupportedf("page encoding %q in a %s file", a.GetTypeUrl(), v)
	}
	var pl enc21pb.PageLayout
	if err := lancepb.Unmarshal(a.GetValue(), &pl); err != nil {
		return nil, corruptf("page layout: %v", err)
	}
	if msg, num, ok := lancepb.UnknownField(&pl); ok {
		what := ""
		if name := laterFields[msg][num]; name != "" {
			what = " (" + name + ")"
		}
		return nil, unsupportedf("page layout has field %d of %s%s, which kv0 does not know", num, msg, what)
	}
	if err := checkLayout(&pl, v, 0); err != nil {
		return nil, err
	}
	return &pl, nil
}

// checkLayout enforces the per-version rules on a page layout.
func checkLayout(pl *enc21pb.PageLayout, v Version, depth int) error {
	if depth > 2 {
		return corruptf("page layouts nested too deeply")
	}
	v22 := v != V2_1
	switch l := pl.GetLayout().(type) {
	case *enc21pb.PageLayout_MiniBlockLayout:
		mb := l.MiniBlockLayout
		switch {
		case !v22 && mb.GetHasLargeChunk():
			return corruptf("mini-block page of a 2.1 file sets has_large_chunk, a 2.2 field")
		case v22 && !mb.GetHasLargeChunk():
			return corruptf("mini-block page of a %s file without has_large_chunk (the u32 chunk grammar is mandatory since 2.2)", v)
		}
		for _, e := range []*enc21pb.CompressiveEncoding{mb.GetRepCompression(), mb.GetDefCompression(), mb.GetValueCompression(), mb.GetDictionary()} {
			if err := checkEncoding(e, v, 0); err != nil {
				return err
			}
		}
	case *enc21pb.PageLayout_FullZipLayout:
		return checkEncoding(l.FullZipLayout.GetValueCompression(), v, 0)
	case *enc21pb.PageLayout_ConstantLayout:
		c := l.ConstantLayout
		if !v22 {
			for _, f := range []struct {
				name string
				set  bool
			}{
				{"inline_value", c.InlineValue != nil},
				{"rep_compression", c.RepCompression != nil},
				{"def_compression", c.DefCompression != nil},
				{"num_rep_values", c.NumRepValues != 0},
				{"num_def_values", c.NumDefValues != 0},
			} {
				if f.set {
					return corruptf("constant page of a 2.1 file sets %s, a 2.2 field", f.name)
				}
			}
			return nil
		}
		for _, e := range []*enc21pb.CompressiveEncoding{c.GetRepCompression(), c.GetDefCompression()} {
			if err := checkEncoding(e, v, 0); err != nil {
				return err
			}
		}
	case *enc21pb.PageLayout_BlobLayout:
		if l.BlobLayout.GetInnerLayout() == nil {
			return corruptf("blob page without an inner layout")
		}
		return checkLayout(l.BlobLayout.GetInnerLayout(), v, depth+1)
	}
	return nil
}

// checkEncoding enforces the per-version rules on a compressive encoding.
func checkEncoding(e *enc21pb.CompressiveEncoding, v Version, depth int) error {
	if e == nil {
		return nil
	}
	if depth > 8 {
		return unsupportedf("compressive encodings nested too deeply")
	}
	var kids []*enc21pb.CompressiveEncoding
	switch c := e.GetCompression().(type) {
	case *enc21pb.CompressiveEncoding_VariablePackedStruct:
		if v == V2_1 {
			return corruptf("VariablePackedStruct in a 2.1 file (a 2.2 encoding)")
		}
		for _, f := range c.VariablePackedStruct.GetFields() {
			kids = append(kids, f.GetValue())
		}
	case *enc21pb.CompressiveEncoding_Variable:
		kids = append(kids, c.Variable.GetOffsets())
	case *enc21pb.CompressiveEncoding_OutOfLineBitpacking:
		kids = append(kids, c.OutOfLineBitpacking.GetValues())
	case *enc21pb.CompressiveEncoding_Fsst:
		kids = append(kids, c.Fsst.GetValues())
	case *enc21pb.CompressiveEncoding_Dictionary:
		kids = append(kids, c.Dictionary.GetIndices(), c.Dictionary.GetItems())
	case *enc21pb.CompressiveEncoding_Rle:
		kids = append(kids, c.Rle.GetValues(), c.Rle.GetRunLengths())
	case *enc21pb.CompressiveEncoding_ByteStreamSplit:
		kids = append(kids, c.ByteStreamSplit.GetValues())
	case *enc21pb.CompressiveEncoding_General:
		kids = append(kids, c.General.GetValues())
	case *enc21pb.CompressiveEncoding_FixedSizeList:
		kids = append(kids, c.FixedSizeList.GetValues())
	case *enc21pb.CompressiveEncoding_PackedStruct:
		kids = append(kids, c.PackedStruct.GetValues())
	}
	for _, k := range kids {
		if err := checkEncoding(k, v, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// versionError refuses a file's footer version.
func versionError(key string, major, minor int) error {
	msg := fmt.Sprintf("format %d.%d (kv0 reads 2.0, 2.1 and 2.2)", major, minor)
	switch {
	case major == 0:
		// Lance calls every footer version before 0.3 the 0.1 ("legacy") format.
		msg = fmt.Sprintf("format 0.1 (legacy, file version %d.%d; kv0 reads 2.0, 2.1 and 2.2)", major, minor)
	case major == 2 && minor == 3:
		msg = "format 2.3 (lance's unstable \"next\" format; kv0 reads 2.0, 2.1 and 2.2)"
	}
	return &FormatError{File: key, Column: -1, Page: -1, Offset: -1, Err: ErrUnsupportedVersion, Msg: msg}
}
