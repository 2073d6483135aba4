package expr

import (
	"fmt"
	"strconv"
	"strings"
)

// maxDepth bounds the nesting of parentheses and NOT so that hostile input
// cannot exhaust the stack.
const maxDepth = 200

// SyntaxError reports input that Parse cannot read. Match it with errors.As.
type SyntaxError struct {
	// Pos is the byte offset of the offending token in the source.
	Pos int
	// Token is the offending token as written; empty at the end of input.
	Token string
	// Msg says what is wrong, e.g. `unexpected ")" (want a literal)`.
	Msg string
}

// Error implements error: `expr: at 12: unexpected ")" (want a literal)`.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("expr: at %d: %s", e.Pos, e.Msg)
}

// Caret returns the source line that holds the error followed by a line
// with a caret under the offending token, for showing to people:
//
//	a = 1 AND )
//	          ^
//
// src must be the string that was passed to Parse.
func (e *SyntaxError) Caret(src string) string {
	pos := min(max(e.Pos, 0), len(src))
	start := strings.LastIndexByte(src[:pos], '\n') + 1
	end := strings.IndexByte(src[pos:], '\n')
	if end < 0 {
		end = len(src)
	} else {
		end += pos
	}
	pad := make([]byte, 0, pos-start)
	for _, r := range src[start:pos] {
		if r == '\t' {
			pad = append(pad, '\t')
		} else {
			pad = append(pad, ' ')
		}
	}
	return src[start:end] + "\n" + string(pad) + "^"
}

// Expr is a parsed filter expression. It is immutable and safe for
// concurrent use.
type Expr struct {
	root *node
}

// Parse parses a filter expression. Errors are *SyntaxError values that
// point at the offending token.
func Parse(src string) (*Expr, error) {
	p := &parser{lex: lexer{src: src}}
	if err := p.advance(); err != nil {
		return nil, err
	}
	n, err := p.parseOr(0)
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tEOF {
		return nil, p.unexpected("want AND, OR or the end of the expression")
	}
	return &Expr{root: n}, nil
}

// String returns the expression as canonical text that Parse reads back to
// the same expression; it is also valid lance SQL filter syntax. Keywords
// are upper case, identifiers that need it are back-quoted, comparisons are
// written column first, `<>` becomes `!=`, nested AND and OR are flattened.
func (e *Expr) String() string {
	return string(e.root.appendTo(nil))
}

// Columns returns the distinct top-level columns the expression reads, in
// order of first use, as written (Bind also matches them case-insensitively).
// For a struct member `meta.kind` it returns "meta".
func (e *Expr) Columns() []string {
	var out []string
	seen := map[string]bool{}
	e.root.walkCols(func(c colRef) {
		if !seen[c.path[0]] {
			seen[c.path[0]] = true
			out = append(out, c.path[0])
		}
	})
	return out
}

type parser struct {
	lex lexer
	tok token
}

