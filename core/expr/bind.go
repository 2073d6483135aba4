package expr

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// Errors wrapped by *BindError. Match them with errors.Is.
var (
	// ErrUnknownColumn: the expression names a column the schema lacks.
	ErrUnknownColumn = errors.New("expr: unknown column")
	// ErrType: a literal cannot be compared with the column's type.
	ErrType = errors.New("expr: type mismatch")
	// ErrUnsupportedType: the column's Arrow type cannot be compared.
	ErrUnsupportedType = errors.New("expr: unsupported column type")
)

// BindError reports an expression that does not fit a schema. Match it with
// errors.As; Unwrap gives ErrUnknownColumn, ErrType or ErrUnsupportedType.
type BindError struct {
	// Column is the column as written in the expression (dotted for struct members).
	Column string
	// Pos is the byte offset in the parsed source of the column or literal at fault.
	Pos int
	// Msg describes the problem, naming the column and the literal.
	Msg string
	// Err is one of the sentinel errors above.
	Err error
}

// Error implements error.
func (e *BindError) Error() string { return "expr: " + e.Msg }

// Unwrap returns the sentinel error.
func (e *BindError) Unwrap() error { return e.Err }

// Bound is an expression bound to a schema: columns resolved, literals
// converted to the column types, kernels chosen. It is immutable and safe for
// concurrent use; Eval and Filter may run on several goroutines at once.
type Bound struct {
	root  *bnode
	slots int // number of mask pairs evaluation needs
	cols  []string
	pool  sync.Pool // *[]uint64 scratch masks
}

// Columns returns the schema's names of the top-level columns the bound
// expression reads, in order of first use.
func (b *Bound) Columns() []string { return append([]string(nil), b.cols...) }

// plan says how a leaf turns column values into comparison bits.
type plan uint8

const (
	pKernel  plan = iota // run kern
	pNone                // no non-null row matches
	pAll                 // every non-null row matches
	pUnknown             // compared with NULL: unknown for every row
)

// bnode is one node of a bound expression.
type bnode struct {
	kind  kind
	kids  []*bnode
	slot  int
	path  []int          // field indices from the top-level column down
	name  string         // column as written
	top   string         // schema name of the top-level column
	dt    arrow.DataType // type of the leaf column
	plan  plan
	kern  func(arr arrow.Array, out []uint64) // comparison bits, nulls ignored
	neg   bool                                // NOT IN, IS NOT NULL
	noF   bool                                // IN list holds NULL: never FALSE
	value int8                                // kConst: 1 TRUE, 0 FALSE, -1 NULL
}

// Bind resolves the expression against schema and type-checks it. Column
// names match exactly first, then case-insensitively (as lance does).
// Errors are *BindError values.
func (e *Expr) Bind(schema *arrow.Schema) (*Bound, error) {
	b := &Bound{}
	seen := map[string]bool{}
	root, err := b.bind(e.root, schema, seen)
	if err != nil {
		return nil, err
	}
	b.root = root
	return b, nil
}

func (b *Bound) bind(n *node, schema *arrow.Schema, seen map[string]bool) (*bnode, error) {
	bn := &bnode{kind: n.kind, slot: b.slots, neg: n.neg}
	b.slots++
	switch n.kind {
	case kAnd, kOr, kNot:
		for _, k := range n.kids {
			bk, err := b.bind(k, schema, seen)
			if err != nil {
				return nil, err
			}
			bn.kids = append(bn.kids, bk)
		}
		return bn, nil
	case kConst:
		bn.value = -1
		if n.lit.kind == lBool {
			bn.value = 0
			if n.lit.b {
				bn.value = 1
			}
		}
		return bn, nil
	}
	path, dt, top, err := resolve(schema, n.col)
	if err != nil {
		return nil, err
	}
	if !seen[top] {
		seen[top] = true
		b.cols = append(b.cols, top)
	}
	bn.path, bn.dt, bn.name, bn.top = path, dt, n.col.name(), top
	switch n.kind {
	case kIsNull:
		return bn, nil
	case kCol:
		if dt.ID() != arrow.BOOL {
			return nil, &BindError{Column: bn.name, Pos: n.col.pos, Err: ErrType,
				Msg: fmt.Sprintf("column %q has type %s; only a bool column can stand alone as a condition", bn.name, dt)}
		}
		bn.plan, bn.kern = pKernel, boolKernel(opEq, true)
		return bn, nil
	case kCmp:
		c, err := newConverter(n.col, bn.name, dt)
		if err != nil {
			return nil, err
		}
		if n.lit.kind == lNull {
			bn.plan = pUnknown
			return bn, nil
		}
		bn.plan, bn.kern, err = c.compare(n.op, n.lit)
		return bn, err
	case kIn:
		c, err := newConverter(n.col, bn.name, dt)
		if err != nil {
			return nil, err
		}
		var lits []literal
		for _, l := range n.list {
			if l.kind == lNull {
				bn.noF = true
			} else {
				lits = append(lits, l)
			}
		}
		bn.plan, bn.kern, err = c.in(lits)
		return bn, err
	}
	panic("expr: unknown node kind")
}

