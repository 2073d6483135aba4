package inspect

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/kv0/kv0/core/tracking"
)

// notFound is a lookup that found nothing; errors.Is(err,
// tracking.ErrNotFound) holds for it.
type notFound struct{ msg string }

func (e *notFound) Error() string        { return e.msg }
func (e *notFound) Is(target error) bool { return target == tracking.ErrNotFound }

// ResolveRun finds the run arg names: a run id, or else the name of
// exactly one run (`kv0 run|params|series REPO ID` accept both). No match
// fails with an error matching tracking.ErrNotFound; a name several runs
// carry fails as *ArgError.
func ResolveRun(ctx context.Context, r *tracking.Repo, arg string) (tracking.RunInfo, error) {
	in, err := r.Run(ctx, arg)
	if err == nil || !errors.Is(err, tracking.ErrNotFound) {
		return in, err
	}
	runs, err := r.Runs(ctx, tracking.RunFilter{})
	if err != nil {
		return in, err
	}
	var found []tracking.RunInfo
	for _, x := range runs {
		if x.Name == arg {
			found = append(found, x)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return in, &notFound{fmt.Sprintf("no run with id or name %q", arg)}
	}
	return in, &ArgError{Arg: "run", Err: fmt.Errorf("%d runs are named %q; give an id", len(found), arg)}
}

// paramOps are the comparison operators of a parameter filter, longest
// first so that "<=" is not read as "<".
var paramOps = []string{"<=", ">=", "!=", "=", "<", ">"}

// ParseParamFilter parses a parameter comparison as `kv0 runs --param`
// takes it: KEY OP VALUE with OP one of = != < <= > >=, e.g.
// "optimizer.lr<0.01". VALUE is a number, true or false, or else a string
// (quote it as JSON, "\"3\"", to compare the string "3"). A filter without
// an operator or key fails as *ArgError.
func ParseParamFilter(s string) (tracking.ParamFilter, error) {
	at, op := -1, ""
	for i := 0; i < len(s) && at < 0; i++ {
		for _, o := range paramOps {
			if strings.HasPrefix(s[i:], o) {
				at, op = i, o
				break
			}
		}
	}
	if at <= 0 {
		return tracking.ParamFilter{}, &ArgError{Arg: "param", Err: fmt.Errorf("%q is not KEY OP VALUE (OP one of = != < <= > >=)", s)}
	}
	key, raw := strings.TrimSpace(s[:at]), strings.TrimSpace(s[at+len(op):])
	if key == "" {
		return tracking.ParamFilter{}, &ArgError{Arg: "param", Err: fmt.Errorf("%q names no parameter", s)}
	}
	var v any = raw
	switch {
	case raw == "true" || raw == "false":
		v = raw == "true"
	case len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"':
		u, err := strconv.Unquote(raw)
		if err != nil {
			return tracking.ParamFilter{}, &ArgError{Arg: "param", Err: fmt.Errorf("%q: bad quoted value: %v", s, err)}
		}
		v = u
	default:
		if f, err := strconv.ParseFloat(raw, 64); err == nil {
			v = f
		}
	}
	return tracking.ParamFilter{Key: key, Op: op, Value: v}, nil
}
