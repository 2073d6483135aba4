package lancefile

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kv0/kv0/core/internal/lancepb/filepb"
)

// ErrUnsupportedType is returned when a column has a type kv0 cannot read or
// write. The error names the column; match it with errors.Is.
var ErrUnsupportedType = errors.New("lancefile: unsupported type")

// Schema is the schema of a Lance dataset or data file: a tree of fields with
// the stable field ids Lance assigns (pre-order, starting at 0).
type Schema struct {
	Fields   []*Field
	Metadata map[string]string
}

// Field is one node of a Schema. Leaves are primitive columns; lists have one
// child (the item) and structs one child per member. Fixed-size lists of a
// primitive type are leaves whose Type carries the item type.
type Field struct {
	ID          int32
	Name        string
	LogicalType string // Lance's type string, e.g. "timestamp:us:UTC"
	// Type is the Arrow type, nil when the type is not supported (Err says why).
	Type     arrow.DataType
	Nullable bool
	Children []*Field
	Metadata map[string]string
	// Err is non-nil when the field (or a child) has a type kv0 does not
	// support. Scanning such a field fails with Err; other fields still work.
	Err error
}

// ArrowField returns the field as an Arrow field.
func (f *Field) ArrowField() arrow.Field {
	af := arrow.Field{Name: f.Name, Type: f.Type, Nullable: f.Nullable}
	if f.Type == nil {
		af.Type = arrow.Null
	}
	if len(f.Metadata) > 0 {
		// Sorted keys: the same field gives the same bytes in an Arrow
		// IPC schema (answers with one ETag must be one sequence of bytes).
		keys := slices.Sorted(maps.Keys(f.Metadata))
		vals := make([]string, len(keys))
		for i, k := range keys {
			vals[i] = f.Metadata[k]
		}
		af.Metadata = arrow.NewMetadata(keys, vals)
	}
	return af
}

// IsLeaf reports whether the field owns a column in a 2.1 file.
func (f *Field) IsLeaf() bool { return len(f.Children) == 0 }

// Walk calls fn for f and its descendants in pre-order.
func (f *Field) Walk(fn func(*Field)) {
	fn(f)
	for _, c := range f.Children {
		c.Walk(fn)
	}
}

// Arrow returns the schema as an Arrow schema. Unsupported fields appear with
// the Null type.
func (s *Schema) Arrow() *arrow.Schema {
	fields := make([]arrow.Field, len(s.Fields))
	for i, f := range s.Fields {
		fields[i] = f.ArrowField()
	}
	var md *arrow.Metadata
	if len(s.Metadata) > 0 {
		m := arrow.MetadataFrom(s.Metadata)
		md = &m
	}
	return arrow.NewSchema(fields, md)
}

