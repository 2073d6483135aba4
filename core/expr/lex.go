package expr

import (
	"strings"
)

// tokKind classifies a token.
type tokKind uint8

const (
	tEOF     tokKind = iota
	tIdent           // plain identifier or keyword; text is the identifier
	tQIdent          // back-quoted identifier; text is unescaped
	tString          // '...' ; text is unescaped
	tDString         // "..." ; text is unescaped (a string literal, as in lance)
	tNumber          // text is the number as written
	tHex             // X'..'; text is the hex digits
	tOp              // = != <> < <= > >=
	tLParen
	tRParen
	tComma
	tDot
	tMinus
)

// token is one lexical token. pos and end are byte offsets into the source.
type token struct {
	kind tokKind
	text string
	pos  int
	end  int
}

// lexer splits a source string into tokens on demand.
type lexer struct {
	src string
	pos int
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentPart(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// next returns the next token or a *SyntaxError.
func (l *lexer) next() (token, error) {
	s := l.src
	for l.pos < len(s) && (s[l.pos] == ' ' || s[l.pos] == '\t' || s[l.pos] == '\n' || s[l.pos] == '\r') {
		l.pos++
	}
	start := l.pos
	if start >= len(s) {
		return token{kind: tEOF, pos: start, end: start}, nil
	}
	c := s[start]
	tok := func(k tokKind, end int, text string) (token, error) {
		l.pos = end
		return token{kind: k, text: text, pos: start, end: end}, nil
	}
	switch {
	case (c == 'x' || c == 'X') && start+1 < len(s) && s[start+1] == '\'':
		end := strings.IndexByte(s[start+2:], '\'')
		if end < 0 {
			return token{}, &SyntaxError{Pos: start, Token: s[start:], Msg: "unterminated hex literal"}
		}
		end += start + 2
		digits := s[start+2 : end]
		for i := 0; i < len(digits); i++ {
			if !isHex(digits[i]) {
				return token{}, &SyntaxError{Pos: start, Token: s[start : end+1], Msg: "invalid hex digit in binary literal"}
			}
		}
		return tok(tHex, end+1, digits)
	case isIdentStart(c):
		end := start + 1
		for end < len(s) && isIdentPart(s[end]) {
			end++
		}
		return tok(tIdent, end, s[start:end])
	case isDigit(c) || (c == '.' && start+1 < len(s) && isDigit(s[start+1])):
		end := start
		for end < len(s) && isDigit(s[end]) {
			end++
		}
		if end < len(s) && s[end] == '.' {
			end++
			for end < len(s) && isDigit(s[end]) {
				end++
			}
		}
		if end < len(s) && (s[end] == 'e' || s[end] == 'E') {
			e := end + 1
			if e < len(s) && (s[e] == '+' || s[e] == '-') {
				e++
			}
			if e < len(s) && isDigit(s[e]) {
				for e < len(s) && isDigit(s[e]) {
					e++
				}
				end = e
			}
		}
		if end < len(s) && (isIdentPart(s[end]) || s[end] == '.') {
			e := end
			for e < len(s) && (isIdentPart(s[e]) || s[e] == '.') {
				e++
			}
			return token{}, &SyntaxError{Pos: start, Token: s[start:e], Msg: "malformed number"}
		}
		return tok(tNumber, end, s[start:end])
	case c == '\'' || c == '"' || c == '`':
		text, end, ok := unquote(s, start)
		if !ok {
			what := map[byte]string{'\'': "string", '"': "string", '`': "quoted identifier"}[c]
			return token{}, &SyntaxError{Pos: start, Token: s[start:], Msg: "unterminated " + what}
		}
		k := map[byte]tokKind{'\'': tString, '"': tDString, '`': tQIdent}[c]
		return tok(k, end, text)
	case c == '(':
		return tok(tLParen, start+1, "(")
	case c == ')':
		return tok(tRParen, start+1, ")")
	case c == ',':
		return tok(tComma, start+1, ",")
	case c == '.':
		return tok(tDot, start+1, ".")
	case c == '-':
		return tok(tMinus, start+1, "-")
	case c == '=':
		if start+1 < len(s) && s[start+1] == '=' {
			return tok(tOp, start+2, "=")
		}
		return tok(tOp, start+1, "=")
	case c == '!':
		if start+1 < len(s) && s[start+1] == '=' {
			return tok(tOp, start+2, "!=")
		}
	case c == '<':
		if start+1 < len(s) && s[start+1] == '=' {
			return tok(tOp, start+2, "<=")
		}
		if start+1 < len(s) && s[start+1] == '>' {
			return tok(tOp, start+2, "!=")
		}
		return tok(tOp, start+1, "<")
	case c == '>':
		if start+1 < len(s) && s[start+1] == '=' {
			return tok(tOp, start+2, ">=")
		}
		return tok(tOp, start+1, ">")
	}
	// Report one whole UTF-8 character.
	end := start + 1
	for end < len(s) && s[end]&0xC0 == 0x80 {
		end++
	}
	return token{}, &SyntaxError{Pos: start, Token: s[start:end], Msg: "unexpected character"}
}

// unquote reads a quoted run starting at s[start] (the quote character) in
// which a doubled quote stands for one. It returns the unescaped text and the
// offset just past the closing quote.
func unquote(s string, start int) (string, int, bool) {
	q := s[start]
	var b strings.Builder
	i := start + 1
	plain := i
	for i < len(s) {
		if s[i] != q {
			i++
			continue
		}
		if i+1 < len(s) && s[i+1] == q {
			b.WriteString(s[plain : i+1])
			i += 2
			plain = i
			continue
		}
		if b.Len() == 0 {
			return s[start+1 : i], i + 1, true
		}
		b.WriteString(s[plain:i])
		return b.String(), i + 1, true
	}
	return "", 0, false
}

func isHex(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}
