package compress_test

import (
	"fmt"

	"github.com/kv0/kv0/core/encoding/compress"
)

func Example() {
	page := []byte("a page of values, a page of values, a page of values")
	comp, err := compress.Compress(compress.SchemeZstd, 3, nil, page)
	if err != nil {
		panic(err)
	}
	// The first 8 bytes hold the uncompressed size.
	fmt.Println(comp[0])
	out, err := compress.Decompress(compress.SchemeZstd, nil, comp)
	fmt.Println(string(out) == string(page), err)
	// Output:
	// 52
	// true <nil>
}
