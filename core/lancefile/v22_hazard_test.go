package lancefile

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/kv0/kv0/core/internal/lancepb"
	"github.com/kv0/kv0/core/internal/lancepb/enc21pb"
	"github.com/kv0/kv0/core/internal/lancepb/wktpb"
	"github.com/kv0/kv0/core/store"
)

// Each file is read by its own version's rules, and a page layout kv0 does
// not fully understand is refused: these tests change real pages of the
// lance 12 tables (their layout protobufs, or the version of their file)
// and check the error.

// fieldOfColumn returns the top-level field of lt whose leaf or packed
// struct is column col.
func (lt *lanceTable) fieldOfColumn(t *testing.T, col int) *Field {
	t.Helper()
	for _, fl := range lt.schema.Fields {
		found := false
		fl.Walk(func(x *Field) {
			if c, ok := lt.columnOf[x.ID]; ok && c == col {
				found = true
			}
		})
		if found {
			return fl
		}
	}
	t.Fatalf("no field has column %d", col)
	return nil
}

// readField reads every row of one top-level field and returns the first
// error.
func (lt *lanceTable) readField(fl *Field) error {
	r, err := lt.f.NewReader([]*Field{fl}, lt.columnOf, ReadOptions{})
	if err != nil {
		return err
	}
	for {
		if _, err := r.Next(context.Background(), 1<<20); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// pageLayoutOf returns the layout of page 0 of column col.
func (lt *lanceTable) pageLayoutOf(t *testing.T, col int) *enc21pb.PageLayout {
	t.Helper()
	pl, err := pageLayout(lt.f.columns[col].pages[0].enc, lt.f.version)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// setPageLayout replaces the layout of page 0 of column col.
func (lt *lanceTable) setPageLayout(t *testing.T, col int, pl *enc21pb.PageLayout) {
	t.Helper()
	v, err := pl.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	enc, err := (&wktpb.Any{TypeUrl: "/lance.encodings21.PageLayout", Value: v}).MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	lt.f.columns[col].pages[0].enc = enc
}

// withUnknownField returns a copy of m decoded with an extra varint field.
func withUnknownField[M interface {
	MarshalVT() ([]byte, error)
	UnmarshalVT([]byte) error
}](t *testing.T, m M, fresh M, num protowire.Number) M {
	t.Helper()
	b, err := m.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	if err := fresh.UnmarshalVT(protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), 1)); err != nil {
		t.Fatal(err)
	}
	return fresh
}

// checkErr checks that err matches sentinel and names the file, the column
// and every string of want.
func checkErr(t *testing.T, lt *lanceTable, fl *Field, err, sentinel error, want ...string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("got %v, want %v", err, sentinel)
	}
	for _, w := range append([]string{lt.f.Key(), `column "` + fl.Name + `"`}, want...) {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q does not say %q", err, w)
		}
	}
}

