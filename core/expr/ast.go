package expr

import (
	"math"
	"strconv"
	"strings"
)

// kind is the kind of an AST node.
type kind uint8

const (
	kAnd    kind = iota // kids, two or more, none of them kAnd
	kOr                 // kids, two or more, none of them kOr
	kNot                // kids[0]
	kCmp                // col op lit
	kIn                 // col [NOT] IN (list)
	kIsNull             // col IS [NOT] NULL
	kCol                // bare column used as a boolean
	kConst              // TRUE, FALSE or NULL used as a predicate
)

// cmpOp is a comparison operator.
type cmpOp uint8

const (
	opEq cmpOp = iota
	opNe
	opLt
	opLe
	opGt
	opGe
)

var opText = [...]string{opEq: "=", opNe: "!=", opLt: "<", opLe: "<=", opGt: ">", opGe: ">="}

// flip returns the operator that gives the same result with the operands
// swapped: lit < col is col > lit.
func (o cmpOp) flip() cmpOp {
	switch o {
	case opLt:
		return opGt
	case opLe:
		return opGe
	case opGt:
		return opLt
	case opGe:
		return opLe
	}
	return o
}

// negate returns the operator of NOT (a op b) for non-null operands.
func (o cmpOp) negate() cmpOp {
	switch o {
	case opEq:
		return opNe
	case opNe:
		return opEq
	case opLt:
		return opGe
	case opLe:
		return opGt
	case opGt:
		return opLe
	}
	return opLt
}

// litKind is the kind of a literal.
type litKind uint8

const (
	lNull litKind = iota
	lBool
	lInt    // neg, mag: the value is -mag when neg, else mag
	lFloat  // f
	lString // s; '...' or "..."
	lBinary // s holds the bytes of X'..'
	lTimestamp
	lDate
)

// literal is a parsed constant.
type literal struct {
	kind litKind
	pos  int // byte offset in the source, -1 when unknown
	b    bool
	neg  bool
	mag  uint64
	f    float64
	s    string // string value, binary bytes, or TIMESTAMP/DATE text as written
	prec int    // TIMESTAMP(prec) precision: 0, 3, 6 or 9; -1 when not given
	// ts is the instant of a TIMESTAMP literal (naive: wall clock read as
	// UTC) and zoned says whether the text carried an offset. day is the
	// day number of a DATE literal.
	ts    instant
	zoned bool
	day   int64
}

// colRef names a column, or a member of struct columns when it has several parts.
type colRef struct {
	path []string
	pos  int
}

// node is one node of the immutable syntax tree.
type node struct {
	kind kind
	kids []*node
	col  colRef
	op   cmpOp
	lit  literal   // kCmp, kConst
	list []literal // kIn
	neg  bool      // NOT IN, IS NOT NULL
}

// reserved words cannot be plain identifiers.
var reserved = map[string]bool{
	"AND": true, "OR": true, "NOT": true, "IN": true, "IS": true, "NULL": true,
	"TRUE": true, "FALSE": true,
}

// keywords are printed back-quoted when used as identifiers: the reserved
// words plus words that start literals or that lance's SQL parser reserves.
var keywords = map[string]bool{
	"AND": true, "OR": true, "NOT": true, "IN": true, "IS": true, "NULL": true,
	"TRUE": true, "FALSE": true, "TIMESTAMP": true, "DATE": true, "DATETIME": true,
	"BETWEEN": true, "LIKE": true,
}

func appendIdent(b []byte, name string) []byte {
	plain := name != "" && isIdentStart(name[0]) && !keywords[strings.ToUpper(name)]
	for i := 1; plain && i < len(name); i++ {
		plain = isIdentPart(name[i])
	}
	if plain {
		return append(b, name...)
	}
	b = append(b, '`')
	b = append(b, strings.ReplaceAll(name, "`", "``")...)
	return append(b, '`')
}

func (c colRef) appendTo(b []byte) []byte {
	for i, p := range c.path {
		if i > 0 {
			b = append(b, '.')
		}
		b = appendIdent(b, p)
	}
	return b
}

