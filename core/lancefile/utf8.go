package lancefile

import (
	"fmt"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// isUTF8Type reports whether values of dt must be valid UTF-8.
func isUTF8Type(dt arrow.DataType) bool {
	id := dt.ID()
	return id == arrow.STRING || id == arrow.LARGE_STRING
}

// checkUTF8 returns a corruption error naming the first value, among the
// n = len(offs)-1 values whose bytes are data[offs[i]-base : offs[i+1]-base],
// that is not valid UTF-8. Offsets must already be known to lie in data.
// The common case costs one pass over data: when all of it is valid, only
// the value boundaries need to fall on rune starts.
func checkUTF8[O int32 | int64 | uint64](offs []O, base O, data []byte) error {
	if utf8.Valid(data) {
		for i := 1; i+1 < len(offs); i++ {
			if k := offs[i] - base; uint64(k) < uint64(len(data)) && !utf8.RuneStart(data[k]) {
				return corruptf("string value %d is not valid UTF-8", i)
			}
		}
		return nil
	}
	for i := 0; i+1 < len(offs); i++ {
		if offs[i+1] < offs[i] || uint64(offs[i+1]-base) > uint64(len(data)) {
			return corruptf("string value %d has offsets [%d, %d) outside its %d bytes", i, offs[i]-base, offs[i+1]-base, len(data))
		}
		if !utf8.Valid(data[offs[i]-base : offs[i+1]-base]) {
			return corruptf("string value %d is not valid UTF-8", i)
		}
	}
	return nil
}

// validateUTF8 checks every string value in a (and in its children) before
// it is written: a file must not hold string values that readers, this one
// included, refuse as corrupt. name is the column, for the error.
func validateUTF8(name string, a arrow.Array) error {
	var err error
	switch a := a.(type) {
	case *array.String:
		offs := a.ValueOffsets()
		err = checkUTF8(offs, offs[0], a.ValueBytes())
	case *array.LargeString:
		offs := a.ValueOffsets()
		err = checkUTF8(offs, offs[0], a.ValueBytes())
	case *array.List:
		return validateUTF8(name, a.ListValues())
	case *array.LargeList:
		return validateUTF8(name, a.ListValues())
	case *array.FixedSizeList:
		return validateUTF8(name, a.ListValues())
	case *array.Struct:
		for i := 0; i < a.NumField(); i++ {
			if err := validateUTF8(name, a.Field(i)); err != nil {
				return err
			}
		}
	}
	if err != nil {
		return fmt.Errorf("%w: column %q: %v", ErrInvalidUTF8, name, err)
	}
	return nil
}
