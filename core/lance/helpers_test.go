package lance

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	protolite "github.com/aperturerobotics/protobuf-go-lite"
	"github.com/kv0/kv0/core/internal/lancepb/wktpb"

	"github.com/kv0/kv0/core/internal/lancepb/filepb"
	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
	"github.com/kv0/kv0/core/store"
)

// encodeManifest lays out a manifest file: optional inline transaction
// section, the manifest, the footer.
func encodeManifest(t testing.TB, m *tablepb.Manifest, txn *tablepb.Transaction) []byte {
	t.Helper()
	return mustEncodeManifest(m, txn)
}

func mustEncodeManifest(m *tablepb.Manifest, txn *tablepb.Transaction) []byte {
	var out []byte
	section := func(msg protolite.Message) uint64 {
		b, err := msg.MarshalVT()
		if err != nil {
			panic(err)
		}
		pos := uint64(len(out))
		out = binary.LittleEndian.AppendUint32(out, uint32(len(b)))
		out = append(out, b...)
		return pos
	}
	m = m.CloneVT()
	if txn != nil {
		pos := section(txn)
		m.TransactionSection = &pos
	}
	pos := section(m)
	out = binary.LittleEndian.AppendUint64(out, pos)
	out = binary.LittleEndian.AppendUint16(out, 0)
	out = binary.LittleEndian.AppendUint16(out, 2)
	return append(out, "LANC"...)
}

// testManifest returns a minimal manifest of version v: one uint64 column
// "x" and one fragment per version so far, 10 rows each.
func testManifest(v uint64) *tablepb.Manifest {
	m := &tablepb.Manifest{
		Fields:        []*filepb.Field{{Name: "x", Id: 0, ParentId: -1, LogicalType: "uint64"}},
		Version:       v,
		Timestamp:     wktpb.NewTimestamp(testEpoch.Add(timeStep * time.Duration(v))),
		WriterVersion: &tablepb.Manifest_WriterVersion{Library: "kv0-test", Version: "0"},
		DataFormat:    &tablepb.Manifest_DataStorageFormat{FileFormat: "lance", Version: "2.1"},
	}
	for i := uint64(0); i < v && i < 4; i++ {
		m.Fragments = append(m.Fragments, &tablepb.DataFragment{
			Id: i, PhysicalRows: 10,
			Files: []*tablepb.DataFile{{Path: fmt.Sprintf("f%d.lance", i), Fields: []int32{0}, ColumnIndices: []int32{0}, FileMajorVersion: 2, FileMinorVersion: 1}},
		})
	}
	return m
}

// putVersions writes versions 1..n of a synthetic dataset under root, with
// the hint pointing at hint (0: no hint file).
func putVersions(t testing.TB, st store.Store, root string, n uint64, naming Naming, hint uint64) {
	t.Helper()
	if err := writeVersions(st, root, n, naming, hint); err != nil {
		t.Fatal(err)
	}
}

func writeVersions(st store.Store, root string, n uint64, naming Naming, hint uint64) error {
	ctx := context.Background()
	k := keys{root: root}
	for v := uint64(1); v <= n; v++ {
		txn := &tablepb.Transaction{ReadVersion: v - 1, Uuid: fmt.Sprint(v)}
		if v == 1 {
			txn.Operation = &tablepb.Transaction_Overwrite_{Overwrite: &tablepb.Transaction_Overwrite{}}
		} else {
			txn.Operation = &tablepb.Transaction_Append_{Append: &tablepb.Transaction_Append{}}
		}
		if err := st.Put(ctx, k.manifest(v, naming), mustEncodeManifest(testManifest(v), txn)); err != nil {
			return err
		}
	}
	if hint > 0 {
		if err := st.Put(ctx, k.hint(), fmt.Appendf(nil, `{"version":%d}`, hint)); err != nil {
			return err
		}
	}
	return nil
}

// noList hides List (like a static HTTP server).
type noList struct{ *store.Memory }

func (noList) List(context.Context, store.ListOptions) ([]store.ObjectInfo, error) {
	return nil, fmt.Errorf("list: %w", store.ErrNotSupported)
}

// plainStore hides the optional TailReader of a memory store.
type plainStore struct{ m *store.Memory }

func (p plainStore) ReadAt(ctx context.Context, key string, b []byte, off int64) error {
	return p.m.ReadAt(ctx, key, b, off)
}
func (p plainStore) Stat(ctx context.Context, key string) (store.ObjectInfo, error) {
	return p.m.Stat(ctx, key)
}
func (p plainStore) List(ctx context.Context, o store.ListOptions) ([]store.ObjectInfo, error) {
	return p.m.List(ctx, o)
}
func (p plainStore) PutIfAbsent(ctx context.Context, key string, b []byte) error {
	return p.m.PutIfAbsent(ctx, key, b)
}
func (p plainStore) Put(ctx context.Context, key string, b []byte) error { return p.m.Put(ctx, key, b) }
func (p plainStore) Delete(ctx context.Context, key string) error        { return p.m.Delete(ctx, key) }

func deleteTxn(pred string) *tablepb.Transaction {
	return &tablepb.Transaction{ReadVersion: 1, Operation: &tablepb.Transaction_Delete_{Delete: &tablepb.Transaction_Delete{Predicate: pred}}}
}
