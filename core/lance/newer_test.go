package lance

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
	"github.com/kv0/kv0/core/store"
)

// TestDataOverlaysRefused: a fragment with data overlay files (newer values
// for some cells) is refused even when the manifest does not set reader
// feature flag 64: reading its data files alone would give the old values.
func TestDataOverlaysRefused(t *testing.T) {
	ctx := t.Context()
	st := loadFixture(t, "default")
	b, err := store.ReadAll(ctx, st, fixtureManifest)
	if err != nil {
		t.Fatal(err)
	}
	mf, err := decodeManifest(fixtureManifest, int64(len(b)), b, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := mf.m.CloneVT()
	m.TransactionSection = nil
	df := m.Fragments[0].Files[0].CloneVT()
	df.Path = "overlay.lance"
	df.Fields, df.ColumnIndices = []int32{3}, []int32{0}
	m.Fragments[0].Overlays = []*tablepb.DataOverlayFile{{
		DataFile:         df,
		Coverage:         &tablepb.DataOverlayFile_SharedOffsetBitmap{SharedOffsetBitmap: []byte{1}},
		CommittedVersion: 6,
	}}
	if err := st.Put(ctx, fixtureManifest, mustEncodeManifest(m, nil)); err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, st, "kv.lance", OpenOptions{})
	if !errors.Is(err, ErrUnsupportedFeature) || !strings.Contains(err.Error(), "fragment 2 has 1 data overlay files") ||
		!strings.Contains(err.Error(), fixtureManifest) {
		t.Fatalf("got %v, want ErrUnsupportedFeature naming the overlays of fragment 2 and the manifest", err)
	}
}

// TestOperationNames: the change log names every operation kv0's
// transaction proto knows, each differently (a version of an operation it
// cannot name shows as "Unknown").
func TestOperationNames(t *testing.T) {
	seen := map[string]string{}
	opField, _ := reflect.TypeFor[tablepb.Transaction]().FieldByName("Operation")
	for _, w := range tablepb.OneofWrappers {
		wt := reflect.TypeOf(w)
		if !wt.Implements(opField.Type) {
			continue
		}
		var txn tablepb.Transaction
		reflect.ValueOf(&txn).Elem().FieldByIndex(opField.Index).Set(reflect.New(wt.Elem()))
		txn.ReadVersion = 1 // an Overwrite of read version 0 is reported as Create
		name := operationName(&txn)
		if name == "Unknown" {
			t.Errorf("%s: operationName says Unknown", wt)
		}
		if other, dup := seen[name]; dup {
			t.Errorf("%s and %s are both named %q", wt, other, name)
		}
		seen[name] = wt.String()
	}
	for _, name := range []string{"Append", "Update", "Rewrite", "UpdateMemWalState", "DataOverlay"} {
		if _, ok := seen[name]; !ok {
			t.Errorf("no operation is named %q: %v", name, seen)
		}
	}
}
