package lancefile

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Shredding: a 2.1 file has one column per leaf field. Lists and structs
// above a leaf become layers of repetition and definition levels on that
// leaf's column (spec 4.2). A leafCol accumulates one page of one leaf:
// levels, and the values of the page's value slots.
//
// While a page is being filled, definition levels hold raw codes that do not
// yet depend on which layers turn out to have nulls or empty lists:
//
//	0         valid at every layer
//	2j+1      null at layer j       (layers are numbered innermost first:
//	2j+2      empty list at layer j  0 is the leaf)
//
// A level whose outer layer is null carries the code of the outermost null,
// as Lance does. When the page is flushed the codes are mapped to real
// definition levels (see layerPlan).

// nodeKind is the kind of one field on the path from a top-level field to a
// leaf.
type nodeKind uint8

const (
	nodeItem      nodeKind = iota // struct or the leaf itself
	nodeList                      // list (int32 offsets)
	nodeLargeList                 // large_list (int64 offsets)
)

type pathNode struct {
	kind  nodeKind
	child int // struct: index of the member on the path
}

// valueKind says how a leaf's values are stored.
type valueKind uint8

const (
	valFixed valueKind = iota // 1, 2, 4 or 8 bytes a value
	valBool                   // one bit a value
	valVar                    // variable width (strings, binary)
)

func codeNull(layer int) uint16  { return uint16(2*layer + 1) }
func codeEmpty(layer int) uint16 { return uint16(2*layer + 2) }

const (
	flagNull  = 1
	flagEmpty = 2
)

// leafCol accumulates the current page of one leaf column and the encoded
// pages before it. It is used by one goroutine at a time.
type leafCol struct {
	field  *Field // the leaf
	top    int    // index of the top-level field
	path   []pathNode
	maxRep uint16 // number of list layers
	vk     valueKind
	width  int  // valFixed: bytes per value
	large  bool // valVar: 64-bit offsets
	v22    bool // the file is format 2.2

	// The page being filled.
	rows, items, levels int
	rep                 []uint16 // one per level, when maxRep > 0
	def                 []uint16 // raw codes, one per level; nil while all are 0
	flags               []uint8  // per layer: flagNull, flagEmpty seen
	vals                []byte   // valFixed values; valBool bitmap (LSB first)
	aliased             bool     // vals is a caller's Arrow buffer (len == cap)
	spare               []byte   // owned memory for vals while aliased
	voff                []int    // valVar: end offset of each item in vals
	maxLen              int      // valVar: longest value
	trailing            int      // invisible levels since the last value slot
	firstRow            uint64   // row number of the page's first row

	pending []pendingPage // encoded pages not yet placed in the file
	pages   []encodedPage // pages placed in the file

	// Scratch memory of the page encoder, kept across pages.
	widths []uint8  // bit width of each 1024-value block
	idx    []byte   // dictionary indices (u32)
	direct []uint32 // dictionary indices + 1 by value - the smallest one (buildDict64)
	dict   dict64
	// The dictionary of the page before, and its encoding (dictBuffer).
	lastDictValues []uint64
	lastDict       *dictPage
}

func newLeafCol(top int, path []pathNode, leaf *Field) (*leafCol, error) {
	c := &leafCol{field: leaf, top: top, path: path, flags: make([]uint8, len(path))}
	for _, n := range path {
		if n.kind != nodeItem {
			c.maxRep++
		}
	}
	switch t := leaf.Type.(type) {
	case *arrow.BooleanType:
		c.vk = valBool
	case *arrow.Int8Type, *arrow.Uint8Type:
		c.vk, c.width = valFixed, 1
	case *arrow.Int16Type, *arrow.Uint16Type:
		c.vk, c.width = valFixed, 2
	case *arrow.Int32Type, *arrow.Uint32Type, *arrow.Float32Type, *arrow.Date32Type:
		c.vk, c.width = valFixed, 4
	case *arrow.Int64Type, *arrow.Uint64Type, *arrow.Float64Type, *arrow.TimestampType:
		c.vk, c.width = valFixed, 8
	case *arrow.StringType, *arrow.BinaryType:
		c.vk = valVar
	case *arrow.LargeStringType, *arrow.LargeBinaryType:
		c.vk, c.large = valVar, true
	default:
		return nil, fmt.Errorf("%w: column %q has type %s", ErrUnsupportedType, leaf.Name, t)
	}
	c.voff = []int{0}
	return c, nil
}

