package lancefile

import (
	"github.com/kv0/kv0/core/encoding/fsst"
)

// fsstTable is a parsed FSST symbol table of a page (nil when the codec has
// none).
type fsstTable = *fsst.Table

func parseFsst(b []byte) (fsstTable, error) {
	t, err := fsst.ParseTable(b)
	if err != nil {
		return nil, corruptf("FSST symbol table: %v", err)
	}
	return t, nil
}

// fsstDecodeInto decodes the compressed strings src[offs[i]:offs[i+1]] and
// appends them to b.
func fsstDecodeInto(t fsstTable, src []byte, offs []int64, b *valBuilder) error {
	if b.kind != kindVar || len(offs) == 0 {
		return corruptf("FSST strings where %s values are expected", b.kind)
	}
	data, o, err := t.DecodeOffsets(b.data, b.offs[:len(b.offs)-1], src, offs)
	if err != nil {
		return corruptf("FSST: %v", err)
	}
	b.data, b.offs = data, o
	b.n += len(offs) - 1
	return nil
}
