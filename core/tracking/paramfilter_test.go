package tracking

import (
	"context"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/kv0/kv0/core/store"
)

func TestParseParamFilter(t *testing.T) {
	for _, c := range []struct {
		in   string
		want ParamFilter
	}{
		{"optimizer.lr<0.01", ParamFilter{"optimizer.lr", "<", 0.01}},
		{"optimizer.lr <= 1e-3", ParamFilter{"optimizer.lr", "<=", 1e-3}},
		{"batch_size>=32", ParamFilter{"batch_size", ">=", 32.0}},
		{"seed>-1", ParamFilter{"seed", ">", -1.0}},
		{"model.name=resnet18", ParamFilter{"model.name", "=", "resnet18"}},
		{"model.name==resnet18", ParamFilter{"model.name", "=", "resnet18"}},
		{"model.name!=vit", ParamFilter{"model.name", "!=", "vit"}},
		{"amp=true", ParamFilter{"amp", "=", true}},
		{"amp!=false", ParamFilter{"amp", "!=", false}},
		{`note="a<b"`, ParamFilter{"note", "=", "a<b"}},
		{`ver="1.5"`, ParamFilter{"ver", "=", "1.5"}},
		{"ver=1.5.2", ParamFilter{"ver", "=", "1.5.2"}},
		{"x=01", ParamFilter{"x", "=", "01"}},
	} {
		got, err := ParseParamFilter(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: got %#v, %v; want %#v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "lr", "<0.1", " =1", "lr<", "lr< ", "amp<true", "lr=1e999", `s="unterminated`, "a=!b", "lr=<1"} {
		_, err := ParseParamFilter(in)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: got %v, want ErrInvalid", in, err)
		}
	}
}

// FuzzParseParamFilter checks that the parser never panics and that every
// filter it accepts reads back the same from its String form.
func FuzzParseParamFilter(f *testing.F) {
	for _, s := range []string{"optimizer.lr<0.01", "a=true", `n="x"`, "k!=v", "x>=-1e5", "y<=0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pf, err := ParseParamFilter(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("%q: error %v does not wrap ErrInvalid", s, err)
			}
			return
		}
		again, err := ParseParamFilter(pf.String())
		if err != nil || !reflect.DeepEqual(again, pf) {
			t.Fatalf("%q -> %q -> %#v, %v; want %#v", s, pf.String(), again, err, pf)
		}
	})
}

// A filter that cannot match by its form is ErrInvalid, not an empty list.
func TestRunsRejectsMalformedParamFilters(t *testing.T) {
	ctx := context.Background()
	r := openTest(t, store.NewMemory(), RepoOptions{FlushInterval: -1})
	if _, err := r.StartRun(ctx, RunSpec{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	for _, pf := range []ParamFilter{
		{Key: "lr", Op: "~", Value: 0.1},
		{Key: "", Op: "=", Value: 1.0},
		{Key: "amp", Op: "<", Value: true},
		{Key: "lr", Op: "=", Value: nil},
		{Key: "lr", Op: "=", Value: []any{1}},
		{Key: "lr", Op: "=", Value: math.NaN()},
	} {
		if _, err := r.Runs(ctx, RunFilter{Params: []ParamFilter{pf}}); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", pf, err)
		}
	}
	for _, pf := range []ParamFilter{{Key: "lr", Op: "<=", Value: 1}, {Key: "n", Value: "x"}, {Key: "amp", Op: "!=", Value: false}} {
		if _, err := r.Runs(ctx, RunFilter{Params: []ParamFilter{pf}}); err != nil {
			t.Errorf("%+v: %v", pf, err)
		}
	}
}
