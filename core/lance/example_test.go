package lance_test

import (
	"context"
	"fmt"

	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
)

// Open the latest version of a dataset and print its change log. The store
// holds three versions written by lance.WriteTestVersions (a test helper
// standing in for files written by lance).
func ExampleLog() {
	ctx := context.Background()
	st := store.NewMemory()
	if err := lance.WriteTestVersions(st, "t.lance", 3); err != nil {
		panic(err)
	}
	st.ResetCounters()
	d, err := lance.Open(ctx, st, "t.lance", lance.OpenOptions{})
	if err != nil {
		panic(err)
	}
	rows, _ := d.CountRows(ctx)
	fmt.Printf("version %d, %d rows, %d requests\n", d.Version(), rows, st.Counters().Requests())

	log, err := lance.Log(ctx, st, "t.lance")
	if err != nil {
		panic(err)
	}
	for _, v := range log {
		fmt.Printf("v%d %-8s +%d -%d rows, +%d fragments\n", v.Version, v.Operation, v.RowsAdded, v.RowsRemoved, v.FragmentsAdded)
	}
	// Output:
	// version 3, 30 rows, 2 requests
	// v1 Create   +10 -0 rows, +1 fragments
	// v2 Append   +10 -0 rows, +1 fragments
	// v3 Append   +10 -0 rows, +1 fragments
}