func (p *parser) advance() error {
	t, err := p.lex.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

// peek returns the token after the current one without consuming anything.
func (p *parser) peek() token {
	l := p.lex
	t, err := l.next()
	if err != nil {
		return token{kind: tEOF, pos: -1}
	}
	return t
}

func (p *parser) isKeyword(kw string) bool {
	return p.tok.kind == tIdent && strings.EqualFold(p.tok.text, kw)
}

func describe(t token, src string) string {
	if t.kind == tEOF {
		return "end of input"
	}
	return strconv.Quote(src[t.pos:t.end])
}

func (p *parser) unexpected(want string) error {
	t := p.tok
	text := ""
	if t.kind != tEOF {
		text = p.lex.src[t.pos:t.end]
	}
	return &SyntaxError{Pos: t.pos, Token: text, Msg: fmt.Sprintf("unexpected %s (%s)", describe(t, p.lex.src), want)}
}

func (p *parser) parseOr(depth int) (*node, error) {
	left, err := p.parseAnd(depth)
	if err != nil {
		return nil, err
	}
	for p.isKeyword("OR") {
		if err := p.advance(); err != nil {
			return nil, err
		}
		right, err := p.parseAnd(depth)
		if err != nil {
			return nil, err
		}
		left = join(kOr, left, right)
	}
	return left, nil
}

func (p *parser) parseAnd(depth int) (*node, error) {
	left, err := p.parseNot(depth)
	if err != nil {
		return nil, err
	}
	for p.isKeyword("AND") {
		if err := p.advance(); err != nil {
			return nil, err
		}
		right, err := p.parseNot(depth)
		if err != nil {
			return nil, err
		}
		left = join(kAnd, left, right)
	}
	return left, nil
}

// join builds a flattened AND or OR node.
func join(k kind, a, b *node) *node {
	var kids []*node
	for _, n := range []*node{a, b} {
		if n.kind == k {
			kids = append(kids, n.kids...)
		} else {
			kids = append(kids, n)
		}
	}
	return &node{kind: k, kids: kids}
}

func (p *parser) parseNot(depth int) (*node, error) {
	if depth > maxDepth {
		return nil, &SyntaxError{Pos: p.tok.pos, Token: p.lex.src[p.tok.pos:p.tok.end], Msg: "expression nested too deeply"}
	}
	if p.isKeyword("NOT") {
		if err := p.advance(); err != nil {
			return nil, err
		}
		k, err := p.parseNot(depth + 1)
		if err != nil {
			return nil, err
		}
		return &node{kind: kNot, kids: []*node{k}}, nil
	}
	return p.parsePrimary(depth)
}

const wantPredicate = "want a column, a literal, NOT or ("

func (p *parser) parsePrimary(depth int) (*node, error) {
	t := p.tok
	switch {
	case t.kind == tLParen:
		if err := p.advance(); err != nil {
			return nil, err
		}
		n, err := p.parseOr(depth + 1)
		if err != nil {
			return nil, err
		}
		if p.tok.kind != tRParen {
			return nil, p.unexpected(`want ")"`)
		}
		return n, p.advance()
	case t.kind == tQIdent || (t.kind == tIdent && !p.startsLiteral()):
		if t.kind == tIdent && reserved[strings.ToUpper(t.text)] {
			return nil, p.unexpected(wantPredicate)
		}
		col, err := p.parseColumn()
		if err != nil {
			return nil, err
		}
		return p.parseColumnPredicate(col)
	case p.startsLiteral():
		lit, err := p.parseLiteral()
		if err != nil {
			return nil, err
		}
		hint := ""
		if t.kind == tDString {
			hint = `; "..." is a string, as in lance: quote column names with backquotes`
		}
		if p.tok.kind == tOp {
			op := opFromText(p.tok.text)
			if err := p.advance(); err != nil {
				return nil, err
			}
			if p.tok.kind != tQIdent && (p.tok.kind != tIdent || p.startsLiteral() || reserved[strings.ToUpper(p.tok.text)]) {
				return nil, p.unexpected("want a column" + hint)
			}
			col, err := p.parseColumn()
			if err != nil {
				return nil, err
			}
			return &node{kind: kCmp, col: col, op: op.flip(), lit: lit}, nil
		}
		if lit.kind == lNull || lit.kind == lBool {
			return &node{kind: kConst, lit: lit}, nil
		}
		return nil, p.unexpected("want a comparison operator" + hint)
	}
	return nil, p.unexpected(wantPredicate)
}

// startsLiteral reports whether the current token begins a literal.
func (p *parser) startsLiteral() bool {
	switch p.tok.kind {
	case tString, tDString, tNumber, tHex, tMinus:
		return true
	case tIdent:
		switch strings.ToUpper(p.tok.text) {
		case "NULL", "TRUE", "FALSE":
			return true
		case "TIMESTAMP", "DATETIME":
			n := p.peek()
			return n.kind == tString || n.kind == tLParen
		case "DATE":
			return p.peek().kind == tString
		}
	}
	return false
}

func (p *parser) parseColumn() (colRef, error) {
	c := colRef{pos: p.tok.pos}
	for {
		switch {
		case p.tok.kind == tQIdent:
			c.path = append(c.path, p.tok.text)
		case p.tok.kind == tIdent && !reserved[strings.ToUpper(p.tok.text)]:
			c.path = append(c.path, p.tok.text)
		default:
			return c, p.unexpected("want a column name")
		}
		if err := p.advance(); err != nil {
			return c, err
		}
		if p.tok.kind != tDot {
			return c, nil
		}
		if err := p.advance(); err != nil {
			return c, err
		}
	}
}

func opFromText(s string) cmpOp {
	for i, t := range opText {
		if t == s {
			return cmpOp(i)
		}
	}
	panic("expr: unknown operator " + s)
}

func (p *parser) parseColumnPredicate(col colRef) (*node, error) {
	switch {
	case p.tok.kind == tOp:
		op := opFromText(p.tok.text)
		if err := p.advance(); err != nil {
			return nil, err
		}
		if !p.startsLiteral() {
			if p.tok.kind == tIdent || p.tok.kind == tQIdent {
				return nil, p.unexpected("want a literal; comparing two columns is not supported")
			}
			return nil, p.unexpected("want a literal")
		}
		lit, err := p.parseLiteral()
		if err != nil {
			return nil, err
		}
		return &node{kind: kCmp, col: col, op: op, lit: lit}, nil
	case p.isKeyword("IS"):
		if err := p.advance(); err != nil {
			return nil, err
		}
		neg := false
		if p.isKeyword("NOT") {
			neg = true
			if err := p.advance(); err != nil {
				return nil, err
			}
		}
		if !p.isKeyword("NULL") {
			return nil, p.unexpected("want NULL")
		}
		return &node{kind: kIsNull, col: col, neg: neg}, p.advance()
	case p.isKeyword("NOT"), p.isKeyword("IN"):
		neg := false
		if p.isKeyword("NOT") {
			neg = true
			if err := p.advance(); err != nil {
				return nil, err
			}
			if !p.isKeyword("IN") {
				return nil, p.unexpected("want IN")
			}
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind != tLParen {
			return nil, p.unexpected(`want "("`)
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
		n := &node{kind: kIn, col: col, neg: neg}
		for {
			if !p.startsLiteral() {
				return nil, p.unexpected("want a literal")
			}
			lit, err := p.parseLiteral()
			if err != nil {
				return nil, err
			}
			n.list = append(n.list, lit)
			if p.tok.kind == tRParen {
				return n, p.advance()
			}
			if p.tok.kind != tComma {
				return nil, p.unexpected(`want "," or ")"`)
			}
			if err := p.advance(); err != nil {
				return nil, err
			}
		}
	}
	return &node{kind: kCol, col: col}, nil
}

func (p *parser) parseLiteral() (literal, error) {
	t := p.tok
	lit := literal{pos: t.pos, prec: -1}
	switch t.kind {
	case tString, tDString:
		lit.kind, lit.s = lString, t.text
	case tHex:
		lit.kind, lit.s = lBinary, decodeHex(t.text)
	case tNumber:
		lit = numberLiteral(t.text, false, t.pos)
	case tMinus:
		if err := p.advance(); err != nil {
			return lit, err
		}
		if p.tok.kind != tNumber {
			return lit, p.unexpected("want a number after -")
		}
		lit = numberLiteral(p.tok.text, true, t.pos)
	case tIdent:
		switch kw := strings.ToUpper(t.text); kw {
		case "NULL":
			lit.kind = lNull
		case "TRUE", "FALSE":
			lit.kind, lit.b = lBool, kw == "TRUE"
		case "DATE":
			if err := p.advance(); err != nil {
				return lit, err
			}
			day, n, ok := parseDate(p.tok.text)
			if !ok || n != len(p.tok.text) {
				return lit, &SyntaxError{Pos: p.tok.pos, Token: p.lex.src[p.tok.pos:p.tok.end], Msg: "invalid date " + strconv.Quote(p.tok.text) + " (want YYYY-MM-DD)"}
			}
			lit.kind, lit.s, lit.day = lDate, p.tok.text, day
		case "TIMESTAMP", "DATETIME":
			if err := p.advance(); err != nil {
				return lit, err
			}
			if p.tok.kind == tLParen {
				if err := p.advance(); err != nil {
					return lit, err
				}
				switch p.tok.text {
				case "0", "3", "6", "9":
					if p.tok.kind == tNumber {
						lit.prec = int(p.tok.text[0] - '0')
					}
				}
				if lit.prec < 0 {
					return lit, p.unexpected("want a precision of 0, 3, 6 or 9")
				}
				if err := p.advance(); err != nil {
					return lit, err
				}
				if p.tok.kind != tRParen {
					return lit, p.unexpected(`want ")"`)
				}
				if err := p.advance(); err != nil {
					return lit, err
				}
			}
			if p.tok.kind != tString {
				return lit, p.unexpected("want a quoted timestamp")
			}
			ts, zoned, ok := parseTimestamp(p.tok.text)
			if !ok {
				return lit, &SyntaxError{Pos: p.tok.pos, Token: p.lex.src[p.tok.pos:p.tok.end], Msg: "invalid timestamp " + strconv.Quote(p.tok.text) + " (want YYYY-MM-DD[ HH:MM:SS[.fff]][Z|±HH:MM])"}
			}
			prec := lit.prec
			if prec < 0 {
				prec = 6 // lance reads TIMESTAMP '…' as timestamp[us]
			}
			lit.kind, lit.s, lit.ts, lit.zoned = lTimestamp, p.tok.text, ts.floorTo(prec), zoned
		default:
			return lit, p.unexpected("want a literal")
		}
	default:
		return lit, p.unexpected("want a literal")
	}
	return lit, p.advance()
}

// numberLiteral converts a lexed number. Integers up to the uint64 maximum
// (in magnitude) stay exact; anything else becomes a float64 (overflow gives
// an infinity, as in lance).
func numberLiteral(text string, neg bool, pos int) literal {
	lit := literal{pos: pos, prec: -1}
	if !strings.ContainsAny(text, ".eE") {
		if u, err := strconv.ParseUint(text, 10, 64); err == nil {
			lit.kind, lit.neg, lit.mag = lInt, neg && u != 0, u
			return lit
		}
	}
	f, _ := strconv.ParseFloat(text, 64) // the lexer admits only valid syntax; ErrRange gives ±Inf or 0
	if neg {
		f = -f
	}
	lit.kind, lit.f = lFloat, f
	return lit
}

// decodeHex decodes hex digits; an odd count gets a leading zero nibble, as
// in lance.
func decodeHex(s string) string {
	if len(s)%2 == 1 {
		s = "0" + s
	}
	b := make([]byte, len(s)/2)
	for i := range b {
		b[i] = unhex(s[2*i])<<4 | unhex(s[2*i+1])
	}
	return string(b)
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
