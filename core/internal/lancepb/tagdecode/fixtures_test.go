package tagdecode

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/kv0/kv0/core/internal/lancepb/enc20pb"
	"github.com/kv0/kv0/core/internal/lancepb/enc21pb"
	"github.com/kv0/kv0/core/internal/lancepb/file2pb"
	"github.com/kv0/kv0/core/internal/lancepb/filepb"
	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
	"github.com/kv0/kv0/core/internal/lancepb/wktpb"
)

// fixtureDirs hold Lance datasets and files: those lance wrote (tests/testdata/lance-samples,
// the ones core/lance's TestFixtureWireRoundTrip reads) and the repository's own.
var fixtureDirs = []string{
	"../../../../tests/testdata",
	"../../../lance/testdata",
	"../../../lancefile/testdata",
}

// sample is one protobuf message found in the fixtures.
type sample struct {
	what string       // file and place, for messages
	typ  reflect.Type // the message's struct type
	b    []byte
}

var (
	samplesOnce sync.Once
	samplesList []sample
	samplesErr  error
)

// fixtureSamples returns every protobuf message of the fixtures: each
// manifest with its index and transaction sections, each transaction file
// and, in each Lance 2.x file, the column metadata, the file descriptor and
// the encodings inside the column metadata (google.protobuf.Any messages
// and what they hold). It walks the files the way TestFixtureWireRoundTrip
// does, and further down.
func fixtureSamples(tb testing.TB) []sample {
	tb.Helper()
	samplesOnce.Do(func() { samplesList, samplesErr = walkFixtures() })
	if samplesErr != nil {
		tb.Fatal(samplesErr)
	}
	if len(samplesList) == 0 {
		tb.Skip("no fixtures available")
	}
	return samplesList
}

