package lancefile

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kv0/kv0/core/internal/lancepb/enc21pb"
)

// Repetition and definition levels (spec 4.2).
//
// Every field on the path from a top-level field down to a leaf contributes
// one layer to the leaf's levels: a list field a list layer, a struct or the
// leaf itself an item layer. Pages list their layers innermost first and give
// each layer only the levels it needs (none for all-valid layers), so the same
// field may number its levels differently from page to page. Each page's
// definition levels are therefore mapped to one canonical numbering per leaf,
// in which every item layer owns one level (null) and every list layer two
// (null, empty), numbered from the innermost layer outwards starting at 1;
// level 0 means valid at every layer:
//
//	list<struct<a: utf8>>   position  layer   canonical levels
//	                        0         list    3 = null list, 4 = empty list
//	                        1         struct  2 = null struct
//	                        2         a       1 = null item
//
// Levels up to the innermost list's own (here 1 and 2) keep a value slot;
// null or empty lists leave none.
//
// Repetition levels count lists from the innermost (1) to the outermost
// (maxRep); an entry with repetition r starts a new element of list r+1, or
// a new row when r == maxRep, and new slots in every layer inside it.

// leafInfo describes one leaf column of a field being read.
type leafInfo struct {
	field *Field
	path  []*Field // from the top-level field to the leaf
	list  []bool   // list[p]: position p is a list layer
	large []bool   // large[p]: position p is a large_list
	col   int      // column index, -1 when the file has no column for it

	maxRep int
	maxDef uint16
	maxVis uint16 // canonical levels 1..maxVis still occupy a value slot
	// base[p] is the first canonical level of position p.
	base []uint16
	// defPos[d] is the position whose layer level d marks null or empty;
	// defEmpty[d] tells which.
	defPos   []int
	defEmpty []bool
	// startPos[r] is the first position an entry with repetition r gives a
	// new slot to.
	startPos []int

	kind  valKind // value layout the leaf type needs
	width int
	dim   int // items per value of a fixed-size-list leaf, else 0
	// packed describes a struct stored whole in one column (nil otherwise):
	// a packed struct, or a blob v2 column's descriptor.
	packed *packedLayout
}

func newLeafInfo(path []*Field, col int) (*leafInfo, error) {
	li := &leafInfo{path: path, field: path[len(path)-1], col: col}
	P := len(path)
	li.list = make([]bool, P)
	li.large = make([]bool, P)
	for p, f := range path {
		switch f.Type.(type) {
		case *arrow.ListType:
			li.list[p] = true
		case *arrow.LargeListType:
			li.list[p], li.large[p] = true, true
		case *arrow.MapType:
			li.list[p] = true
		}
		if li.list[p] {
			li.maxRep++
		}
	}
	li.base = make([]uint16, P)
	lvl := uint16(1)
	li.defPos = []int{-1}
	li.defEmpty = []bool{false}
	seenList := false
	for p := P - 1; p >= 0; p-- {
		li.base[p] = lvl
		li.defPos = append(li.defPos, p)
		li.defEmpty = append(li.defEmpty, false)
		lvl++
		if li.list[p] {
			li.defPos = append(li.defPos, p)
			li.defEmpty = append(li.defEmpty, true)
			lvl++
			seenList = true
		} else if !seenList {
			li.maxVis = lvl - 1
		}
	}
	li.maxDef = lvl - 1
	li.startPos = make([]int, li.maxRep+1)
	// The list numbered j (innermost 1) sits at some position; an entry with
	// repetition r < maxRep starts slots just inside list r+1.
	num := 0
	for p := P - 1; p >= 0; p-- {
		if li.list[p] {
			num++
			if num-1 < li.maxRep {
				li.startPos[num-1] = p + 1
			}
		}
	}
	li.startPos[li.maxRep] = 0
	var kind valKind
	var width int
	var err error
	if isStructField(li.field) {
		li.packed, err = newPackedLayout(li.field)
		kind, width = li.packed.kind, li.packed.width
	} else {
		kind, width, err = leafLayout(li.field)
	}
	if err != nil {
		return nil, err
	}
	li.kind, li.width = kind, width
	if fsl, ok := li.field.Type.(*arrow.FixedSizeListType); ok {
		li.dim = int(fsl.Len())
	}
	return li, nil
}

// leafLayout returns the value layout a leaf's Arrow type needs.
func leafLayout(f *Field) (valKind, int, error) {
	switch t := f.Type.(type) {
	case *arrow.BooleanType:
		return kindBool, 0, nil
	case *arrow.StringType, *arrow.LargeStringType, *arrow.BinaryType, *arrow.LargeBinaryType:
		return kindVar, 0, nil
	case *arrow.FixedSizeListType:
		ew, ok := t.Elem().(arrow.FixedWidthDataType)
		if !ok || ew.BitWidth()%8 != 0 {
			break
		}
		return kindFixed, int(t.Len()) * ew.BitWidth() / 8, nil
	case arrow.FixedWidthDataType:
		if t.BitWidth()%8 == 0 {
			return kindFixed, t.BitWidth() / 8, nil
		}
	}
	return 0, 0, unsupportedf("leaf %q of type %v", f.Name, f.Type)
}

