package lance

import (
	"bytes"
	"context"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
)

// arrowDeletionMax is the largest deletion set Lance stores as an Arrow
// file; larger sets are Roaring bitmaps.
const arrowDeletionMax = 5000

var deletionSchema = arrow.NewSchema([]arrow.Field{{Name: "row_id", Type: arrow.PrimitiveTypes.Uint32}}, nil)

// encodeArrowDeletions writes offsets as an Arrow IPC file with one
// non-null UInt32 column "row_id" (uncompressed; Lance reads that too).
func encodeArrowDeletions(bm *roaring.Bitmap) ([]byte, error) {
	b := array.NewUint32Builder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(bm.ToArray(), nil)
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(deletionSchema, []arrow.Array{col}, int64(col.Len()))
	defer rec.Release()
	var buf bytes.Buffer
	w, err := ipc.NewFileWriter(&buf, ipc.WithSchema(deletionSchema))
	if err != nil {
		return nil, err
	}
	if err := w.Write(rec); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// encodeBitmapDeletions writes offsets in the Roaring portable format
// without run containers (every Roaring reader understands it).
func encodeBitmapDeletions(bm *roaring.Bitmap) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := bm.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeDeletionFile stores the deletion set of fragment f (the union of
// its old and new deletions) and returns the fragment with the new
// deletion file. readVersion is the version the deleting transaction read.
func (d *Dataset) writeDeletionFile(ctx context.Context, pf *tablepb.DataFragment, bm *roaring.Bitmap, readVersion uint64) (*tablepb.DataFragment, string, error) {
	df := &tablepb.DeletionFile{ReadVersion: readVersion, Id: randomU64(), NumDeletedRows: bm.GetCardinality()}
	var (
		data []byte
		err  error
	)
	if bm.GetCardinality() <= arrowDeletionMax {
		df.FileType = tablepb.DeletionFile_ARROW_ARRAY
		data, err = encodeArrowDeletions(bm)
	} else {
		df.FileType = tablepb.DeletionFile_BITMAP
		data, err = encodeBitmapDeletions(bm)
	}
	if err != nil {
		return nil, "", err
	}
	key := d.k.deletion(deletionFileName(pf.GetId(), df))
	if err := d.st.Put(ctx, key, data); err != nil {
		return nil, "", fmt.Errorf("lance: storing deletion file %s: %w", key, err)
	}
	nf := pf.CloneVT()
	nf.DeletionFile = df
	return nf, key, nil
}