// pageBytes estimates the encoded size of the page being filled.
func (c *leafCol) pageBytes() int {
	n := len(c.vals) + 2*len(c.rep) + 2*len(c.def)
	if c.vk == valVar {
		n += 4 * c.items
	}
	return n
}

// resetPage clears the accumulation buffers, keeping their memory.
func (c *leafCol) resetPage() {
	c.firstRow += uint64(c.rows)
	c.rows, c.items, c.levels, c.trailing, c.maxLen = 0, 0, 0, 0, 0
	c.rep = c.rep[:0]
	c.def = nil
	clear(c.flags)
	if c.aliased {
		c.vals, c.aliased = c.spare[:0], false
	} else {
		c.vals = c.vals[:0]
	}
	c.voff = c.voff[:1]
}

// setDefs records code for the n levels starting at level index at.
func (c *leafCol) setDefs(at, n int, code uint16) {
	if code == 0 && c.def == nil {
		return
	}
	if c.def == nil {
		c.def = make([]uint16, c.levels, max(2*c.levels, 1024))
	}
	c.def = growLen(c.def, at+n)
	for i := at; i < at+n; i++ {
		c.def[i] = code
	}
}

func growLen[T any](s []T, n int) []T {
	if n <= len(s) {
		return s[:n]
	}
	if n <= cap(s) {
		return s[:n]
	}
	ns := make([]T, n, max(n, 2*cap(s)))
	copy(ns, s)
	return ns
}

// aliasMin is the smallest run of values addLeaf references in place
// instead of copying.
const aliasMin = 4096

// ownValues copies values that still reference a caller's buffer.
func (c *leafCol) ownValues() {
	if c.aliased {
		c.vals, c.aliased = append(c.spare[:0], c.vals...), false
	}
}

// addRows shreds rows [lo, hi) of the top-level array a into the page.
func (c *leafCol) addRows(a arrow.Array, lo, hi int) {
	c.visit(0, a, lo, hi, 0, 0)
	c.rows += hi - lo
}

// visit adds elements [lo, hi) of a, the array at path depth d. rep is the
// repetition level of the first level the range produces; code is the raw
// definition code inherited from a null ancestor (0 if none).
func (c *leafCol) visit(d int, a arrow.Array, lo, hi int, rep uint16, code uint16) {
	if lo >= hi {
		return
	}
	layer := len(c.path) - 1 - d
	n := c.path[d]
	if d == len(c.path)-1 {
		c.addLeaf(a, lo, hi, rep, code, layer)
		return
	}
	switch n.kind {
	case nodeItem:
		child := a.(*array.Struct).Field(n.child)
		if code != 0 || a.NullN() == 0 {
			c.visit(d+1, child, lo, hi, rep, code)
			return
		}
		// Split the range into runs of valid and null structs.
		for i := lo; i < hi; {
			null := a.IsNull(i)
			j := i + 1
			for j < hi && a.IsNull(j) == null {
				j++
			}
			r := rep
			if i > lo {
				r = 0
			}
			if null {
				c.flags[layer] |= flagNull
				c.visit(d+1, child, i, j, r, codeNull(layer))
			} else {
				c.visit(d+1, child, i, j, r, 0)
			}
			i = j
		}
	default:
		level := c.listLevel(d)
		var child arrow.Array
		var offs func(i int) (int, int)
		if n.kind == nodeList {
			l := a.(*array.List)
			child = l.ListValues()
			offs = func(i int) (int, int) { s, e := l.ValueOffsets(i); return int(s), int(e) }
		} else {
			l := a.(*array.LargeList)
			child = l.ListValues()
			offs = func(i int) (int, int) { s, e := l.ValueOffsets(i); return int(s), int(e) }
		}
		hasNulls := a.NullN() > 0
		for i := lo; i < hi; i++ {
			r := rep
			if i > lo {
				r = 0
			}
			r = max(r, level)
			cd := code
			if cd == 0 && hasNulls && a.IsNull(i) {
				cd = codeNull(layer)
				c.flags[layer] |= flagNull
			}
			if cd != 0 {
				c.addInvisible(r, cd)
				continue
			}
			s, e := offs(i)
			if s >= e {
				c.flags[layer] |= flagEmpty
				c.addInvisible(r, codeEmpty(layer))
				continue
			}
			c.visit(d+1, child, s, e, r, 0)
		}
	}
}

