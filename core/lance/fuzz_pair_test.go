package lance

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/store"
)

// pairSeed is one corpus entry of FuzzManifestDataPair: a manifest's
// protobuf (without the file's length prefix and footer, which the fuzz
// function adds, so that inserted and removed bytes still make a
// well-formed file), the first data file of its first fragment and that
// fragment's deletion file (nil when none).
type pairSeed struct{ manifest, data, deletion []byte }

// datasetSeed reads the seed of the latest version of the dataset at root
// of st.
func datasetSeed(ctx context.Context, st store.Store, root string) (pairSeed, error) {
	d, err := Open(ctx, st, root, OpenOptions{})
	if err != nil {
		return pairSeed{}, err
	}
	var s pairSeed
	b, err := store.ReadAll(ctx, st, d.ManifestKey())
	if err != nil {
		return pairSeed{}, err
	}
	pos := binary.LittleEndian.Uint64(b[len(b)-manifestFooter:])
	s.manifest = b[pos+4 : len(b)-manifestFooter]
	frags := d.Fragments()
	if len(frags) == 0 || len(frags[0].Files) == 0 {
		return s, nil
	}
	if s.data, err = store.ReadAll(ctx, st, store.Join(root, frags[0].Files[0].Path)); err != nil {
		return pairSeed{}, err
	}
	if f := frags[0].DeletionFile; f != "" {
		if s.deletion, err = store.ReadAll(ctx, st, store.Join(root, f)); err != nil {
			return pairSeed{}, err
		}
	}
	return s, nil
}

// dirSeeds returns the seeds of the Lance datasets (folders named *.lance)
// under dir, one per dataset, skipping what cannot be opened.
func dirSeeds(ctx context.Context, dir string) []pairSeed {
	var out []pairSeed
	filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || !e.IsDir() || !strings.HasSuffix(p, ".lance") {
			return nil
		}
		st := store.NewMemory()
		filepath.WalkDir(p, func(q string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				if b, err := os.ReadFile(q); err == nil {
					rel, _ := filepath.Rel(p, q)
					st.Put(ctx, filepath.ToSlash(rel), b)
				}
			}
			return nil
		})
		if s, err := datasetSeed(ctx, st, ""); err == nil {
			out = append(out, s)
		}
		return filepath.SkipDir
	})
	return out
}

// nestedSeed writes a dataset with nested columns (a struct with a NOT NULL
// member, a list of NOT NULL items, nullable parents with nulls).
func nestedSeed(tb testing.TB, st store.Store) {
	tb.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.StructOf(
			arrow.Field{Name: "a", Type: arrow.BinaryTypes.String},
			arrow.Field{Name: "b", Type: arrow.PrimitiveTypes.Float64, Nullable: true}), Nullable: true},
		{Name: "l", Type: arrow.ListOfField(arrow.Field{Name: "item", Type: arrow.PrimitiveTypes.Int32}), Nullable: true},
	}, nil)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(`[
		{"id": 1, "s": {"a": "x", "b": 1.5}, "l": [1, 2]},
		{"id": 2, "s": null, "l": null},
		{"id": 3, "s": {"a": "", "b": null}, "l": []},
		{"id": 4, "s": {"a": "zz", "b": 2}, "l": [7]}]`))
	if err != nil {
		tb.Fatal(err)
	}
	defer rec.Release()
	if _, err := Create(context.Background(), st, "", schema, Batches(rec), WriteOptions{}); err != nil {
		tb.Fatal(err)
	}
}

