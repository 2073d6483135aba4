package inspect_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/kv0/kv0/core/inspect"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/tracking"
)

func TestParseParamFilter(t *testing.T) {
	for _, c := range []struct {
		in   string
		want tracking.ParamFilter
	}{
		{"optimizer.lr<0.01", tracking.ParamFilter{Key: "optimizer.lr", Op: "<", Value: 0.01}},
		{"batch_size>=128", tracking.ParamFilter{Key: "batch_size", Op: ">=", Value: 128.0}},
		{"model.name=resnet18", tracking.ParamFilter{Key: "model.name", Op: "=", Value: "resnet18"}},
		{" amp != true ", tracking.ParamFilter{Key: "amp", Op: "!=", Value: true}},
		{"flag=false", tracking.ParamFilter{Key: "flag", Op: "=", Value: false}},
		{`seed="3"`, tracking.ParamFilter{Key: "seed", Op: "=", Value: "3"}},
		{"a<=b=c", tracking.ParamFilter{Key: "a", Op: "<=", Value: "b=c"}},
		{"x>-1e3", tracking.ParamFilter{Key: "x", Op: ">", Value: -1000.0}},
		{"note=", tracking.ParamFilter{Key: "note", Op: "=", Value: ""}},
	} {
		got, err := inspect.ParseParamFilter(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseParamFilter(%q) = %#v, %v; want %#v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "lr", "<0.1", "  =3", `s="\q"`} {
		_, err := inspect.ParseParamFilter(bad)
		var ae *inspect.ArgError
		if !errors.As(err, &ae) || ae.Arg != "param" || !errors.Is(err, inspect.ErrInvalid) {
			t.Errorf("ParseParamFilter(%q): %v, want an ArgError of param", bad, err)
		}
	}
}

// FuzzParseParamFilter: never a panic; an accepted filter has a key without
// surrounding space or operator in it and one of the six operators, and
// KEY OP VALUE parses back to itself when the value is a plain string.
func FuzzParseParamFilter(f *testing.F) {
	for _, s := range []string{"optimizer.lr<0.01", "a=b", `x!="y"`, "k>=true", "<", "==", "a<=<=b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pf, err := inspect.ParseParamFilter(s)
		if err != nil {
			if !errors.Is(err, inspect.ErrInvalid) {
				t.Fatalf("%q: untyped error %v", s, err)
			}
			return
		}
		if pf.Key == "" || pf.Key != strings.TrimSpace(pf.Key) || strings.ContainsAny(pf.Key, "<>=") || strings.Contains(pf.Key, "!=") {
			t.Fatalf("%q: key %q", s, pf.Key)
		}
		switch pf.Op {
		case "=", "!=", "<", "<=", ">", ">=":
		default:
			t.Fatalf("%q: op %q", s, pf.Op)
		}
		if v, ok := pf.Value.(string); ok && plain(v) {
			again, err := inspect.ParseParamFilter(pf.Key + pf.Op + " " + v)
			if err != nil || again != pf {
				t.Fatalf("%q: %#v does not parse back (%#v, %v)", s, pf, again, err)
			}
		}
	})
}

// plain reports whether a string value reads back as itself unquoted.
func plain(v string) bool {
	_, err := strconv.ParseFloat(v, 64)
	return v == strings.TrimSpace(v) && !strings.HasPrefix(v, `"`) && v != "true" && v != "false" && err != nil
}

func TestResolveRun(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	w, err := tracking.OpenRepo(ctx, st, "repo", tracking.RepoOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, name := range []string{"alpha", "twin", "twin"} {
		run, err := w.StartRun(ctx, tracking.RunSpec{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, run.ID())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := tracking.OpenRepo(ctx, st, "repo", tracking.RepoOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, arg := range []string{ids[0], "alpha"} {
		if in, err := inspect.ResolveRun(ctx, r, arg); err != nil || in.ID != ids[0] {
			t.Errorf("ResolveRun(%q) = %s, %v; want %s", arg, in.ID, err, ids[0])
		}
	}
	if in, err := inspect.ResolveRun(ctx, r, ids[2]); err != nil || in.ID != ids[2] {
		t.Errorf("ResolveRun(id of a twin) = %s, %v", in.ID, err)
	}
	if _, err := inspect.ResolveRun(ctx, r, "twin"); !errors.Is(err, inspect.ErrInvalid) || !strings.Contains(err.Error(), "2 runs") {
		t.Errorf("an ambiguous name: %v", err)
	}
	if _, err := inspect.ResolveRun(ctx, r, "nobody"); !errors.Is(err, tracking.ErrNotFound) || !strings.Contains(err.Error(), `"nobody"`) {
		t.Errorf("no such run: %v", err)
	}
}
