package lancefile

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kv0/kv0/core/internal/lancepb/filepb"
)

// SchemaFromArrow builds a Schema for an Arrow schema, assigning field ids in
// pre-order starting at firstID (0 for a new dataset), as Lance does. Types
// the writer cannot store fail with ErrUnsupportedType naming the column.
func SchemaFromArrow(as *arrow.Schema, firstID int32) (*Schema, error) {
	s := &Schema{}
	if md := as.Metadata(); md.Len() > 0 {
		s.Metadata = make(map[string]string, md.Len())
		for i, k := range md.Keys() {
			s.Metadata[k] = md.Values()[i]
		}
	}
	id := firstID
	for _, af := range as.Fields() {
		f, err := fieldFromArrow(af, &id)
		if err != nil {
			return nil, err
		}
		s.Fields = append(s.Fields, f)
	}
	return s, nil
}

func fieldFromArrow(af arrow.Field, id *int32) (*Field, error) {
	lt, err := logicalType(af.Type)
	if err != nil {
		return nil, fmt.Errorf("%w: column %q has type %s: %v", ErrUnsupportedType, af.Name, af.Type, err)
	}
	f := &Field{ID: *id, Name: af.Name, LogicalType: lt, Type: af.Type, Nullable: af.Nullable}
	*id++
	if af.HasMetadata() {
		f.Metadata = make(map[string]string, af.Metadata.Len())
		for i, k := range af.Metadata.Keys() {
			f.Metadata[k] = af.Metadata.Values()[i]
		}
	}
	switch t := af.Type.(type) {
	case *arrow.StructType:
		for _, m := range t.Fields() {
			c, err := fieldFromArrow(m, id)
			if err != nil {
				return nil, err
			}
			f.Children = append(f.Children, c)
		}
	case *arrow.ListType:
		c, err := fieldFromArrow(t.ElemField(), id)
		if err != nil {
			return nil, err
		}
		f.Children = []*Field{c}
	case *arrow.LargeListType:
		c, err := fieldFromArrow(t.ElemField(), id)
		if err != nil {
			return nil, err
		}
		f.Children = []*Field{c}
	}
	return f, nil
}

// logicalType returns Lance's type string for the Arrow types the writer
// supports.
func logicalType(t arrow.DataType) (string, error) {
	switch t := t.(type) {
	case *arrow.BooleanType:
		return "bool", nil
	case *arrow.Int8Type:
		return "int8", nil
	case *arrow.Int16Type:
		return "int16", nil
	case *arrow.Int32Type:
		return "int32", nil
	case *arrow.Int64Type:
		return "int64", nil
	case *arrow.Uint8Type:
		return "uint8", nil
	case *arrow.Uint16Type:
		return "uint16", nil
	case *arrow.Uint32Type:
		return "uint32", nil
	case *arrow.Uint64Type:
		return "uint64", nil
	case *arrow.Float32Type:
		return "float", nil
	case *arrow.Float64Type:
		return "double", nil
	case *arrow.StringType:
		return "string", nil
	case *arrow.LargeStringType:
		return "large_string", nil
	case *arrow.BinaryType:
		return "binary", nil
	case *arrow.LargeBinaryType:
		return "large_binary", nil
	case *arrow.Date32Type:
		return "date32:day", nil
	case *arrow.TimestampType:
		tz := t.TimeZone
		if tz == "" {
			tz = "-"
		}
		return "timestamp:" + unitString(t.Unit) + ":" + tz, nil
	case *arrow.StructType:
		if t.NumFields() == 0 {
			return "", fmt.Errorf("struct without members")
		}
		return "struct", nil
	case *arrow.ListType:
		if _, ok := t.Elem().(*arrow.StructType); ok {
			return "list.struct", nil
		}
		return "list", nil
	case *arrow.LargeListType:
		if _, ok := t.Elem().(*arrow.StructType); ok {
			return "large_list.struct", nil
		}
		return "large_list", nil
	case *arrow.FixedSizeListType:
		if t.Elem().ID() == arrow.FLOAT32 {
			return "fixed_size_list:float:" + strconv.Itoa(int(t.Len())), nil
		}
	}
	return "", fmt.Errorf("not supported by the kv0 writer")
}

func unitString(u arrow.TimeUnit) string {
	switch u {
	case arrow.Second:
		return "s"
	case arrow.Millisecond:
		return "ms"
	case arrow.Microsecond:
		return "us"
	}
	return "ns"
}

// schemaProto flattens the schema into Lance's pre-order field list.
func schemaProto(s *Schema) *filepb.Schema {
	ps := &filepb.Schema{}
	var add func(f *Field, parent int32)
	add = func(f *Field, parent int32) {
		pf := &filepb.Field{
			Name:        f.Name,
			Id:          f.ID,
			ParentId:    parent,
			LogicalType: f.LogicalType,
			Nullable:    f.Nullable,
			Encoding:    fieldEncoding(f),
		}
		if len(f.Metadata) > 0 {
			pf.Metadata = make(map[string][]byte, len(f.Metadata))
			for k, v := range f.Metadata {
				pf.Metadata[k] = []byte(v)
			}
		}
		ps.Fields = append(ps.Fields, pf)
		for _, c := range f.Children {
			add(c, f.ID)
		}
	}
	for _, f := range s.Fields {
		add(f, -1)
	}
	if len(s.Metadata) > 0 {
		ps.Metadata = make(map[string][]byte, len(s.Metadata))
		keys := make([]string, 0, len(s.Metadata))
		for k := range s.Metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ps.Metadata[k] = []byte(s.Metadata[k])
		}
	}
	return ps
}

// fieldEncoding mirrors the legacy encoding hint Lance records per field.
func fieldEncoding(f *Field) filepb.Encoding {
	switch f.Type.(type) {
	case *arrow.StructType:
		return filepb.Encoding_NONE
	case *arrow.StringType, *arrow.LargeStringType, *arrow.BinaryType, *arrow.LargeBinaryType:
		return filepb.Encoding_VAR_BINARY
	}
	return filepb.Encoding_PLAIN
}