// TestV22FieldsInA21File: a 2.1 file whose pages use 2.2's fields or
// encodings is corrupt, and so is a 2.2 mini-block page without the u32
// chunk grammar.
func TestV22FieldsInA21File(t *testing.T) {
	dir := v22DataDir()
	for _, tc := range []struct {
		name, table string
		col         int
		version     Version
		mutate      func(pl *enc21pb.PageLayout)
		want        string
	}{
		{"has_large_chunk in 2.1", "packed21", 1, V2_1,
			func(pl *enc21pb.PageLayout) { pl.GetMiniBlockLayout().HasLargeChunk = true }, "sets has_large_chunk"},
		{"2.2 mini-block page without has_large_chunk", "types", 1, V2_2,
			func(pl *enc21pb.PageLayout) { pl.GetMiniBlockLayout().HasLargeChunk = false }, "without has_large_chunk"},
		// consts column 1: ci64, a constant page with an inline value.
		{"inline_value in 2.1", "consts", 1, V2_1, nil, "sets inline_value"},
		// consts column 34: an all-null list page with compressed levels.
		{"compressed levels in 2.1", "consts", 34, V2_1, nil, "sets rep_compression"},
		{"level counts in 2.1", "consts", 34, V2_1, func(pl *enc21pb.PageLayout) {
			c := pl.GetConstantLayout()
			c.RepCompression, c.DefCompression = nil, nil
		}, "sets num_rep_values"},
		// packed column 2: pv, VariablePackedStruct rows.
		{"VariablePackedStruct in 2.1", "packed", 2, V2_1, nil, "VariablePackedStruct in a 2.1 file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lt := openLanceTable(t, dir, tc.table)
			fl := lt.fieldOfColumn(t, tc.col)
			if err := lt.readField(fl); err != nil {
				t.Fatalf("unchanged: %v", err)
			}
			if tc.mutate != nil {
				pl := lt.pageLayoutOf(t, tc.col)
				tc.mutate(pl)
				lt.setPageLayout(t, tc.col, pl)
			}
			lt.f.version = tc.version
			checkErr(t, lt, fl, lt.readField(fl), ErrCorrupt, tc.want)
		})
	}
}

// TestV22UnknownLayoutFields: a page layout or encoding message with a
// field kv0 does not know is refused as unsupported, naming the file and
// the column, never decoded as if the field were not there. (2.2's
// ConstantLayout reuses the field numbers of 2.1's AllNullLayout: a reader
// that skips unknown fields reads its constant as nulls.)
func TestV22UnknownLayoutFields(t *testing.T) {
	dir := v22DataDir()
	for _, tc := range []struct {
		name, table string
		col         int
		mutate      func(t *testing.T, pl *enc21pb.PageLayout) *enc21pb.PageLayout
		want        []string
	}{
		{"PageLayout field 5 (SparseLayout)", "types", 1, func(t *testing.T, pl *enc21pb.PageLayout) *enc21pb.PageLayout {
			return withUnknownField(t, pl, &enc21pb.PageLayout{}, 5)
		}, []string{"field 5 of PageLayout", "SparseLayout, format 2.3"}},
		{"ConstantLayout field 11", "consts", 1, func(t *testing.T, pl *enc21pb.PageLayout) *enc21pb.PageLayout {
			c := pl.GetConstantLayout()
			pl.Layout = &enc21pb.PageLayout_ConstantLayout{ConstantLayout: withUnknownField(t, c, &enc21pb.ConstantLayout{}, 11)}
			return pl
		}, []string{"field 11 of ConstantLayout"}},
		{"MiniBlockLayout field 11", "dict", 4, func(t *testing.T, pl *enc21pb.PageLayout) *enc21pb.PageLayout {
			mb := pl.GetMiniBlockLayout()
			pl.Layout = &enc21pb.PageLayout_MiniBlockLayout{MiniBlockLayout: withUnknownField(t, mb, &enc21pb.MiniBlockLayout{}, 11)}
			return pl
		}, []string{"field 11 of MiniBlockLayout"}},
		{"CompressiveEncoding field 14 (Range) as a dictionary", "dict", 4, func(t *testing.T, pl *enc21pb.PageLayout) *enc21pb.PageLayout {
			mb := pl.GetMiniBlockLayout()
			mb.Dictionary = withUnknownField(t, mb.Dictionary, &enc21pb.CompressiveEncoding{}, 14)
			return pl
		}, []string{"field 14 of CompressiveEncoding", "Range"}},
		{"BufferCompression field 3 inside the dictionary's General", "dict", 4, func(t *testing.T, pl *enc21pb.PageLayout) *enc21pb.PageLayout {
			g := pl.GetMiniBlockLayout().GetDictionary().GetGeneral()
			g.Compression = withUnknownField(t, g.Compression, &enc21pb.BufferCompression{}, 3)
			return pl
		}, []string{"field 3 of BufferCompression"}},
		{"FullZipLayout field 9", "fullzip", 1, func(t *testing.T, pl *enc21pb.PageLayout) *enc21pb.PageLayout {
			fz := pl.GetFullZipLayout()
			pl.Layout = &enc21pb.PageLayout_FullZipLayout{FullZipLayout: withUnknownField(t, fz, &enc21pb.FullZipLayout{}, 9)}
			return pl
		}, []string{"field 9 of FullZipLayout"}},
		{"VariablePackedStruct member field 4", "packed", 2, func(t *testing.T, pl *enc21pb.PageLayout) *enc21pb.PageLayout {
			vps := pl.GetFullZipLayout().GetValueCompression().GetVariablePackedStruct()
			vps.Fields[1] = withUnknownField(t, vps.Fields[1], &enc21pb.VariablePackedStruct_FieldEncoding{}, 4)
			return pl
		}, []string{"field 4 of VariablePackedStruct_FieldEncoding"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lt := openLanceTable(t, dir, tc.table)
			fl := lt.fieldOfColumn(t, tc.col)
			if err := lt.readField(fl); err != nil {
				t.Fatalf("unchanged: %v", err)
			}
			lt.setPageLayout(t, tc.col, tc.mutate(t, lt.pageLayoutOf(t, tc.col)))
			checkErr(t, lt, fl, lt.readField(fl), ErrUnsupportedEncoding, tc.want...)
		})
	}
}

