package lancefile

import (
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// TestArrowFieldMetadataOrder checks that a field's metadata (lance 12's
// blob and packed-struct columns carry several keys) becomes Arrow
// metadata in one order, sorted by key, however Go iterates the map: the
// HTTP API's Arrow answers must be the same bytes each time.
func TestArrowFieldMetadataOrder(t *testing.T) {
	f := &Field{Name: "payload", Type: arrow.BinaryTypes.LargeBinary, Metadata: map[string]string{
		"lance-encoding:blob-inline-size-threshold": "64", "lance-encoding:blob-dedicated-size-threshold": "4096",
		"ARROW:extension:name": "lance.blob.v2", "lance-encoding:packed": "true", "z": "last",
	}}
	want := []string{"ARROW:extension:name", "lance-encoding:blob-dedicated-size-threshold",
		"lance-encoding:blob-inline-size-threshold", "lance-encoding:packed", "z"}
	for i := 0; i < 50; i++ {
		md := f.ArrowField().Metadata
		if !slices.Equal(md.Keys(), want) {
			t.Fatalf("metadata keys %q, want %q", md.Keys(), want)
		}
		for k, key := range want {
			if md.Values()[k] != f.Metadata[key] {
				t.Fatalf("metadata %s = %q, want %q", key, md.Values()[k], f.Metadata[key])
			}
		}
	}
}
