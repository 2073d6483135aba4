// Package arrowstream writes record batches as an Arrow IPC stream, without
// compression and without dictionaries: the types Lance datasets hold.
//
// arrow-go's ipc.Writer does the same and more, but it links the LZ4 and
// zstd compressors whether a stream uses them or not, and its generated
// flatbuffers code for every Arrow message, which costs the WebAssembly
// module about a quarter of a megabyte compressed. This package builds the
// messages itself with the flatbuffers runtime: the Schema message (the
// same bytes arrow-go's ipc.GetSchemaPayload writes), then per batch the
// RecordBatch header (field nodes and buffer locations) and the body, each
// buffer padded to 8 bytes.
package arrowstream

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/kv0/kv0/core/lancefile"
)

// ErrUnsupportedType is returned, wrapped with the type and the field's
// name, for a schema holding a type the writer does not encode
// (dictionaries, unions, views, run-end encoded arrays, extension types).
// The writer checks the schema when it writes it, on the first Write or on
// Close, and then writes nothing at all: every later Write and Close
// returns the same error.
var ErrUnsupportedType = errors.New("arrowstream: unsupported type")

// Writer writes one IPC stream: the schema, then one message per batch, then
// the end-of-stream marker on Close.
type Writer struct {
	w       io.Writer
	schema  *arrow.Schema
	started bool
	closed  bool
	err     error // from writing the schema, returned by every later call

	nodes   []node
	buffers []buffer
	body    [][]byte
	b       *flatbuffers.Builder
}

type node struct{ length, nulls int64 }
type buffer struct{ offset, length int64 }

// NewWriter returns a writer of a stream of batches of schema to w.
func NewWriter(w io.Writer, schema *arrow.Schema) *Writer {
	return &Writer{w: w, schema: schema, b: flatbuffers.NewBuilder(1024)}
}

// start writes the schema message before the first batch (or the end of a
// stream without batches), once; a failure sticks.
func (w *Writer) start() error {
	if !w.started {
		w.started = true
		meta, err := schemaMessage(w.b, w.schema)
		if err == nil {
			err = w.writeMessage(meta)
		}
		w.err = err
	}
	return w.err
}

// writeMessage writes an encapsulated message's metadata: the continuation
// marker, the length, the flatbuffer and zeros to a multiple of 8 bytes.
func (w *Writer) writeMessage(meta []byte) error {
	var prefix [8]byte
	pad := (8 - (len(meta)+8)%8) % 8
	binary.LittleEndian.PutUint32(prefix[0:], 0xFFFFFFFF)
	binary.LittleEndian.PutUint32(prefix[4:], uint32(len(meta)+pad))
	if _, err := w.w.Write(prefix[:]); err != nil {
		return err
	}
	if _, err := w.w.Write(meta); err != nil {
		return err
	}
	var zeros [8]byte
	_, err := w.w.Write(zeros[:pad])
	return err
}

// Write appends one batch; its schema must be the writer's.
func (w *Writer) Write(rec arrow.RecordBatch) error {
	if w.closed {
		return errors.New("arrowstream: write after Close")
	}
	if !rec.Schema().Equal(w.schema) {
		return fmt.Errorf("arrowstream: batch schema %v differs from the stream's %v", rec.Schema(), w.schema)
	}
	if err := w.start(); err != nil {
		return err
	}
	w.nodes, w.buffers, w.body = w.nodes[:0], w.buffers[:0], w.body[:0]
	var size int64
	for i, col := range rec.Columns() {
		data := col.Data()
		if hasOffset(data) {
			// Sliced arrays (a filtered scan's) are copied to offset 0, so
			// every buffer can be written as it is.
			c, err := lancefile.Concat([]arrow.Array{col})
			if err != nil {
				return fmt.Errorf("arrowstream: column %q: %w", w.schema.Field(i).Name, err)
			}
			defer c.Release()
			data = c.Data()
		}
		if err := w.visit(data, &size); err != nil {
			return fmt.Errorf("column %q: %w", w.schema.Field(i).Name, err)
		}
	}
	if err := w.writeMessage(w.recordBatchMessage(rec.NumRows(), size)); err != nil {
		return err
	}
	var zeros [8]byte
	for _, b := range w.body {
		if _, err := w.w.Write(b); err != nil {
			return err
		}
		if p := padding(int64(len(b))); p > 0 {
			if _, err := w.w.Write(zeros[:p]); err != nil {
				return err
			}
		}
	}
	return nil
}

