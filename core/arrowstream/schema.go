package arrowstream

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	flatbuffers "github.com/google/flatbuffers/go"
)

// Numbers from Arrow's Message.fbs and Schema.fbs.
const (
	metadataV5        = 4 // MetadataVersion.V5
	headerSchema      = 1 // MessageHeader.Schema
	headerRecordBatch = 3 // MessageHeader.RecordBatch
)

// schemaMessage builds the flatbuffers Message holding a Schema header for
// s. The tables are built in the order arrow-go's ipc package builds them
// (each field's name, its children, its type, its children vector, its
// metadata, then the field), so the bytes are the ones arrow-go writes. A
// type the writer does not encode is ErrUnsupportedType.
func schemaMessage(b *flatbuffers.Builder, s *arrow.Schema) ([]byte, error) {
	b.Reset()
	fields := make([]flatbuffers.UOffsetT, s.NumFields())
	for i, f := range s.Fields() {
		var err error
		if fields[i], err = fieldTable(b, f); err != nil {
			return nil, err
		}
	}
	vec := offsets(b, fields)
	meta := keyValues(b, s.Metadata())
	// table Schema { endianness: short; fields: [Field]; custom_metadata: [KeyValue]; ... }
	b.StartObject(4)
	b.PrependInt16Slot(0, int16(s.Endianness()), 0)
	b.PrependUOffsetTSlot(1, vec, 0)
	b.PrependUOffsetTSlot(2, meta, 0)
	return message(b, headerSchema, b.EndObject(), 0), nil
}

// fieldTable builds the Field table of f and everything it refers to.
func fieldTable(b *flatbuffers.Builder, f arrow.Field) (flatbuffers.UOffsetT, error) {
	name := b.CreateString(f.Name)
	var kids []flatbuffers.UOffsetT
	var children []arrow.Field
	switch dt := f.Type.(type) {
	case *arrow.StructType:
		children = dt.Fields()
	case arrow.ListLikeType: // list, large list, fixed-size list, map
		children = []arrow.Field{dt.ElemField()}
	}
	for _, c := range children {
		k, err := fieldTable(b, c)
		if err != nil {
			return 0, err
		}
		kids = append(kids, k)
	}
	kind, typ, ok := typeTable(b, f.Type, kids)
	if !ok {
		return 0, fmt.Errorf("%w %s (field %q)", ErrUnsupportedType, f.Type, f.Name)
	}
	vec := offsets(b, kids)
	meta := keyValues(b, f.Metadata)
	// table Field { name; nullable; type (union); dictionary; children; custom_metadata }
	b.StartObject(7)
	b.PrependUOffsetTSlot(0, name, 0)
	b.PrependBoolSlot(1, f.Nullable, false)
	b.PrependByteSlot(2, kind, 0)
	b.PrependUOffsetTSlot(3, typ, 0)
	b.PrependUOffsetTSlot(5, vec, 0)
	b.PrependUOffsetTSlot(6, meta, 0)
	return b.EndObject(), nil
}