func walkFixtures() ([]sample, error) {
	var out []sample
	add := func(what string, m any, b []byte) {
		out = append(out, sample{what, reflect.TypeOf(m).Elem(), b})
	}
	for _, dir := range fixtureDirs {
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "fuzz" {
					return filepath.SkipDir // fuzz corpora, not Lance files
				}
				return nil
			}
			rel := p
			switch {
			case strings.HasSuffix(p, ".manifest"):
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				// Footer: the u64 position of the manifest's length-prefixed
				// protobuf, a u16 major and minor version, "LANC".
				if len(b) < 20 || string(b[len(b)-4:]) != "LANC" {
					return fmt.Errorf("%s: not a manifest", rel)
				}
				pos := binary.LittleEndian.Uint64(b[len(b)-16:])
				mb, err := lengthPrefixed(rel, b, pos)
				if err != nil {
					return err
				}
				add(rel, new(tablepb.Manifest), mb)
				var m tablepb.Manifest
				if err := m.UnmarshalVT(mb); err != nil {
					return fmt.Errorf("%s: %v", rel, err)
				}
				if m.IndexSection != nil {
					sb, err := lengthPrefixed(rel, b, m.GetIndexSection())
					if err != nil {
						return err
					}
					add(rel+" index section", new(tablepb.IndexSection), sb)
				}
				if m.TransactionSection != nil {
					sb, err := lengthPrefixed(rel, b, m.GetTransactionSection())
					if err != nil {
						return err
					}
					add(rel+" transaction section", new(tablepb.Transaction), sb)
				}
			case strings.HasSuffix(p, ".txn"):
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				add(rel, new(tablepb.Transaction), b)
			case strings.HasSuffix(p, ".lance"):
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				return lanceFileSamples(rel, b, add)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// lanceFileSamples adds the messages of the Lance file b.
func lanceFileSamples(rel string, b []byte, add func(string, any, []byte)) error {
	// Footer: column_meta_start, cmo_table, gbo_table (u64 each),
	// num_global, num_columns (u32), major, minor (u16), "LANC".
	if len(b) < 40 || string(b[len(b)-4:]) != "LANC" {
		return fmt.Errorf("%s: not a Lance file", rel)
	}
	foot := b[len(b)-40:]
	// Lance 2.0 files say 2.0 or 0.3; older ones (0.1, 0.2) carry other
	// messages.
	major, minor := binary.LittleEndian.Uint16(foot[32:]), binary.LittleEndian.Uint16(foot[34:])
	if major < 2 && !(major == 0 && minor == 3) {
		return nil
	}
	cmo, gbo := binary.LittleEndian.Uint64(foot[8:]), binary.LittleEndian.Uint64(foot[16:])
	nGlobal, nCols := binary.LittleEndian.Uint32(foot[24:]), binary.LittleEndian.Uint32(foot[28:])
	region := func(table uint64, i uint64) ([]byte, error) {
		if table > uint64(len(b)) || 16*(i+1) > uint64(len(b))-table {
			return nil, fmt.Errorf("%s: offset table entry %d outside the file", rel, i)
		}
		e := b[table+16*i:]
		off, n := binary.LittleEndian.Uint64(e), binary.LittleEndian.Uint64(e[8:])
		if off > uint64(len(b)) || n > uint64(len(b))-off {
			return nil, fmt.Errorf("%s: region [%d, +%d) outside the file", rel, off, n)
		}
		return b[off : off+n], nil
	}
	for i := range uint64(nCols) {
		cb, err := region(cmo, i)
		if err != nil {
			return err
		}
		what := fmt.Sprintf("%s column %d", rel, i)
		add(what+" metadata", new(file2pb.ColumnMetadata), cb)
		var cm file2pb.ColumnMetadata
		if err := cm.UnmarshalVT(cb); err != nil {
			return fmt.Errorf("%s: %v", what, err)
		}
		if enc := cm.GetEncoding().GetDirect().GetEncoding(); enc != nil {
			if err := anySamples(what+" encoding", enc, add); err != nil {
				return err
			}
		}
		for j, p := range cm.GetPages() {
			if enc := p.GetEncoding().GetDirect().GetEncoding(); enc != nil {
				if err := anySamples(fmt.Sprintf("%s page %d encoding", what, j), enc, add); err != nil {
					return err
				}
			}
		}
	}
	if nGlobal > 0 {
		gb, err := region(gbo, 0)
		if err != nil {
			return err
		}
		add(rel+" file descriptor", new(filepb.FileDescriptor), gb)
	}
	return nil
}

// anyTypes are the messages Lance files wrap in a google.protobuf.Any, by
// type URL.
var anyTypes = map[string]func() any{
	"/lance.encodings.ArrayEncoding":  func() any { return new(enc20pb.ArrayEncoding) },
	"/lance.encodings.ColumnEncoding": func() any { return new(enc20pb.ColumnEncoding) },
	"/lance.encodings21.PageLayout":   func() any { return new(enc21pb.PageLayout) },
}

// anySamples adds the Any message b and the message it holds.
func anySamples(what string, b []byte, add func(string, any, []byte)) error {
	add(what, new(wktpb.Any), b)
	var a wktpb.Any
	if err := a.UnmarshalVT(b); err != nil {
		return fmt.Errorf("%s: %v", what, err)
	}
	if n := anyTypes[a.GetTypeUrl()]; n != nil {
		add(what+" "+a.GetTypeUrl(), n(), a.GetValue())
	}
	return nil
}

func lengthPrefixed(what string, b []byte, pos uint64) ([]byte, error) {
	if pos > uint64(len(b)) || uint64(len(b))-pos < 4 {
		return nil, fmt.Errorf("%s: section at %d outside %d bytes", what, pos, len(b))
	}
	n := uint64(binary.LittleEndian.Uint32(b[pos:]))
	if n > uint64(len(b))-pos-4 {
		return nil, fmt.Errorf("%s: section [%d, +%d) outside %d bytes", what, pos, n, len(b))
	}
	return b[pos+4 : pos+4+n], nil
}

// TestFixtures decodes every message of the fixtures with both decoders
// and checks that they give the same message.
func TestFixtures(t *testing.T) {
	counts := map[string]int{}
	for _, s := range fixtureSamples(t) {
		if !mustAgree(t, s.what, s.typ, s.b) {
			t.Fatalf("%s: neither decoder accepts it", s.what)
		}
		counts[s.typ.String()]++
	}
	// The fixtures have no index section (no dataset with an index).
	for _, want := range []string{"tablepb.Manifest", "tablepb.Transaction",
		"file2pb.ColumnMetadata", "filepb.FileDescriptor", "wktpb.Any",
		"enc20pb.ArrayEncoding", "enc20pb.ColumnEncoding", "enc21pb.PageLayout"} {
		if counts[want] == 0 {
			t.Errorf("no %s in the fixtures", want)
		}
	}
	t.Logf("decoded %v", counts)
}