// Close writes the schema (for a stream without batches) and the
// end-of-stream marker.
func (w *Writer) Close() error {
	if w.closed {
		return nil
	}
	if err := w.start(); err != nil {
		return err
	}
	w.closed = true
	var eos [8]byte
	binary.LittleEndian.PutUint32(eos[0:], 0xFFFFFFFF)
	_, err := w.w.Write(eos[:])
	return err
}

func padding(n int64) int64 { return (8 - n%8) % 8 }

func hasOffset(d arrow.ArrayData) bool {
	if d.Offset() != 0 {
		return true
	}
	for _, c := range d.Children() {
		if hasOffset(c) {
			return true
		}
	}
	return false
}

// nullCount is d's null count; slices leave it unknown (negative) until
// counted.
func nullCount(d arrow.ArrayData) int {
	if n := d.NullN(); n >= 0 {
		return n
	}
	if d.DataType().ID() == arrow.NULL {
		return d.Len()
	}
	bufs := d.Buffers()
	if len(bufs) == 0 || bufs[0] == nil {
		return 0
	}
	return d.Len() - bitutil.CountSetBits(bufs[0].Bytes(), d.Offset(), d.Len())
}

// visit records the field nodes and buffers of d and its children, depth
// first, as the IPC format orders them.
func (w *Writer) visit(d arrow.ArrayData, size *int64) error {
	bufs := d.Buffers()
	nulls := nullCount(d)
	w.nodes = append(w.nodes, node{int64(d.Len()), int64(nulls)})
	add := func(i int) {
		var b []byte
		if i < len(bufs) && bufs[i] != nil {
			b = bufs[i].Bytes()
		}
		if i == 0 && nulls == 0 {
			b = nil // no validity bitmap needed
		}
		w.buffers = append(w.buffers, buffer{*size, int64(len(b))})
		w.body = append(w.body, b)
		*size += int64(len(b)) + padding(int64(len(b)))
	}
	switch dt := d.DataType(); dt.ID() {
	case arrow.NULL:
		return nil
	case arrow.BOOL, arrow.UINT8, arrow.INT8, arrow.UINT16, arrow.INT16, arrow.UINT32, arrow.INT32,
		arrow.UINT64, arrow.INT64, arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64, arrow.DATE32, arrow.DATE64,
		arrow.TIMESTAMP, arrow.TIME32, arrow.TIME64, arrow.DURATION, arrow.INTERVAL_MONTHS, arrow.INTERVAL_DAY_TIME,
		arrow.INTERVAL_MONTH_DAY_NANO, arrow.DECIMAL32, arrow.DECIMAL64, arrow.DECIMAL128, arrow.DECIMAL256,
		arrow.FIXED_SIZE_BINARY:
		add(0)
		add(1)
		return nil
	case arrow.STRING, arrow.BINARY, arrow.LARGE_STRING, arrow.LARGE_BINARY:
		add(0)
		add(1)
		add(2)
		return nil
	case arrow.LIST, arrow.LARGE_LIST, arrow.MAP:
		add(0)
		add(1)
		return w.visit(d.Children()[0], size)
	case arrow.FIXED_SIZE_LIST:
		add(0)
		return w.visit(d.Children()[0], size)
	case arrow.STRUCT:
		add(0)
		for _, c := range d.Children() {
			if err := w.visit(c, size); err != nil {
				return err
			}
		}
		return nil
	default:
		return fmt.Errorf("%w: %s", ErrUnsupportedType, dt)
	}
}

// recordBatchMessage builds the flatbuffers Message holding a RecordBatch
// header (Message.fbs: version V5, header type RecordBatch = 3).
func (w *Writer) recordBatchMessage(rows, bodyLen int64) []byte {
	b := w.b
	b.Reset()
	b.StartVector(16, len(w.buffers), 8)
	for i := len(w.buffers) - 1; i >= 0; i-- {
		b.Prep(8, 16)
		b.PrependInt64(w.buffers[i].length)
		b.PrependInt64(w.buffers[i].offset)
	}
	buffers := b.EndVector(len(w.buffers))
	b.StartVector(16, len(w.nodes), 8)
	for i := len(w.nodes) - 1; i >= 0; i-- {
		b.Prep(8, 16)
		b.PrependInt64(w.nodes[i].nulls)
		b.PrependInt64(w.nodes[i].length)
	}
	nodes := b.EndVector(len(w.nodes))
	// table RecordBatch { length: long; nodes: [FieldNode]; buffers: [Buffer]; ... }
	b.StartObject(5)
	b.PrependInt64Slot(0, rows, 0)
	b.PrependUOffsetTSlot(1, nodes, 0)
	b.PrependUOffsetTSlot(2, buffers, 0)
	return message(b, headerRecordBatch, b.EndObject(), bodyLen)
}
