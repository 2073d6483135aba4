package lance

import (
	"bytes"
	"encoding/binary"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kv0/kv0/core/internal/lancepb/file2pb"
	"github.com/kv0/kv0/core/internal/lancepb/filepb"
	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
)

// wireMessage is what the generated code gives every message.
type wireMessage[T any] interface {
	*T
	UnmarshalVT([]byte) error
	MarshalVT() ([]byte, error)
	EqualVT(*T) bool
	SizeVT() int
}

// checkRoundTrip decodes b (bytes lance 8 wrote) as a T, encodes the result
// and checks the encoding holds the same message: the same bytes, or, when
// the message holds maps (whose entries lance and kv0 write in no set
// order), the same length and a message equal to the first when decoded.
// It returns the decoded message.
func checkRoundTrip[T any, P wireMessage[T]](t *testing.T, what string, b []byte) P {
	t.Helper()
	m := P(new(T))
	if err := m.UnmarshalVT(b); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	out, err := m.MarshalVT()
	if err != nil {
		t.Fatalf("%s: encode: %v", what, err)
	}
	if m.SizeVT() != len(b) || len(out) != len(b) {
		t.Fatalf("%s: %d bytes re-encode to %d (SizeVT %d)", what, len(b), len(out), m.SizeVT())
	}
	if !bytes.Equal(out, b) {
		again := P(new(T))
		if err := again.UnmarshalVT(out); err != nil || !again.EqualVT(m) {
			t.Fatalf("%s: re-encoding changed the message (%v)", what, err)
		}
	}
	return m
}

// lengthPrefixed returns the u32-length-prefixed section at pos of file b.
func lengthPrefixed(t *testing.T, what string, b []byte, pos uint64) []byte {
	t.Helper()
	if pos+4 > uint64(len(b)) {
		t.Fatalf("%s: section at %d outside %d bytes", what, pos, len(b))
	}
	n := uint64(binary.LittleEndian.Uint32(b[pos:]))
	if pos+4+n > uint64(len(b)) {
		t.Fatalf("%s: section [%d, +%d) outside %d bytes", what, pos, n, len(b))
	}
	return b[pos+4 : pos+4+n]
}

// TestFixtureWireRoundTrip decodes every manifest (and its index and
// transaction sections), transaction file and Lance 2.x data file's column
// metadata and file descriptor of the lance 8 fixtures with the generated
// code and checks that encoding them again gives what lance wrote: nothing
// is lost, unknown fields included, and kv0 writes fields as lance does.
func TestFixtureWireRoundTrip(t *testing.T) {
	if _, err := os.Stat(fixtureDir); err != nil {
		t.Fatalf("fixtures missing: %v", err)
	}
	counts := map[string]int{}
	err := filepath.WalkDir(fixtureDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(fixtureDir, p)
		switch {
		case strings.HasSuffix(p, ".manifest"):
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if len(b) < manifestFooter+4 || string(b[len(b)-4:]) != manifestMagic {
				t.Fatalf("%s: not a manifest", rel)
			}
			pos := binary.LittleEndian.Uint64(b[len(b)-manifestFooter:])
			m := checkRoundTrip[tablepb.Manifest](t, rel, lengthPrefixed(t, rel, b, pos))
			counts["manifest"]++
			if m.IndexSection != nil {
				checkRoundTrip[tablepb.IndexSection](t, rel+" index section", lengthPrefixed(t, rel, b, m.GetIndexSection()))
				counts["index section"]++
			}
			if m.TransactionSection != nil {
				checkRoundTrip[tablepb.Transaction](t, rel+" transaction section", lengthPrefixed(t, rel, b, m.GetTransactionSection()))
				counts["transaction section"]++
			}
		case strings.HasSuffix(p, ".txn"):
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			checkRoundTrip[tablepb.Transaction](t, rel, b)
			counts["transaction file"]++
		case strings.HasSuffix(p, ".lance"):
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			// Footer: column_meta_start, cmo_table, gbo_table (u64 each),
			// num_global, num_columns (u32), major, minor (u16), "LANC".
			if len(b) < 40 || string(b[len(b)-4:]) != "LANC" {
				t.Fatalf("%s: not a Lance file", rel)
			}
			foot := b[len(b)-40:]
			// Lance 2.0 files say 0.3 in their footer, 2.1 files 2.1;
			// Lance 1 files (0.1, 0.2) carry other messages.
			if major, minor := binary.LittleEndian.Uint16(foot[32:]), binary.LittleEndian.Uint16(foot[34:]); major == 0 && minor < 3 {
				return nil
			}
			cmo, gbo := binary.LittleEndian.Uint64(foot[8:]), binary.LittleEndian.Uint64(foot[16:])
			nGlobal, nCols := binary.LittleEndian.Uint32(foot[24:]), binary.LittleEndian.Uint32(foot[28:])
			for i := range uint64(nCols) {
				e := b[cmo+16*i:]
				off, n := binary.LittleEndian.Uint64(e), binary.LittleEndian.Uint64(e[8:])
				checkRoundTrip[file2pb.ColumnMetadata](t, rel+" column metadata", b[off:off+n])
				counts["column metadata"]++
			}
			if nGlobal > 0 {
				off, n := binary.LittleEndian.Uint64(b[gbo:]), binary.LittleEndian.Uint64(b[gbo+8:])
				checkRoundTrip[filepb.FileDescriptor](t, rel+" file descriptor", b[off:off+n])
				counts["file descriptor"]++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"manifest", "transaction section", "transaction file", "column metadata", "file descriptor"} {
		if counts[k] == 0 {
			t.Errorf("no %s in the fixtures", k)
		}
	}
	t.Logf("round-tripped %v", counts)
}
