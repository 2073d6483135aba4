package expr

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// sexpr prints the tree with explicit structure, for precedence tests.
func sexpr(n *node) string {
	switch n.kind {
	case kAnd, kOr:
		op := "and"
		if n.kind == kOr {
			op = "or"
		}
		var parts []string
		for _, k := range n.kids {
			parts = append(parts, sexpr(k))
		}
		return "(" + op + " " + strings.Join(parts, " ") + ")"
	case kNot:
		return "(not " + sexpr(n.kids[0]) + ")"
	}
	return "[" + string(n.appendTo(nil)) + "]"
}

func TestParsePrecedence(t *testing.T) {
	cases := []struct{ src, want string }{
		{"a = 1", "[a = 1]"},
		{"a = 1 AND b = 2 OR c = 3", "(or (and [a = 1] [b = 2]) [c = 3])"},
		{"a = 1 OR b = 2 AND c = 3", "(or [a = 1] (and [b = 2] [c = 3]))"},
		{"NOT a = 1 AND b = 2", "(and (not [a = 1]) [b = 2])"},
		{"NOT a = 1 OR b = 2", "(or (not [a = 1]) [b = 2])"},
		{"NOT (a = 1 OR b = 2)", "(not (or [a = 1] [b = 2]))"},
		{"(a = 1 OR b = 2) AND c = 3", "(and (or [a = 1] [b = 2]) [c = 3])"},
		{"a = 1 AND (b = 2 AND c = 3)", "(and [a = 1] [b = 2] [c = 3])"},
		{"a=1 or b=2 or c=3 and d=4", "(or [a = 1] [b = 2] (and [c = 3] [d = 4]))"},
		{"NOT NOT flag", "(not (not [flag]))"},
		{"not a is null and b is not null", "(and (not [a IS NULL]) [b IS NOT NULL])"},
		{"a not in (1, 2) or a in (-3)", "(or [a NOT IN (1, 2)] [a IN (-3)])"},
		{"5 > a", "[a < 5]"},
		{"'x' <> s", "[s != 'x']"},
		{"TRUE", "[TRUE]"},
		{"s = 'a' OR NULL", "(or [s = 'a'] [NULL])"},
		{"date = DATE '2024-01-01'", "[`date` = DATE '2024-01-01']"},
		{"timestamp >= TIMESTAMP(3) '2024-01-01 00:00:00'", "[`timestamp` >= TIMESTAMP(3) '2024-01-01 00:00:00']"},
		{"meta.kind = 'x'", "[meta.kind = 'x']"},
		{"`my col` = 1 AND `a.b` = 2", "(and [`my col` = 1] [`a.b` = 2])"},
		{`s = "dq"`, "[s = 'dq']"},
		{"b = x'0AfF'", "[b = X'0aff']"},
		{"b = X'abc'", "[b = X'0abc']"},
		{"f < -1.5e3", "[f < -1500.0]"},
		{"f < .5", "[f < 0.5]"},
		{"f < 1e400", "[f < 1e999]"},
		{"f = -0.0", "[f = -0.0]"},
		{"u = 18446744073709551615", "[u = 18446744073709551615]"},
		{"u = 18446744073709551616", "[u = 1.8446744073709552e+19]"},
		{"i = - 9223372036854775808", "[i = -9223372036854775808]"},
		{"a == 1", "[a = 1]"},
		{"A = 1 aNd B = 2", "(and [A = 1] [B = 2])"},
		{"s = 'it''s'", "[s = 'it''s']"},
		{"`we``ird` = 1", "[`we``ird` = 1]"},
	}
	for _, c := range cases {
		t.Run(c.src, func(t *testing.T) {
			e, err := Parse(c.src)
			if err != nil {
				t.Fatal(err)
			}
			if got := sexpr(e.root); got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
			again, err := Parse(e.String())
			if err != nil {
				t.Fatalf("String() %q does not parse: %v", e.String(), err)
			}
			if again.String() != e.String() || sexpr(again.root) != sexpr(e.root) {
				t.Fatalf("round trip: %q -> %q", e.String(), again.String())
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		src   string
		pos   int
		token string
		msg   string
	}{
		{"", 0, "", "unexpected end of input (want a column, a literal, NOT or ()"},
		{"a = ", 4, "", "unexpected end of input (want a literal)"},
		{"a = 1 AND )", 10, ")", `unexpected ")" (want a column, a literal, NOT or ()`},
		{"a IN (1, )", 9, ")", `unexpected ")" (want a literal)`},
		{"a IN 1", 5, "1", `unexpected "1" (want "(")`},
		{"a IN ()", 6, ")", `unexpected ")" (want a literal)`},
		{"(a = 1", 6, "", `unexpected end of input (want ")")`},
		{"a = 1 b = 2", 6, "b", `unexpected "b" (want AND, OR or the end of the expression)`},
		{"a IS 1", 5, "1", `unexpected "1" (want NULL)`},
		{"a NOT LIKE 'x'", 6, "LIKE", `unexpected "LIKE" (want IN)`},
		{"a = 'abc", 4, "'abc", "unterminated string"},
		{"a = 1 @ 2", 6, "@", "unexpected character"},
		{"a = 12abc", 4, "12abc", "malformed number"},
		{"a = b", 4, "b", `unexpected "b" (want a literal; comparing two columns is not supported)`},
		{"1 = 2", 4, "2", `unexpected "2" (want a column)`},
		{`"my col" = 1`, 11, "1", `unexpected "1" (want a column; "..." is a string, as in lance: quote column names with backquotes)`},
		{"a = X'0g'", 4, "X'0g'", "invalid hex digit in binary literal"},
		{"ts < TIMESTAMP '2024-13-01'", 15, "'2024-13-01'", `invalid timestamp "2024-13-01" (want YYYY-MM-DD[ HH:MM:SS[.fff]][Z|±HH:MM])`},
		{"d = DATE '2024-02-30'", 9, "'2024-02-30'", `invalid date "2024-02-30" (want YYYY-MM-DD)`},
		{"ts < TIMESTAMP(4) 'x'", 15, "4", `unexpected "4" (want a precision of 0, 3, 6 or 9)`},
		{"a = -b", 5, "b", `unexpected "b" (want a number after -)`},
		{"AND = 1", 0, "AND", `unexpected "AND" (want a column, a literal, NOT or ()`},
		{"a.", 2, "", "unexpected end of input (want a column name)"},
		{"'x'", 3, "", "unexpected end of input (want a comparison operator)"},
		{strings.Repeat("(", 300) + "a", 201, "(", "expression nested too deeply"},
	}
	for _, c := range cases {
		t.Run(c.src, func(t *testing.T) {
			_, err := Parse(c.src)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a *SyntaxError", err)
			}
			if se.Pos != c.pos || se.Token != c.token || se.Msg != c.msg {
				t.Fatalf("got Pos %d Token %q Msg %q, want %d %q %q", se.Pos, se.Token, se.Msg, c.pos, c.token, c.msg)
			}
			if want := fmt.Sprintf("expr: at %d: %s", c.pos, c.msg); se.Error() != want {
				t.Fatalf("Error() = %q, want %q", se.Error(), want)
			}
		})
	}
}

func TestCaret(t *testing.T) {
	src := "a = 1 AND )"
	_, err := Parse(src)
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatal(err)
	}
	want := "a = 1 AND )\n          ^"
	if got := se.Caret(src); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	src = "s = 'é' AND\n\tb = )"
	_, err = Parse(src)
	if !errors.As(err, &se) {
		t.Fatal(err)
	}
	if got, want := se.Caret(src), "\tb = )\n\t    ^"; got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestColumns(t *testing.T) {
	e, err := Parse("b = 1 AND meta.kind = 'x' OR (a IS NULL AND b IN (2)) OR NOT `my col` > 3")
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(e.Columns())
	if want := "[b meta a my col]"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
