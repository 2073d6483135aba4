// Package lance reads Lance datasets (tables) through a store.Store: the
// versions and their manifests, tags, the change log, and the rows, as Arrow
// record batches, with deleted rows removed. It is pure Go and does no I/O
// of its own, so it runs in WebAssembly too.
//
// A dataset is a folder of objects (see naming.go for the layout). Each
// committed version has a manifest listing the schema and the fragments;
// a fragment is a set of rows stored in one or more data files (read with
// package lancefile) plus an optional deletion file of deleted offsets.
//
//	d, err := lance.Open(ctx, st, "t.lance", lance.OpenOptions{})   // latest
//	d, err := lance.Open(ctx, st, "t.lance", lance.OpenOptions{Version: 3})
//	d, err := lance.Open(ctx, st, "t.lance", lance.OpenOptions{Tag: "prod"})
//	s, err := d.Scan(ctx, lance.ScanOptions{Columns: []string{"a", "b"}})
//	rec, err := d.Take(ctx, []uint64{2<<32 | 17}, nil) // fragment 2, row 17
//	log, err := lance.Log(ctx, st, "t.lance")           // what each version did
//
// I/O cost is part of the contract and pinned by tests on the counting
// memory store: see Open, Log and Dataset.Scan. Every read is a ranged read;
// independent reads are issued concurrently.
//
// Errors match ErrNotFound, ErrCorrupt, ErrUnsupportedFeature or
// ErrInvalidRowAddress with errors.Is; errors from data files are
// *lancefile.FormatError values passed through unchanged (for instance a
// legacy or 2.3 data file matches lancefile.ErrUnsupportedVersion and names
// the file and its version). Writes that would mix data file formats fail
// with ErrDataFormat.
//
// Not supported: external base paths (shallow clones), branches, stable row
// id sequences (row ids are not exposed; row addresses are), indexes (they
// are ignored: scans read data files), reading data file formats other than
// 2.0, 2.1 and 2.2, writing others than 2.1 and 2.2.
package lance