// name returns the dotted path as canonical text.
func (c colRef) name() string { return string(c.appendTo(nil)) }

func appendQuoted(b []byte, s string) []byte {
	b = append(b, '\'')
	b = append(b, strings.ReplaceAll(s, "'", "''")...)
	return append(b, '\'')
}

func (l literal) appendTo(b []byte) []byte {
	switch l.kind {
	case lNull:
		return append(b, "NULL"...)
	case lBool:
		if l.b {
			return append(b, "TRUE"...)
		}
		return append(b, "FALSE"...)
	case lInt:
		if l.neg && l.mag != 0 {
			b = append(b, '-')
		}
		return strconv.AppendUint(b, l.mag, 10)
	case lFloat:
		return appendFloat(b, l.f)
	case lString:
		return appendQuoted(b, l.s)
	case lBinary:
		const digits = "0123456789abcdef"
		b = append(b, "X'"...)
		for i := 0; i < len(l.s); i++ {
			b = append(b, digits[l.s[i]>>4], digits[l.s[i]&15])
		}
		return append(b, '\'')
	case lTimestamp:
		b = append(b, "TIMESTAMP"...)
		if l.prec >= 0 {
			b = append(b, '(')
			b = strconv.AppendInt(b, int64(l.prec), 10)
			b = append(b, ')')
		}
		b = append(b, ' ')
		return appendQuoted(b, l.s)
	case lDate:
		b = append(b, "DATE "...)
		return appendQuoted(b, l.s)
	}
	return b
}

// appendFloat writes f so that it lexes back as the same float (never as an
// integer). Infinities are written as 1e999, which every SQL float parser we
// care about (Go, Rust) reads as infinity.
func appendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "1e999"...)
	case math.IsInf(f, -1):
		return append(b, "-1e999"...)
	}
	n := len(b)
	b = strconv.AppendFloat(b, f, 'g', -1, 64)
	if !strings.ContainsAny(string(b[n:]), ".eEn") {
		b = append(b, ".0"...)
	}
	return b
}

func (n *node) appendTo(b []byte) []byte {
	switch n.kind {
	case kAnd, kOr:
		sep := " AND "
		if n.kind == kOr {
			sep = " OR "
		}
		for i, k := range n.kids {
			if i > 0 {
				b = append(b, sep...)
			}
			if n.kind == kAnd && k.kind == kOr {
				b = append(b, '(')
				b = k.appendTo(b)
				b = append(b, ')')
			} else {
				b = k.appendTo(b)
			}
		}
	case kNot:
		b = append(b, "NOT "...)
		k := n.kids[0]
		if k.kind == kCol || k.kind == kConst || k.kind == kNot {
			return k.appendTo(b)
		}
		b = append(b, '(')
		b = k.appendTo(b)
		b = append(b, ')')
	case kCmp:
		b = n.col.appendTo(b)
		b = append(b, ' ')
		b = append(b, opText[n.op]...)
		b = append(b, ' ')
		b = n.lit.appendTo(b)
	case kIn:
		b = n.col.appendTo(b)
		if n.neg {
			b = append(b, " NOT"...)
		}
		b = append(b, " IN ("...)
		for i, l := range n.list {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = l.appendTo(b)
		}
		b = append(b, ')')
	case kIsNull:
		b = n.col.appendTo(b)
		if n.neg {
			return append(b, " IS NOT NULL"...)
		}
		return append(b, " IS NULL"...)
	case kCol:
		b = n.col.appendTo(b)
	case kConst:
		b = n.lit.appendTo(b)
	}
	return b
}

// walkCols calls f for every column reference in the tree.
func (n *node) walkCols(f func(colRef)) {
	switch n.kind {
	case kAnd, kOr, kNot:
		for _, k := range n.kids {
			k.walkCols(f)
		}
	case kCmp, kIn, kIsNull, kCol:
		f(n.col)
	}
}
