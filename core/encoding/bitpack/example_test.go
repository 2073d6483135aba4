package bitpack_test

import (
	"fmt"

	"github.com/kv0/kv0/core/encoding/bitpack"
)

func Example() {
	var vals [bitpack.BlockLen]uint64
	for i := range vals {
		vals[i] = uint64(i % 10)
	}
	w := bitpack.BitWidth(vals[:])
	packed := make([]uint64, bitpack.PackedBytes(w)/8)
	bitpack.Pack64(w, packed, &vals)

	var out [bitpack.BlockLen]uint64
	bitpack.Unpack64(w, &out, packed)
	fmt.Println(w, len(packed), out[0], out[9], out[1023])
	// Output: 4 64 0 9 3
}