// resolve finds the column a reference names.
func resolve(schema *arrow.Schema, c colRef) (path []int, dt arrow.DataType, top string, err error) {
	fields := schema.Fields()
	for depth, part := range c.path {
		i := lookup(fields, part)
		if i < 0 {
			name := c.name()
			msg := fmt.Sprintf("unknown column %q", name)
			if depth > 0 {
				msg = fmt.Sprintf("unknown column %q: %q has no field %q", name, colRef{path: c.path[:depth]}.name(), part)
			}
			return nil, nil, "", &BindError{Column: name, Pos: c.pos, Msg: msg, Err: ErrUnknownColumn}
		}
		if i == -2 {
			name := c.name()
			return nil, nil, "", &BindError{Column: name, Pos: c.pos, Err: ErrUnknownColumn,
				Msg: fmt.Sprintf("column %q is ambiguous", name)}
		}
		if depth == 0 {
			top = fields[i].Name
		}
		path = append(path, i)
		dt = fields[i].Type
		if depth+1 < len(c.path) {
			st, ok := dt.(*arrow.StructType)
			if !ok {
				name := c.name()
				return nil, nil, "", &BindError{Column: name, Pos: c.pos, Err: ErrUnknownColumn,
					Msg: fmt.Sprintf("unknown column %q: %q has type %s, not a struct", name, colRef{path: c.path[:depth+1]}.name(), dt)}
			}
			fields = st.Fields()
		}
	}
	return path, dt, top, nil
}

// lookup returns the index of the field called name: an exact match, else
// the only case-insensitive match; -1 when there is none, -2 when ambiguous.
func lookup(fields []arrow.Field, name string) int {
	found := -1
	for i, f := range fields {
		if f.Name == name {
			if found >= 0 {
				return -2
			}
			found = i
		}
	}
	if found >= 0 {
		return found
	}
	for i, f := range fields {
		if strings.EqualFold(f.Name, name) {
			if found >= 0 {
				return -2
			}
			found = i
		}
	}
	return found
}

// converter turns literals into values of one column type.
type converter struct {
	col  colRef
	name string
	dt   arrow.DataType
	tz   string         // timestamp columns: their zone, for literals without an offset
	loc  *time.Location // tz resolved, on the first such literal
}

func newConverter(col colRef, name string, dt arrow.DataType) (*converter, error) {
	c := &converter{col: col, name: name, dt: dt}
	switch dt.ID() {
	case arrow.BOOL, arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64, arrow.FLOAT32, arrow.FLOAT64,
		arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY, arrow.DATE32:
		return c, nil
	case arrow.TIMESTAMP:
		// The zone is resolved only for a literal without an offset: a
		// literal with one, or a date, compares without it.
		c.tz = dt.(*arrow.TimestampType).TimeZone
		return c, nil
	}
	return nil, &BindError{Column: name, Pos: col.pos, Err: ErrUnsupportedType,
		Msg: fmt.Sprintf("column %q has type %s, which filters can only test with IS [NOT] NULL", name, dt)}
}

// ZoneOffset, when set, resolves an IANA zone that time.LoadLocation cannot
// (a js/wasm program carries no zoneinfo): it returns the offset east of
// UTC, in seconds, that zone tz has at the wall-clock time wall (whose
// fields, read in UTC, are the local time). For a wall time a change of
// offset skips or repeats, it picks an offset as time.Date does. The wasm
// module sets it to one that asks JavaScript's Intl.
var ZoneOffset func(tz string, wall time.Time) (int, error)

