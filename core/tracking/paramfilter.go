package tracking

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ParseParamFilter parses a parameter comparison as the CLI's --param and
// the HTTP API's param= take it: a dotted key, an operator (=, ==, !=, <,
// <=, >, >=) and a value, e.g. "optimizer.lr<0.01", "model.name=resnet18",
// "amp=true", `note="a<b"`. The value is a number when it is a JSON number,
// a boolean when it is true or false (which compare with = and != only), a
// string when it is a quoted JSON string, and otherwise the text as written
// (spaces around it trimmed; it may not start with an operator's
// character). Errors wrap ErrInvalid and quote the input.
func ParseParamFilter(s string) (ParamFilter, error) {
	bad := func(why string) (ParamFilter, error) {
		return ParamFilter{}, fmt.Errorf("%w: parameter filter %q: %s", ErrInvalid, s, why)
	}
	if !utf8.ValidString(s) {
		return bad("not valid UTF-8")
	}
	i := strings.IndexAny(s, "=!<>")
	if i < 0 {
		return bad("want KEY OP VALUE with OP one of = != < <= > >=")
	}
	key := strings.TrimSpace(s[:i])
	if key == "" {
		return bad("empty key")
	}
	rest := s[i:]
	var op string
	for _, o := range []string{"==", "!=", "<=", ">=", "=", "<", ">"} {
		if strings.HasPrefix(rest, o) {
			op = o
			break
		}
	}
	if op == "" {
		return bad(fmt.Sprintf("unknown operator at %q", rest))
	}
	text := strings.TrimSpace(rest[len(op):])
	if op == "==" {
		op = "="
	}
	if text == "" {
		return bad("empty value")
	}
	pf := ParamFilter{Key: key, Op: op}
	switch {
	case text == "true" || text == "false":
		if op != "=" && op != "!=" {
			return bad("booleans compare with = and != only")
		}
		pf.Value = text == "true"
	case text[0] == '"':
		var v string
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			return bad("malformed quoted string")
		}
		pf.Value = v
	case isJSONNumber(text):
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return bad(fmt.Sprintf("number %s out of range", text))
		}
		pf.Value = f
	case strings.ContainsAny(text[:1], "=!<>"):
		return bad(fmt.Sprintf("value %q starts with an operator (quote it to mean the text)", text))
	default:
		pf.Value = text
	}
	return pf, nil
}

// isJSONNumber reports whether s is a number in JSON's grammar.
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// String renders the filter as ParseParamFilter reads it back.
func (pf ParamFilter) String() string {
	op := pf.Op
	if op == "" || op == "==" {
		op = "="
	}
	var v string
	switch x := pf.Value.(type) {
	case string:
		b, _ := json.Marshal(x)
		v = string(b)
	case bool:
		v = strconv.FormatBool(x)
	default:
		if f, ok := toFloat(x); ok {
			v = strconv.FormatFloat(f, 'g', -1, 64)
		} else {
			v = fmt.Sprint(x)
		}
	}
	return pf.Key + op + v
}
