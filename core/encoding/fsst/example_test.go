package fsst_test

import (
	"fmt"

	"github.com/kv0/kv0/core/encoding/fsst"
)

func Example() {
	// A writer trains a table on a page of strings and stores its bytes in
	// the page's Fsst encoding, next to the compressed strings.
	strs := []string{"https://example.com/a", "https://example.com/b", "https://example.com/c"}
	var samples [][]byte
	for _, s := range strs {
		samples = append(samples, []byte(s))
	}
	enc := fsst.Train(samples)
	table := enc.AppendBytes(nil)
	var codes []byte
	offsets := []int64{0}
	for _, s := range samples {
		codes = enc.Encode(codes, s)
		offsets = append(offsets, int64(len(codes)))
	}

	// A reader parses the table and decodes the page.
	t, err := fsst.ParseTable(table)
	if err != nil {
		panic(err)
	}
	data, outOffsets, err := t.DecodeOffsets(nil, nil, codes, offsets)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(table), string(data[outOffsets[1]:outOffsets[2]]))
	// Output: 2312 https://example.com/b
}