// zone resolves an Arrow timestamp time zone: empty, UTC, a fixed offset
// (+05:30) or an IANA name (through the system's zoneinfo). It is only used
// for literals written without an offset.
func zone(tz string) (*time.Location, error) {
	switch strings.ToUpper(tz) {
	case "", "UTC", "Z", "+00:00", "ETC/UTC", "GMT":
		return time.UTC, nil
	}
	if len(tz) == 6 && (tz[0] == '+' || tz[0] == '-') && tz[3] == ':' {
		h, err1 := strconv.Atoi(tz[1:3])
		m, err2 := strconv.Atoi(tz[4:6])
		if err1 == nil && err2 == nil && h < 24 && m < 60 {
			off := h*3600 + m*60
			if tz[0] == '-' {
				off = -off
			}
			return time.FixedZone(tz, off), nil
		}
	}
	return time.LoadLocation(tz)
}

// localToUTC reads the wall-clock time w (its fields in UTC) in the
// column's zone and returns its Unix seconds.
func (c *converter) localToUTC(w time.Time, pos int) (int64, error) {
	if c.loc == nil {
		loc, err := zone(c.tz)
		if err != nil && ZoneOffset != nil {
			off, zerr := ZoneOffset(c.tz, w)
			if zerr == nil {
				return w.Unix() - int64(off), nil
			}
			err = zerr
		}
		if err != nil {
			return 0, &BindError{Column: c.name, Pos: pos, Err: ErrUnsupportedType,
				Msg: fmt.Sprintf("column %q: time zone %q: %v (a literal with an offset, such as ...Z or ...+01:00, needs no zone)", c.name, c.tz, err)}
		}
		c.loc = loc
	}
	return time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), 0, c.loc).Unix(), nil
}

func describeLit(l literal) string {
	k := map[litKind]string{lNull: "NULL", lBool: "boolean", lInt: "integer", lFloat: "float",
		lString: "string", lBinary: "binary", lTimestamp: "timestamp", lDate: "date"}[l.kind]
	return k + " " + string(l.appendTo(nil))
}

func (c *converter) mismatch(l literal, why string) error {
	msg := fmt.Sprintf("cannot compare column %q of type %s with %s", c.name, c.dt, describeLit(l))
	if why != "" {
		msg += ": " + why
	}
	return &BindError{Column: c.name, Pos: l.pos, Msg: msg, Err: ErrType}
}

// place says where a literal falls among the values of an ordered column type.
type place uint8

const (
	exact   place = iota // equal to v
	between              // strictly between v and the next value
	below                // below every value
	above                // above every value
)

// normalize maps a comparison with a literal at place p onto a kernel
// operator or a constant plan.
func normalize(op cmpOp, p place) (cmpOp, plan) {
	switch p {
	case exact:
		return op, pKernel
	case between:
		switch op {
		case opLt, opLe:
			return opLe, pKernel
		case opGt, opGe:
			return opGt, pKernel
		case opEq:
			return op, pNone
		}
		return op, pAll
	case below:
		switch op {
		case opGt, opGe, opNe:
			return op, pAll
		}
		return op, pNone
	}
	switch op {
	case opLt, opLe, opNe:
		return op, pAll
	}
	return op, pNone
}

// signedPlace places an integer or float literal among int64 values in [lo, hi].
func (c *converter) signedPlace(l literal, lo, hi int64) (int64, place, error) {
	var v int64
	p := exact
	switch l.kind {
	case lInt:
		switch {
		case l.neg && l.mag > 1<<63:
			return 0, below, nil
		case l.neg:
			v = int64(-l.mag) // wraps correctly for 1<<63
		case l.mag > math.MaxInt64:
			return 0, above, nil
		default:
			v = int64(l.mag)
		}
	case lFloat:
		fl := math.Floor(l.f)
		switch {
		case fl < -(1 << 63):
			return 0, below, nil
		case fl >= 1<<63:
			return 0, above, nil
		}
		v = int64(fl)
		if fl != l.f {
			p = between
		}
	default:
		return 0, 0, c.mismatch(l, "")
	}
	switch {
	case v < lo:
		return 0, below, nil
	case v > hi, v == hi && p == between:
		return 0, above, nil
	}
	return v, p, nil
}

