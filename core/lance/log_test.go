package lance

import (
	"context"
	"errors"
	"testing"

	protolite "github.com/aperturerobotics/protobuf-go-lite"

	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
	"github.com/kv0/kv0/core/store"
)

// Versions removed by cleanup are skipped; the first remaining one is
// marked Baseline. An Overwrite replaces every fragment, even when ids
// repeat; a transaction only in _transactions/ is found there.
func TestLogCleanupAndOverwrite(t *testing.T) {
	ctx := t.Context()
	mem := store.NewMemory()
	putVersions(t, mem, "t.lance", 5, NamingV2, 5)
	k := keys{root: "t.lance"}
	for _, v := range []uint64{1, 2} {
		mem.Delete(ctx, k.manifest(v, NamingV2))
	}
	// Version 6: an Overwrite with one fragment, id 0 again, 7 rows; its
	// transaction in a .txn file only.
	m := testManifest(6)
	m.Fragments = m.Fragments[:1]
	m.Fragments[0].PhysicalRows = 7
	m.TransactionFile = "5-abc.txn"
	mem.Put(ctx, k.manifest(6, NamingV2), encodeManifest(t, m, nil))
	txn := &tablepb.Transaction{ReadVersion: 5, Operation: &tablepb.Transaction_Overwrite_{Overwrite: &tablepb.Transaction_Overwrite{}}}
	mem.Put(ctx, k.txn("5-abc.txn"), mustMarshal(t, txn))

	log, err := Log(ctx, mem, "t.lance")
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 4 {
		t.Fatalf("%d versions", len(log))
	}
	v3, v4, v6 := log[0], log[1], log[3]
	if v3.Version != 3 || !v3.Baseline || v3.RowsAdded != 30 || v3.FragmentsAdded != 3 {
		t.Errorf("v3: %+v", v3)
	}
	if v4.Baseline || v4.RowsAdded != 10 || v4.FragmentsAdded != 1 || v4.Operation != "Append" {
		t.Errorf("v4: %+v", v4)
	}
	if v6.Operation != "Overwrite" || v6.RowsAdded != 7 || v6.RowsRemoved != 40 || v6.FragmentsAdded != 1 ||
		v6.FragmentsRemoved != 4 || v6.TotalRows != 7 || v6.ReadVersion != 5 {
		t.Errorf("v6: %+v", v6)
	}
	// Corrupt transaction: an error naming the file.
	mem.Put(ctx, k.txn("5-abc.txn"), []byte{0xff, 0xff})
	if _, err := Log(ctx, mem, "t.lance"); err == nil {
		t.Error("corrupt .txn accepted")
	}
	// Missing transaction: reported as Unknown.
	mem.Delete(ctx, k.txn("5-abc.txn"))
	log, err = Log(ctx, mem, "t.lance")
	if err != nil || log[3].Operation != "Unknown" {
		t.Fatalf("%+v %v", log, err)
	}
}

// A scan closed early, or whose context is canceled, stops cleanly.
func TestScanCloseEarly(t *testing.T) {
	st := loadFixture(t, "default")
	d, err := Open(t.Context(), st, "kv.lance", OpenOptions{Version: 4})
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.Scan(t.Context(), ScanOptions{BatchRows: 5})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Next() {
		t.Fatal(s.Err())
	}
	s.Close()
	s.Close()
	if s.Next() {
		t.Fatal("Next after Close")
	}
	ctx, cancel := context.WithCancel(t.Context())
	s, err = d.Scan(ctx, ScanOptions{BatchRows: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cancel()
	for s.Next() {
	}
	if !errors.Is(s.Err(), context.Canceled) {
		t.Fatalf("got %v", s.Err())
	}
}

func mustMarshal(t *testing.T, m protolite.Message) []byte {
	b, err := m.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