// FuzzManifestDataPair damages a manifest and a data file together (and
// the deletion file), seeded from real datasets: the lance 8 fixtures, the
// datasets the interop tests had lancedb write (when they are on disk), and
// datasets kv0 writes (an oplog like the key-value layer's, nested
// columns). Whatever it gets, opening and scanning never panic or hang,
// and either fail with a typed error or give rows that keep the
// invariants: no null in a non-nullable column, and as many rows as the
// manifest counts.
func FuzzManifestDataPair(f *testing.F) {
	ctx := context.Background()
	var seeds []pairSeed
	seeds = append(seeds, dirSeeds(ctx, fixtureDir)...)
	seeds = append(seeds, dirSeeds(ctx, filepath.Join("..", "..", "tests", "interop", ".data"))...)
	for _, write := range []func(store.Store){
		func(st store.Store) { writeOplog(f, st, "") },
		func(st store.Store) { nestedSeed(f, st) },
		func(st store.Store) {
			d, err := Create(ctx, st, "", wSchema, Batches(idBatch(0, 50)), WriteOptions{MaxRowsPerFile: 20, DataFormat: DataFormat21})
			if err == nil {
				_, _, err = d.Delete(ctx, "id < 5")
			}
			if err != nil {
				f.Fatal(err)
			}
		},
		func(st store.Store) {
			d, err := Create(ctx, st, "", wSchema, Batches(idBatch(0, 50)), WriteOptions{MaxRowsPerFile: 20})
			if err == nil {
				_, _, err = d.Delete(ctx, "id < 5")
			}
			if err != nil {
				f.Fatal(err)
			}
		},
	} {
		st := store.NewMemory()
		write(st)
		s, err := datasetSeed(ctx, st, "")
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, s)
	}
	for _, s := range seeds {
		f.Add(s.manifest, s.data, s.deletion)
	}
	f.Fuzz(func(t *testing.T, manifest, data, deletion []byte) {
		const limit = 1 << 16 // rows read at most: a damaged row count must not make a scan endless
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		mem := store.NewMemory()
		file := binary.LittleEndian.AppendUint32(nil, uint32(len(manifest)))
		file = append(file, manifest...)
		file = binary.LittleEndian.AppendUint64(file, 0)
		file = append(file, 0, 0, 2, 0, 'L', 'A', 'N', 'C')
		mf, err := decodeManifest("m", int64(len(file)), file, nil)
		if err != nil {
			return
		}
		// The first fragment is read: its files hold the fuzzed bytes.
		frags := mf.m.GetFragments()
		if len(frags) == 0 {
			return
		}
		pf := frags[0]
		for _, df := range pf.GetFiles() {
			mem.Put(ctx, path.Join(dataDir, df.GetPath()), data)
		}
		if del := pf.GetDeletionFile(); del != nil && deletion != nil {
			mem.Put(ctx, path.Join(deletionsDir, deletionFileName(pf.GetId(), del)), deletion)
		}
		d, err := newDataset(mem, newKeys("", nil), mf)
		if err != nil {
			checkTyped(t, "open", err)
			return
		}
		s, err := d.Scan(ctx, ScanOptions{BatchRows: 1000, Limit: limit, Fragments: []uint64{pf.GetId()}})
		if err != nil {
			checkTyped(t, "scan", err)
			return
		}
		defer s.Close()
		var rows int64
		for s.Next() {
			rec := s.Record()
			rows += rec.NumRows()
			for c, fld := range d.Schema().Fields {
				if col := rec.Column(c); !fld.Nullable && col.NullN() > 0 {
					t.Fatalf("column %q is not nullable but holds %d nulls", fld.Name, col.NullN())
				}
			}
		}
		if err := s.Err(); err != nil {
			if !errors.Is(err, context.DeadlineExceeded) {
				checkTyped(t, "scan", err)
			}
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("scan took longer than %v", 10*time.Second)
		}
		fr := d.Fragments()[0]
		if want := fr.PhysicalRows - fr.DeletedRows; rows < limit && fr.PhysicalRows > 0 &&
			(fr.DeletionFile == "" || fr.DeletedRows > 0) && uint64(rows) != want {
			t.Fatalf("fragment %d: scan gave %d rows, the manifest counts %d (physical %d, deleted %d, deletion file %q)", fr.ID, rows, want, fr.PhysicalRows, fr.DeletedRows, fr.DeletionFile)
		}
		if testing.Verbose() && len(manifest) > 0 && rows > 0 {
			t.Logf("read %d rows", rows)
		}
	})
}

// checkTyped fails t unless err is one of the typed errors of a damaged
// dataset.
func checkTyped(t *testing.T, what string, err error) {
	t.Helper()
	if !isTyped(err) {
		t.Fatalf("%s: untyped error %v", what, err)
	}
}