// unsignedPlace places an integer or float literal among uint64 values in [0, hi].
func (c *converter) unsignedPlace(l literal, hi uint64) (uint64, place, error) {
	var v uint64
	p := exact
	switch l.kind {
	case lInt:
		if l.neg {
			return 0, below, nil
		}
		v = l.mag
	case lFloat:
		fl := math.Floor(l.f)
		switch {
		case fl < 0:
			return 0, below, nil
		case fl >= 1<<64:
			return 0, above, nil
		}
		v = uint64(fl)
		if fl != l.f {
			p = between
		}
	default:
		return 0, 0, c.mismatch(l, "")
	}
	if v > hi || (v == hi && p == between) {
		return 0, above, nil
	}
	return v, p, nil
}

// floatValue converts a numeric literal for a float column the way lance
// does: integers and float64 are rounded to the column's width.
func (c *converter) floatValue(l literal) (float64, error) {
	switch l.kind {
	case lInt:
		if c.dt.ID() == arrow.FLOAT32 {
			f := float64(float32(l.mag))
			if l.neg {
				f = -f
			}
			return f, nil
		}
		f := float64(l.mag)
		if l.neg {
			f = -f
		}
		return f, nil
	case lFloat:
		if c.dt.ID() == arrow.FLOAT32 {
			return float64(float32(l.f)), nil
		}
		return l.f, nil
	}
	return 0, c.mismatch(l, "")
}

// instantOf reads a literal compared with a timestamp or date column.
func (c *converter) instantOf(l literal) (instant, error) {
	var t instant
	zoned := false
	switch l.kind {
	case lTimestamp:
		t, zoned = l.ts, l.zoned
	case lDate:
		return instant{sec: l.day * 86400}, nil // midnight UTC, as lance
	case lString:
		var ok bool
		t, zoned, ok = parseTimestamp(l.s)
		if !ok {
			return t, c.mismatch(l, "want YYYY-MM-DD[ HH:MM:SS[.fffffffff]][Z|±HH:MM]")
		}
	default:
		return t, c.mismatch(l, "")
	}
	if !zoned && c.dt.ID() == arrow.TIMESTAMP {
		sec, err := c.localToUTC(time.Unix(t.sec, 0).UTC(), l.pos)
		if err != nil {
			return t, err
		}
		t.sec = sec
	}
	return t, nil
}

// timestampPlace places an instant among the values of a timestamp column
// with the given number of ticks per second.
func timestampPlace(t instant, perSec int64) (int64, place) {
	sub := 1_000_000_000 / perSec
	if t.sec > math.MaxInt64/perSec {
		return 0, above
	}
	if t.sec < math.MinInt64/perSec {
		return 0, below
	}
	v := t.sec * perSec
	add := t.nsec / sub
	if v > math.MaxInt64-add {
		return 0, above
	}
	v += add
	if t.nsec%sub != 0 {
		if v == math.MaxInt64 {
			return 0, above
		}
		return v, between
	}
	return v, exact
}

// datePlace places an instant among date32 values.
func datePlace(t instant) (int64, place) {
	day := floorDiv(t.sec, 86400)
	p := exact
	if t.sec-day*86400 != 0 || t.nsec != 0 {
		p = between
	}
	switch {
	case day < math.MinInt32:
		return 0, below
	case day > math.MaxInt32, day == math.MaxInt32 && p == between:
		return 0, above
	}
	return day, p
}

func ticksPerSecond(u arrow.TimeUnit) int64 {
	switch u {
	case arrow.Second:
		return 1
	case arrow.Millisecond:
		return 1_000
	case arrow.Microsecond:
		return 1_000_000
	}
	return 1_000_000_000
}

