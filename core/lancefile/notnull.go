package lancefile

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// hasRequired reports whether f or one of its descendants is not nullable,
// that is whether firstBadNull has anything to check.
func hasRequired(f *Field) bool {
	if !f.Nullable {
		return true
	}
	for _, c := range f.Children {
		if hasRequired(c) {
			return true
		}
	}
	return false
}

// firstBadNull finds the first row of a (rows of f) holding a null that its
// field forbids: the path of that field ("a", "a.b", "tags.item") and the
// row. A member of a null struct and the items of a null list may be null
// whatever their field says (Arrow leaves them undefined); only a null whose
// parents are all valid counts. It costs nothing when every field of f is
// nullable, and a pass over the validity of the others.
func firstBadNull(f *Field, a arrow.Array) (path string, row int, found bool) {
	if !hasRequired(f) {
		return "", 0, false
	}
	return badNull(f, a, nil, f.Name)
}

// badNull is firstBadNull for the rows of a that vis marks (nil: all rows).
func badNull(f *Field, a arrow.Array, vis []bool, path string) (string, int, bool) {
	if !f.Nullable && a.NullN() > 0 {
		for i := 0; i < a.Len(); i++ {
			if a.IsNull(i) && (vis == nil || vis[i]) {
				return path, i, true
			}
		}
	}
	switch a := a.(type) {
	case *array.Struct:
		var members []bool // computed when a member needs it
		computed := false
		for k, c := range f.Children {
			if k >= a.NumField() || !hasRequired(c) {
				continue
			}
			if !computed {
				members, computed = validAndVisible(a, vis), true
			}
			if p, row, found := badNull(c, a.Field(k), members, path+"."+c.Name); found {
				return p, row, true // a member's rows are the struct's rows
			}
		}
	case array.ListLike:
		if len(f.Children) != 1 || !hasRequired(f.Children[0]) {
			break
		}
		items := a.ListValues()
		iv := make([]bool, items.Len())
		owner := make([]int, items.Len())
		for i := 0; i < a.Len(); i++ {
			if a.IsNull(i) || (vis != nil && !vis[i]) {
				continue
			}
			start, end := a.ValueOffsets(i)
			for j := max(start, 0); j < end && j < int64(len(iv)); j++ {
				iv[j], owner[j] = true, i
			}
		}
		item := f.Children[0]
		if p, row, found := badNull(item, items, iv, path+"."+item.Name); found {
			return p, owner[row], true
		}
	}
	return "", 0, false
}

// validAndVisible returns the rows of a that are valid and marked by vis
// (nil: all of them).
func validAndVisible(a arrow.Array, vis []bool) []bool {
	if a.NullN() == 0 {
		return vis
	}
	out := make([]bool, a.Len())
	for i := range out {
		out[i] = a.IsValid(i) && (vis == nil || vis[i])
	}
	return out
}
