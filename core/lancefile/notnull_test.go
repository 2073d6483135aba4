package lancefile

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// TestFirstBadNull: a null counts only where its field is not nullable and
// every parent is valid (members of null structs and items of null lists
// are undefined in Arrow).
func TestFirstBadNull(t *testing.T) {
	item := arrow.Field{Name: "item", Type: arrow.PrimitiveTypes.Int32, Nullable: false}
	as := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: false},
		{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "m", Type: arrow.BinaryTypes.String, Nullable: false}), Nullable: true},
		{Name: "l", Type: arrow.ListOfField(item), Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	s := mustSchema(t, as)
	for _, tc := range []struct {
		name, rows string
		path       string // "" when nothing is wrong
		row        int
	}{
		{"all valid", `[{"a":1,"s":{"m":"x"},"l":[1,2],"n":null}]`, "", 0},
		{"null top level", `[{"a":1,"s":null,"l":null,"n":1},{"a":null,"s":null,"l":null,"n":1}]`, "a", 1},
		{"null member of a null struct", `[{"a":1,"s":null,"l":null,"n":null}]`, "", 0},
		{"null member of a valid struct", `[{"a":1,"s":{"m":"x"},"l":[],"n":null},{"a":2,"s":{"m":null},"l":[],"n":null}]`, "s.m", 1},
		{"null item of a valid list", `[{"a":1,"s":null,"l":[1],"n":null},{"a":2,"s":null,"l":[3,null],"n":null}]`, "l.item", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := recordFromJSON(t, as, tc.rows)
			defer rec.Release()
			var path string
			var row int
			for i, f := range s.Fields {
				if p, r, found := firstBadNull(f, rec.Column(i)); found {
					path, row = p, r
					break
				}
			}
			if path != tc.path || (path != "" && row != tc.row) {
				t.Fatalf("firstBadNull = %q row %d, want %q row %d", path, row, tc.path, tc.row)
			}
		})
	}
}

// TestReaderRefusesNullInNotNull: a file whose column holds nulls, read
// with a schema that says the column is not nullable (what a damaged
// manifest can claim), fails as ErrCorrupt naming the file, the column and
// the row, instead of handing out the nulls.
func TestReaderRefusesNullInNotNull(t *testing.T) {
	as := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	s := mustSchema(t, as)
	rec := recordFromJSON(t, as, `[{"v":1},{"v":2},{"v":null},{"v":4}]`)
	defer rec.Release()
	file := writeFile(t, s, WriterOptions{}, rec)
	_, f := openBytes(t, file)
	strict := *s.Fields[0]
	strict.Nullable = false
	columnOf := map[int32]int{strict.ID: 0}

	if _, err := readAllJSON(t, f, &Schema{Fields: []*Field{s.Fields[0]}}, columnOf, 2); err != nil {
		t.Fatalf("nullable read: %v", err)
	}
	_, err := readAllJSON(t, f, &Schema{Fields: []*Field{&strict}}, columnOf, 2)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "f.lance") ||
		!strings.Contains(err.Error(), `column "v" is not nullable but row 2 is null`) {
		t.Fatalf("NOT NULL read of a null: %v", err)
	}
}