// typeTable builds the table of dt's member of the Type union and returns
// the member's number with it, or ok false for a type the writer does not
// encode. kids are the field's children, which arrow-go also writes
// (needlessly) inside a Struct_ table. Fields left at their schema default
// are omitted, as arrow-go's builder omits them; the builder trims a
// vtable's trailing empty slots, so one StartObject size serves every
// member.
func typeTable(b *flatbuffers.Builder, dt arrow.DataType, kids []flatbuffers.UOffsetT) (kind byte, off flatbuffers.UOffsetT, ok bool) {
	var tz flatbuffers.UOffsetT
	if ts, ok := dt.(*arrow.TimestampType); ok && ts.TimeZone != "" {
		tz = b.CreateString(ts.TimeZone)
	}
	b.StartObject(3)
	switch id := dt.ID(); id {
	case arrow.NULL:
		kind = 1
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		kind = 2 // Int { bitWidth: int; is_signed: bool }
		b.PrependInt32Slot(0, int32(dt.(arrow.FixedWidthDataType).BitWidth()), 0)
		b.PrependBoolSlot(1, id == arrow.INT8 || id == arrow.INT16 || id == arrow.INT32 || id == arrow.INT64, false)
	case arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64:
		kind = 3 // FloatingPoint { precision: HALF, SINGLE, DOUBLE }
		b.PrependInt16Slot(0, int16(dt.(arrow.FixedWidthDataType).BitWidth()/32), 0)
	case arrow.BINARY:
		kind = 4
	case arrow.STRING:
		kind = 5
	case arrow.BOOL:
		kind = 6
	case arrow.DECIMAL32, arrow.DECIMAL64, arrow.DECIMAL128, arrow.DECIMAL256:
		kind = 7 // Decimal { precision: int; scale: int; bitWidth: int = 128 }
		d := dt.(arrow.DecimalType)
		b.PrependInt32Slot(0, d.GetPrecision(), 0)
		b.PrependInt32Slot(1, d.GetScale(), 0)
		b.PrependInt32Slot(2, int32(d.BitWidth()), 128)
	case arrow.DATE32, arrow.DATE64:
		kind = 8 // Date { unit: DAY, MILLISECOND = MILLISECOND }
		b.PrependInt16Slot(0, int16(id-arrow.DATE32), 1)
	case arrow.TIME32, arrow.TIME64:
		kind = 9 // Time { unit: TimeUnit = MILLISECOND; bitWidth: int = 32 }
		t := dt.(arrow.TemporalWithUnit)
		b.PrependInt16Slot(0, int16(t.TimeUnit()), 1)
		b.PrependInt32Slot(1, int32(t.BitWidth()), 32)
	case arrow.TIMESTAMP:
		kind = 10 // Timestamp { unit: TimeUnit; timezone: string }
		b.PrependInt16Slot(0, int16(dt.(arrow.TemporalWithUnit).TimeUnit()), 0)
		b.PrependUOffsetTSlot(1, tz, 0)
	case arrow.INTERVAL_MONTHS, arrow.INTERVAL_DAY_TIME, arrow.INTERVAL_MONTH_DAY_NANO:
		kind = 11 // Interval { unit: YEAR_MONTH, DAY_TIME, MONTH_DAY_NANO }
		unit := int16(id - arrow.INTERVAL_MONTHS)
		if id == arrow.INTERVAL_MONTH_DAY_NANO {
			unit = 2
		}
		b.PrependInt16Slot(0, unit, 0)
	case arrow.LIST:
		kind = 12
	case arrow.STRUCT:
		kind = 13
		for i := len(kids) - 1; i >= 0; i-- {
			b.PrependUOffsetT(kids[i])
		}
	case arrow.FIXED_SIZE_BINARY:
		kind = 15 // FixedSizeBinary { byteWidth: int }
		b.PrependInt32Slot(0, int32(dt.(*arrow.FixedSizeBinaryType).ByteWidth), 0)
	case arrow.FIXED_SIZE_LIST:
		kind = 16 // FixedSizeList { listSize: int }
		b.PrependInt32Slot(0, dt.(*arrow.FixedSizeListType).Len(), 0)
	case arrow.MAP:
		kind = 17 // Map { keysSorted: bool }
		b.PrependBoolSlot(0, dt.(*arrow.MapType).KeysSorted, false)
	case arrow.DURATION:
		kind = 18 // Duration { unit: TimeUnit = MILLISECOND }
		b.PrependInt16Slot(0, int16(dt.(arrow.TemporalWithUnit).TimeUnit()), 1)
	case arrow.LARGE_BINARY:
		kind = 19
	case arrow.LARGE_STRING:
		kind = 20
	case arrow.LARGE_LIST:
		kind = 21
	default:
		b.Reset() // leaves the builder usable; its contents are dropped
		return 0, 0, false
	}
	return kind, b.EndObject(), true
}

// offsets builds a vector of the tables at offs.
func offsets(b *flatbuffers.Builder, offs []flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	b.StartVector(4, len(offs), 4)
	for i := len(offs) - 1; i >= 0; i-- {
		b.PrependUOffsetT(offs[i])
	}
	return b.EndVector(len(offs))
}

// keyValues builds the custom_metadata vector of KeyValue tables of md, or
// nothing (offset 0) for empty metadata.
func keyValues(b *flatbuffers.Builder, md arrow.Metadata) flatbuffers.UOffsetT {
	if md.Len() == 0 {
		return 0
	}
	kvs := make([]flatbuffers.UOffsetT, md.Len())
	for i, k := range md.Keys() {
		key := b.CreateString(k)
		val := b.CreateString(md.Values()[i])
		b.StartObject(2)
		b.PrependUOffsetTSlot(0, key, 0)
		b.PrependUOffsetTSlot(1, val, 0)
		kvs[i] = b.EndObject()
	}
	return offsets(b, kvs)
}

// message finishes the Message table (version V5, the header of type kind
// at header, bodyLen body bytes) and returns the built bytes.
func message(b *flatbuffers.Builder, kind byte, header flatbuffers.UOffsetT, bodyLen int64) []byte {
	// table Message { version: short; header: MessageHeader (type, value); bodyLength: long; custom_metadata }
	b.StartObject(5)
	b.PrependInt16Slot(0, metadataV5, 0)
	b.PrependByteSlot(1, kind, 0)
	b.PrependUOffsetTSlot(2, header, 0)
	b.PrependInt64Slot(3, bodyLen, 0)
	b.Finish(b.EndObject())
	return b.FinishedBytes()
}