// ordered converts a literal for an ordered numeric, temporal or bool column
// into a value of the kernel domain: int64 for signed and temporal types,
// uint64 for unsigned, a total-order key for floats, 0/1 for bools.
func (c *converter) ordered(l literal) (i int64, u uint64, p place, err error) {
	switch c.dt.ID() {
	case arrow.INT8:
		i, p, err = c.signedPlace(l, math.MinInt8, math.MaxInt8)
	case arrow.INT16:
		i, p, err = c.signedPlace(l, math.MinInt16, math.MaxInt16)
	case arrow.INT32:
		i, p, err = c.signedPlace(l, math.MinInt32, math.MaxInt32)
	case arrow.INT64:
		i, p, err = c.signedPlace(l, math.MinInt64, math.MaxInt64)
	case arrow.UINT8:
		u, p, err = c.unsignedPlace(l, math.MaxUint8)
	case arrow.UINT16:
		u, p, err = c.unsignedPlace(l, math.MaxUint16)
	case arrow.UINT32:
		u, p, err = c.unsignedPlace(l, math.MaxUint32)
	case arrow.UINT64:
		u, p, err = c.unsignedPlace(l, math.MaxUint64)
	case arrow.FLOAT32:
		var f float64
		f, err = c.floatValue(l)
		i = int64(f32key(float32(f)))
	case arrow.FLOAT64:
		var f float64
		f, err = c.floatValue(l)
		i = f64key(f)
	case arrow.TIMESTAMP:
		var t instant
		if t, err = c.instantOf(l); err == nil {
			i, p = timestampPlace(t, ticksPerSecond(c.dt.(*arrow.TimestampType).Unit))
		}
	case arrow.DATE32:
		if l.kind == lDate {
			i, p = datePlace(instant{sec: l.day * 86400})
			break
		}
		var t instant
		if t, err = c.instantOf(l); err == nil {
			i, p = datePlace(t)
		}
	case arrow.BOOL:
		if l.kind != lBool {
			err = c.mismatch(l, "")
		} else if l.b {
			i = 1
		}
	default:
		panic("expr: not an ordered type")
	}
	return
}

// bytesOf converts a literal for a string or binary column.
func (c *converter) bytesOf(l literal) (string, error) {
	switch c.dt.ID() {
	case arrow.STRING, arrow.LARGE_STRING:
		if l.kind == lString {
			return l.s, nil
		}
	default: // binary: strings compare as their UTF-8 bytes
		if l.kind == lString || l.kind == lBinary {
			return l.s, nil
		}
	}
	return "", c.mismatch(l, "")
}

func isBytes(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
		return true
	}
	return false
}

// compare builds the plan and kernel of `column op literal`.
func (c *converter) compare(op cmpOp, l literal) (plan, func(arrow.Array, []uint64), error) {
	if isBytes(c.dt) {
		s, err := c.bytesOf(l)
		if err != nil {
			return 0, nil, err
		}
		return pKernel, bytesKernel(c.dt, op, s), nil
	}
	i, u, p, err := c.ordered(l)
	if err != nil {
		return 0, nil, err
	}
	op, pl := normalize(op, p)
	if pl != pKernel {
		return pl, nil, nil
	}
	if c.dt.ID() == arrow.BOOL {
		return pKernel, boolKernel(op, i == 1), nil
	}
	return pKernel, orderedKernel(c.dt, op, i, u), nil
}

// in builds the plan and kernel of `column IN (lits)`; NULLs are already removed.
func (c *converter) in(lits []literal) (plan, func(arrow.Array, []uint64), error) {
	if isBytes(c.dt) {
		var set []string
		for _, l := range lits {
			s, err := c.bytesOf(l)
			if err != nil {
				return 0, nil, err
			}
			set = append(set, s)
		}
		if len(set) == 0 {
			return pNone, nil, nil
		}
		return pKernel, bytesInKernel(c.dt, set), nil
	}
	var is []int64
	var us []uint64
	var bools [2]bool
	for _, l := range lits {
		i, u, p, err := c.ordered(l)
		if err != nil {
			return 0, nil, err
		}
		if p != exact {
			continue // never equal to a value of the column
		}
		is, us = append(is, i), append(us, u)
		bools[i&1] = true
	}
	switch {
	case len(is) == 0:
		return pNone, nil, nil
	case c.dt.ID() == arrow.BOOL:
		switch {
		case bools[0] && bools[1]:
			return pAll, nil, nil
		case bools[1]:
			return pKernel, boolKernel(opEq, true), nil
		}
		return pKernel, boolKernel(opEq, false), nil
	}
	return pKernel, orderedInKernel(c.dt, is, us), nil
}