// listLevel returns the repetition level of the list at depth d: the
// outermost list has level maxRep, the innermost 1.
func (c *leafCol) listLevel(d int) uint16 {
	l := c.maxRep
	for i := 0; i < d; i++ {
		if c.path[i].kind != nodeItem {
			l--
		}
	}
	return l
}

func (c *leafCol) addInvisible(rep, code uint16) {
	if c.maxRep > 0 {
		c.rep = append(c.rep, rep)
	}
	c.setDefs(c.levels, 1, code)
	c.levels++
	c.trailing++
}

// addLeaf adds value slots [lo, hi) of the leaf array a.
func (c *leafCol) addLeaf(a arrow.Array, lo, hi int, rep, code uint16, layer int) {
	n := hi - lo
	if c.maxRep > 0 {
		c.rep = append(c.rep, rep)
		for range n - 1 {
			c.rep = append(c.rep, 0)
		}
	}
	at := c.levels
	nulls := code == 0 && a.NullN() > 0
	if code != 0 {
		c.setDefs(at, n, code)
	} else if nulls {
		for i := lo; i < hi; i++ {
			if a.IsNull(i) {
				c.setDefs(at+i-lo, 1, codeNull(layer))
				c.flags[layer] |= flagNull
			}
		}
	}
	if c.def != nil {
		c.def = growLen(c.def, at+n)
	}
	c.levels += n
	c.items += n
	c.trailing = 0

	data := a.Data()
	off := data.Offset()
	switch c.vk {
	case valFixed:
		w := c.width
		src := data.Buffers()[1].Bytes()[(off+lo)*w : (off+hi)*w]
		if len(c.vals) == 0 && !c.aliased && code == 0 && !nulls && n >= aliasMin {
			// Use the caller's buffer until the page closes or the batch
			// ends (see ownValues); appending to it copies (cap == len).
			c.spare, c.vals, c.aliased = c.vals, src[:len(src):len(src)], true
			break
		}
		start := len(c.vals)
		c.vals = append(c.vals, src...)
		c.aliased = false
		if code != 0 {
			clear(c.vals[start:])
		} else if nulls {
			for i := lo; i < hi; i++ {
				if a.IsNull(i) {
					clear(c.vals[start+(i-lo)*w : start+(i-lo+1)*w])
				}
			}
		}
	case valBool:
		bits := data.Buffers()[1].Bytes()
		base := c.items - n // bit index of the first new value
		c.vals = growLen(c.vals, (c.items+7)/8)
		for i := lo; i < hi; i++ {
			k := base + i - lo
			if code == 0 && bits[(off+i)>>3]&(1<<((off+i)&7)) != 0 && !(nulls && a.IsNull(i)) {
				c.vals[k>>3] |= 1 << (k & 7)
			} else {
				c.vals[k>>3] &^= 1 << (k & 7)
			}
		}
	case valVar:
		ob := data.Buffers()[1].Bytes()
		vb := data.Buffers()[2]
		var vbytes []byte
		if vb != nil {
			vbytes = vb.Bytes()
		}
		offAt := func(i int) int {
			if c.large {
				return int(binary.LittleEndian.Uint64(ob[8*i:]))
			}
			return int(int32(binary.LittleEndian.Uint32(ob[4*i:])))
		}
		if code != 0 {
			end := c.voff[len(c.voff)-1]
			for range n {
				c.voff = append(c.voff, end)
			}
			return
		}
		if !nulls {
			s, e := offAt(off+lo), offAt(off+hi)
			base := len(c.vals) - s
			c.vals = append(c.vals, vbytes[s:e]...)
			prev := s
			for i := lo + 1; i <= hi; i++ {
				o := offAt(off + i)
				if o-prev > c.maxLen {
					c.maxLen = o - prev
				}
				prev = o
				c.voff = append(c.voff, o+base)
			}
			return
		}
		for i := lo; i < hi; i++ {
			if !a.IsNull(i) {
				s, e := offAt(off+i), offAt(off+i+1)
				c.vals = append(c.vals, vbytes[s:e]...)
				c.maxLen = max(c.maxLen, e-s)
			}
			c.voff = append(c.voff, len(c.vals))
		}
	}
}
