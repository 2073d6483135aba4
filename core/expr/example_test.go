package expr_test

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/expr"
)

func Example() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int32Builder).AppendValues([]int32{1, 2, 3}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"a", "", "c"}, []bool{true, false, true})
	rec := b.NewRecordBatch()
	defer rec.Release()

	e, err := expr.Parse("id >= 2 and not (name = 'a')")
	if err != nil {
		panic(err)
	}
	bound, err := e.Bind(schema)
	if err != nil {
		panic(err)
	}
	rows, _ := bound.Eval(rec)
	fmt.Println(e.String())
	fmt.Println(e.Columns())
	fmt.Println(rows) // row 2 has a null name: NOT (NULL = 'a') is unknown
	// Output:
	// id >= 2 AND NOT (name = 'a')
	// [id name]
	// [false false true]
}

func ExampleSyntaxError_Caret() {
	src := "id = 1 AND (name = )"
	_, err := expr.Parse(src)
	var se *expr.SyntaxError
	if errors.As(err, &se) {
		fmt.Println(se)
		fmt.Println(se.Caret(src))
	}
	// Output:
	// expr: at 19: unexpected ")" (want a literal)
	// id = 1 AND (name = )
	//                    ^
}