// TestV22FooterVersions: footers of 2.3 (lance 12's unstable "next"
// format) and later are refused with an error that names the version and
// the file.
func TestV22FooterVersions(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(v22DataDir(), "types.lance", "data", "*.lance"))
	if len(files) != 1 {
		t.Fatalf("%d data files", len(files))
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		major, minor uint16
		want         string
	}{
		{2, 2, ""},
		{2, 3, `format 2.3 (lance's unstable "next" format`},
		{2, 4, "format 2.4 (kv0 reads 2.0, 2.1 and 2.2)"},
		{3, 0, "format 3.0"},
	} {
		c := append([]byte(nil), b...)
		binary.LittleEndian.PutUint16(c[len(c)-8:], tc.major)
		binary.LittleEndian.PutUint16(c[len(c)-6:], tc.minor)
		st := store.NewMemory()
		if err := st.Put(ctx, "data/x.lance", c); err != nil {
			t.Fatal(err)
		}
		f, err := Open(ctx, st, "data/x.lance", 0)
		if tc.want == "" {
			if err != nil || f.Version() != V2_2 {
				t.Fatalf("%d.%d: %v", tc.major, tc.minor, err)
			}
			continue
		}
		if !errors.Is(err, ErrUnsupportedVersion) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "data/x.lance") {
			t.Fatalf("%d.%d: got %v, want ErrUnsupportedVersion naming %q and the file", tc.major, tc.minor, err, tc.want)
		}
	}
}

// TestUnknownFieldWalk checks lancepb.UnknownField on decoded messages: it
// finds an unknown field however deep, in a oneof or a repeated member,
// and finds none in what lance 12 writes.
func TestUnknownFieldWalk(t *testing.T) {
	lt := openLanceTable(t, v22DataDir(), "packed")
	for c := range lt.f.columns {
		if _, _, found := lancepb.UnknownField(lt.pageLayoutOf(t, c)); found {
			t.Fatalf("column %d: an unknown field in a page lance 12 wrote", c)
		}
	}
	pl := lt.pageLayoutOf(t, 2)
	vps := pl.GetFullZipLayout().GetValueCompression().GetVariablePackedStruct()
	vps.Fields[2].Value = withUnknownField(t, vps.Fields[2].Value, &enc21pb.CompressiveEncoding{}, 40)
	msg, num, found := lancepb.UnknownField(pl)
	if !found || msg != "CompressiveEncoding" || num != 40 {
		t.Fatalf("got %q %d %v, want CompressiveEncoding 40", msg, num, found)
	}
}