// defMap returns the mapping from a page's definition levels to canonical
// ones (nil when they coincide), checking the page's layers against the
// leaf's path.
func (li *leafInfo) defMap(layers []enc21pb.RepDefLayer) ([]uint16, error) {
	P := len(li.path)
	if len(layers) == 0 && P == 1 && !li.list[0] {
		layers = []enc21pb.RepDefLayer{enc21pb.RepDefLayer_REPDEF_ALL_VALID_ITEM}
	}
	if len(layers) != P {
		return nil, corruptf("page has %d rep/def layers, field %q needs %d", len(layers), li.field.Name, P)
	}
	m := []uint16{0}
	for i, l := range layers {
		p := P - 1 - i
		b := li.base[p]
		isList := false
		switch l {
		case enc21pb.RepDefLayer_REPDEF_ALL_VALID_ITEM:
		case enc21pb.RepDefLayer_REPDEF_NULLABLE_ITEM:
			m = append(m, b)
		case enc21pb.RepDefLayer_REPDEF_ALL_VALID_LIST:
			isList = true
		case enc21pb.RepDefLayer_REPDEF_NULLABLE_LIST:
			isList = true
			m = append(m, b)
		case enc21pb.RepDefLayer_REPDEF_EMPTYABLE_LIST:
			isList = true
			m = append(m, b+1)
		case enc21pb.RepDefLayer_REPDEF_NULL_AND_EMPTY_LIST:
			isList = true
			m = append(m, b, b+1)
		default:
			return nil, unsupportedf("rep/def layer %v", l)
		}
		if isList != li.list[p] {
			return nil, corruptf("page layer %d is %v but field %q is %v there", i, l, li.path[p].Name, li.path[p].Type)
		}
	}
	identity := len(m) == int(li.maxDef)+1
	for i, v := range m {
		if int(v) != i {
			identity = false
			break
		}
	}
	if identity {
		return nil, nil
	}
	return m, nil
}

// bitmapBuilder builds an Arrow validity bitmap.
type bitmapBuilder struct {
	bits  []byte
	n     int
	nulls int
}

func (b *bitmapBuilder) append(v bool) {
	if b.n%8 == 0 {
		b.bits = append(b.bits, 0)
	}
	if v {
		b.bits[b.n/8] |= 1 << (b.n % 8)
	} else {
		b.nulls++
	}
	b.n++
}

// layerOut is what one position of a leaf's path decodes to for a batch.
type layerOut struct {
	valid bitmapBuilder
	offs  []int64 // list positions: slot starts in the child, then the end
}

// walkLevels turns a batch's levels into validity bitmaps and list offsets
// for every position of the leaf's path. nvals is the number of value slots
// the batch holds; it must match the entries that reach the leaf.
func (li *leafInfo) walkLevels(rep, def []uint16, nlev, nvals int) ([]layerOut, error) {
	P := len(li.path)
	out := make([]layerOut, P)
	count := make([]int, P+1)
	for i := 0; i < nlev; i++ {
		s := 0
		if rep != nil {
			r := int(rep[i])
			if r > li.maxRep {
				return nil, corruptf("repetition level %d above %d", r, li.maxRep)
			}
			s = li.startPos[r]
			if i == 0 && s != 0 {
				return nil, corruptf("batch starts in the middle of a row")
			}
		}
		q, empty := P, false
		if def != nil {
			d := def[i]
			if d > li.maxDef {
				return nil, corruptf("definition level %d above %d", d, li.maxDef)
			}
			if d > 0 {
				q, empty = li.defPos[d], li.defEmpty[d]
			}
		}
		if q < s {
			return nil, corruptf("definition level marks position %d null in an entry starting at %d", q, s)
		}
		for p := s; p < P; p++ {
			o := &out[p]
			count[p]++
			if !li.list[p] {
				o.valid.append(p < q)
				continue
			}
			o.offs = append(o.offs, int64(count[p+1]))
			if p < q {
				o.valid.append(true)
				continue
			}
			o.valid.append(p == q && empty)
			break
		}
	}
	if count[P-1] != nvals {
		return nil, corruptf("levels give %d value slots, the page has %d", count[P-1], nvals)
	}
	for p := 0; p < P; p++ {
		if li.list[p] {
			out[p].offs = append(out[p].offs, int64(count[p+1]))
		}
	}
	return out, nil
}
