// Package expr is kv0's filter language: the predicates of `kv0 lance
// delete --where` and `kv0 lance cat --where`, parsed once and evaluated
// over Arrow record batches.
//
// The language is the subset of lance's SQL filter syntax that these
// commands need, so one predicate string can be handed to lancedb's
// delete() and to kv0 alike; (*Expr).String gives canonical text that both
// accept and that becomes the Lance Delete transaction's predicate.
//
// # Grammar
//
// In EBNF; keywords are case-insensitive, white space (space, tab, CR, LF)
// separates tokens:
//
//	expr       = conj { "OR" conj } .
//	conj       = neg { "AND" neg } .
//	neg        = "NOT" neg | primary .
//	primary    = "(" expr ")"
//	           | column [ cmpop literal
//	                    | [ "NOT" ] "IN" "(" literal { "," literal } ")"
//	                    | "IS" [ "NOT" ] "NULL" ]
//	           | literal cmpop column
//	           | "TRUE" | "FALSE" | "NULL" .
//	cmpop      = "=" | "==" | "!=" | "<>" | "<" | "<=" | ">" | ">=" .
//	column     = name { "." name } .                  (* struct members: meta.kind *)
//	name       = ident | "`" { char | "``" } "`" .     (* `my col`, `a.b` is one name *)
//	ident      = ( letter | "_" ) { letter | digit | "_" } .  (* not a reserved word *)
//	literal    = [ "-" ] number | string | hexbytes | "TRUE" | "FALSE" | "NULL"
//	           | ( "TIMESTAMP" | "DATETIME" ) [ "(" ( "0" | "3" | "6" | "9" ) ")" ] string
//	           | "DATE" string .
//	number     = digits [ "." [ digits ] ] [ exponent ] | "." digits [ exponent ] .
//	exponent   = ( "e" | "E" ) [ "+" | "-" ] digits .
//	string     = "'" { char | "''" } "'" | `"` { char | `""` } `"` .
//	hexbytes   = ( "X" | "x" ) "'" { hexdigit } "'" .
//
// Reserved words: AND OR NOT IN IS NULL TRUE FALSE. TIMESTAMP, DATE and
// DATETIME start a literal only when a string (or a precision) follows, so
// columns may carry those names. Precedence, loosest first: OR, AND, NOT,
// then the comparison; `NOT a = 1 AND b = 2` is `(NOT (a = 1)) AND (b = 2)`.
// A bare column must be a bool column.
//
// A double-quoted "text" is a string literal, not a column name: that is how
// lance reads it, and reading it otherwise would make the same predicate
// delete different rows in kv0 and in lance. Quote odd column names with
// backquotes.
//
// # Semantics
//
// SQL three-valued logic: a comparison with a null value or with NULL is
// UNKNOWN, NOT UNKNOWN is UNKNOWN, FALSE AND UNKNOWN is FALSE, TRUE OR
// UNKNOWN is TRUE; `x IN (1, NULL)` is TRUE when x = 1 and otherwise UNKNOWN,
// so `x NOT IN (1, NULL)` is never TRUE. A row passes only when the whole
// predicate is TRUE.
//
// Literals are converted once, at Bind, to the column's type:
//
//	integer columns  integer and float literals compare by exact value:
//	                 `u8 < 300` is TRUE and `u64 = -1` FALSE for every
//	                 non-null row, `i32 < 2.5` is `i32 <= 2`. (lance refuses
//	                 literals the column type cannot hold.)
//	float columns    integers and floats are rounded to the column width first
//	                 (`f32 = 0.1` finds float32(0.1)), as lance does. Values are
//	                 ordered by IEEE 754 totalOrder, as Arrow's kernels (and so
//	                 lance 8) do: -NaN < -Inf < … < -0 < +0 < … < +Inf < NaN and
//	                 NaN = NaN; so `f = 0` misses -0.0, `f < 0` finds -0.0,
//	                 `f > 1e308` and `f != 1` find NaN.
//	bool             TRUE and FALSE; FALSE < TRUE.
//	utf8, large_utf8 strings, compared bytewise (code point order).
//	binary, large_binary
//	                 X'0aff' or a string (its UTF-8 bytes); lance accepts only X''.
//	timestamp        TIMESTAMP '2024-01-01 12:00:00' or a plain string
//	                 ('2024-01-01', '2024-01-01T12:00:00.5Z', …; lance accepts
//	                 only the TIMESTAMP form) or DATE '2024-01-01' (midnight UTC).
//	                 Text without an offset is wall-clock time in the column's
//	                 zone (UTC when it has none), as in lance; text with Z or
//	                 ±HH:MM is that instant. TIMESTAMP without a precision keeps
//	                 microseconds (lance reads it as timestamp[us]), TIMESTAMP(n)
//	                 keeps n fractional digits, a plain string keeps nanoseconds.
//	                 The literal is then compared exactly with the column's
//	                 values of any unit: `ts_s < TIMESTAMP '… 00:00:01.5'` finds
//	                 1 s, where lance first truncates the literal to 1 s.
//	date32           DATE '2024-01-01', a date string, or a timestamp
//	                 (compared exactly with midnight UTC of each day).
//
// Any column type may be tested with IS [NOT] NULL; comparisons need one of
// the types above. Column names match exactly first, then
// case-insensitively, as in lance.
//
// # Evaluation
//
// Bound.Eval computes, for a 64-row word at a time, the masks of rows where
// each node is TRUE and FALSE, with branch-free loops specialised per column
// type and operator; there is no per-row interface call or allocation.
package expr