// Field returns the top-level field called name, or nil.
func (s *Schema) Field(name string) *Field {
	for _, f := range s.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// Project returns a schema holding the named top-level fields in the given
// order. An empty list selects every field.
func (s *Schema) Project(names []string) (*Schema, error) {
	if len(names) == 0 {
		return s, nil
	}
	out := &Schema{Metadata: s.Metadata}
	for _, n := range names {
		f := s.Field(n)
		if f == nil {
			return nil, fmt.Errorf("lancefile: no column %q in schema", n)
		}
		out.Fields = append(out.Fields, f)
	}
	return out, nil
}

// Walk calls fn for every field in pre-order.
func (s *Schema) Walk(fn func(*Field)) {
	for _, f := range s.Fields {
		f.Walk(fn)
	}
}

// SchemaFromProto rebuilds the field tree from Lance's flattened pre-order
// field list. Unsupported types do not fail the call: they are recorded in
// Field.Err so that the rest of the dataset stays readable.
func SchemaFromProto(pfields []*filepb.Field, metadata map[string][]byte) (*Schema, error) {
	s := &Schema{}
	if len(metadata) > 0 {
		s.Metadata = make(map[string]string, len(metadata))
		for k, v := range metadata {
			s.Metadata[k] = string(v)
		}
	}
	byID := make(map[int32]*Field, len(pfields))
	for _, pf := range pfields {
		if _, dup := byID[pf.GetId()]; dup {
			return nil, fmt.Errorf("%w: duplicate field id %d", ErrCorrupt, pf.GetId())
		}
		if pf.GetId() < 0 {
			return nil, fmt.Errorf("%w: field %q has negative id %d", ErrCorrupt, pf.GetName(), pf.GetId())
		}
		f := &Field{ID: pf.GetId(), Name: pf.GetName(), LogicalType: pf.GetLogicalType(), Nullable: pf.GetNullable()}
		if len(pf.GetMetadata()) > 0 {
			f.Metadata = make(map[string]string, len(pf.GetMetadata()))
			for k, v := range pf.GetMetadata() {
				f.Metadata[k] = string(v)
			}
		}
		byID[f.ID] = f
		if pf.GetParentId() == -1 {
			s.Fields = append(s.Fields, f)
			continue
		}
		parent := byID[pf.GetParentId()]
		if parent == nil {
			return nil, fmt.Errorf("%w: field %q (id %d) names unknown parent %d", ErrCorrupt, f.Name, f.ID, pf.GetParentId())
		}
		parent.Children = append(parent.Children, f)
	}
	if err := checkTree(s.Fields); err != nil {
		return nil, err
	}
	for _, f := range s.Fields {
		resolveType(f)
	}
	return s, nil
}

// checkTree refuses field trees no Lance writer produces, which a damaged
// schema can otherwise turn into a plausible one (a column that becomes a
// member of its neighbour vanishes from the top level): sibling fields with
// one name, and children under a type that has none. Types kv0 does not
// know are left alone (they are refused when scanned).
func checkTree(fields []*Field) error {
	names := make(map[string]int32, len(fields))
	for _, f := range fields {
		if id, dup := names[f.Name]; dup {
			return fmt.Errorf("%w: fields %d and %d are both named %q", ErrCorrupt, id, f.ID, f.Name)
		}
		names[f.Name] = f.ID
		if len(f.Children) > 0 && isPrimitiveType(f.LogicalType) {
			return fmt.Errorf("%w: field %q (id %d) of type %q has %d children", ErrCorrupt, f.Name, f.ID, f.LogicalType, len(f.Children))
		}
		if err := checkTree(f.Children); err != nil {
			return err
		}
	}
	return nil
}

// isPrimitiveType reports whether a Lance logical type is one kv0 reads
// that never has child fields.
func isPrimitiveType(lt string) bool {
	switch lt {
	case "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
		"float", "double", "string", "large_string", "binary", "large_binary", "date32:day":
		return true
	}
	return strings.HasPrefix(lt, "timestamp:") || strings.HasPrefix(lt, "decimal:") || strings.HasPrefix(lt, "fixed_size_binary:")
}

// resolveType fills Type (or Err) bottom-up.
func resolveType(f *Field) {
	for _, c := range f.Children {
		resolveType(c)
	}
	t, err := arrowType(f)
	if err != nil {
		f.Err = fmt.Errorf("%w: column %q has type %q: %v", ErrUnsupportedType, f.Name, f.LogicalType, err)
		return
	}
	for _, c := range f.Children {
		if c.Err != nil {
			f.Err = c.Err
			return
		}
	}
	f.Type = t
}

func arrowType(f *Field) (arrow.DataType, error) {
	lt := f.LogicalType
	switch lt {
	case "bool":
		return arrow.FixedWidthTypes.Boolean, nil
	case "int8":
		return arrow.PrimitiveTypes.Int8, nil
	case "int16":
		return arrow.PrimitiveTypes.Int16, nil
	case "int32":
		return arrow.PrimitiveTypes.Int32, nil
	case "int64":
		return arrow.PrimitiveTypes.Int64, nil
	case "uint8":
		return arrow.PrimitiveTypes.Uint8, nil
	case "uint16":
		return arrow.PrimitiveTypes.Uint16, nil
	case "uint32":
		return arrow.PrimitiveTypes.Uint32, nil
	case "uint64":
		return arrow.PrimitiveTypes.Uint64, nil
	case "float":
		return arrow.PrimitiveTypes.Float32, nil
	case "double":
		return arrow.PrimitiveTypes.Float64, nil
	case "string":
		return arrow.BinaryTypes.String, nil
	case "large_string":
		return arrow.BinaryTypes.LargeString, nil
	case "binary":
		return arrow.BinaryTypes.Binary, nil
	case "large_binary":
		return arrow.BinaryTypes.LargeBinary, nil
	case "date32:day":
		return arrow.FixedWidthTypes.Date32, nil
	case "struct":
		if len(f.Children) == 0 {
			return nil, errors.New("struct without members")
		}
		members := make([]arrow.Field, len(f.Children))
		for i, c := range f.Children {
			if c.Type == nil {
				return nil, errors.New("unsupported member")
			}
			members[i] = c.ArrowField()
		}
		return arrow.StructOf(members...), nil
	case "map":
		// A map is a list of entries, structs of a key and a value.
		if len(f.Children) != 1 || len(f.Children[0].Children) != 2 || f.Children[0].Type == nil {
			return nil, errors.New("map needs one entries field of a key and a value")
		}
		if _, ok := f.Children[0].Type.(*arrow.StructType); !ok {
			return nil, errors.New("map entries are not a struct")
		}
		key := f.Children[0].Children[0].ArrowField()
		key.Nullable = false
		mt := arrow.MapOfFields(key, f.Children[0].Children[1].ArrowField())
		// The entries field takes Arrow's names for the map's members.
		f.Children[0].Type = mt.Elem()
		return mt, nil
	case "list", "list.struct", "large_list", "large_list.struct":
		if len(f.Children) != 1 || f.Children[0].Type == nil {
			return nil, errors.New("list needs exactly one supported item field")
		}
		item := f.Children[0].ArrowField()
		if strings.HasPrefix(lt, "large_") {
			return arrow.LargeListOfField(item), nil
		}
		return arrow.ListOfField(item), nil
	}
	parts := strings.Split(lt, ":")
	switch parts[0] {
	case "timestamp":
		if len(parts) < 3 {
			return nil, errors.New("malformed timestamp type")
		}
		unit, err := timeUnit(parts[1])
		if err != nil {
			return nil, err
		}
		tz := strings.Join(parts[2:], ":")
		if tz == "-" {
			tz = ""
		}
		return &arrow.TimestampType{Unit: unit, TimeZone: tz}, nil
	case "decimal":
		// decimal:128:P:S or decimal:256:P:S
		if len(parts) != 4 {
			return nil, errors.New("malformed decimal type")
		}
		p, err1 := strconv.ParseInt(parts[2], 10, 32)
		sc, err2 := strconv.ParseInt(parts[3], 10, 32)
		limit := int64(0)
		switch parts[1] {
		case "128":
			limit = 38
		case "256":
			limit = 76
		}
		if err1 != nil || err2 != nil || limit == 0 || p < 1 || p > limit || sc < -limit || sc > limit {
			return nil, errors.New("malformed decimal type")
		}
		if parts[1] == "128" {
			return &arrow.Decimal128Type{Precision: int32(p), Scale: int32(sc)}, nil
		}
		return &arrow.Decimal256Type{Precision: int32(p), Scale: int32(sc)}, nil
	case "fixed_size_binary":
		if len(parts) != 2 {
			return nil, errors.New("malformed fixed_size_binary type")
		}
		n, err := strconv.ParseInt(parts[1], 10, 32)
		if err != nil || n <= 0 || n > 1<<20 {
			return nil, errors.New("malformed fixed_size_binary size")
		}
		return &arrow.FixedSizeBinaryType{ByteWidth: int(n)}, nil
	case "fixed_size_list":
		if len(parts) < 3 {
			return nil, errors.New("malformed fixed_size_list type")
		}
		n, err := strconv.ParseInt(parts[len(parts)-1], 10, 32)
		if err != nil || n <= 0 {
			return nil, errors.New("malformed fixed_size_list size")
		}
		inner := strings.Join(parts[1:len(parts)-1], ":")
		if inner != "float" {
			return nil, errors.New("only fixed_size_list<float32> is supported")
		}
		return arrow.FixedSizeListOf(int32(n), arrow.PrimitiveTypes.Float32), nil
	}
	return nil, errors.New("not supported by kv0")
}

func timeUnit(s string) (arrow.TimeUnit, error) {
	switch s {
	case "s":
		return arrow.Second, nil
	case "ms":
		return arrow.Millisecond, nil
	case "us":
		return arrow.Microsecond, nil
	case "ns":
		return arrow.Nanosecond, nil
	}
	return 0, fmt.Errorf("unknown time unit %q", s)
}
