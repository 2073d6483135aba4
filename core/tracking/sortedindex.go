package tracking

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/zeebo/xxh3"

	"github.com/kv0/kv0/core/lance"
)

// The series index of a sorted data file.
//
// Optimize writes each sorted metrics data file with one more Lance global
// buffer (index 1; Lance readers ignore it) that lists where each series'
// rows are, so a reader finds a series' rows from the file's tail alone,
// which it reads anyway to open the file, instead of reading the file's
// whole series_id column. Layout, little-endian:
//
//	"kv0sidx1"                      8-byte magic and version
//	u32 count
//	count × (u64 series_id, u32 first row, u32 rows)   ascending series_id
//	u64 xxh3-64 of everything before it
//
// Series id 0 (the reserved rows: statistics deltas and WAL marks) is
// listed like any other.
const (
	sidxMagic    = "kv0sidx1"
	sidxEntry    = 16
	sidxBufferID = 1 // the global buffer index
)

// encodeSeriesIndex returns the index of rows [first, first+n) of the
// sorted series ids sids (the rows of one data file), or nil when they are
// not sorted.
func encodeSeriesIndex(sids []uint64, first, n uint64) []byte {
	part := sids[first : first+n]
	var rs []sidRange
	for i, s := range part {
		if k := len(rs); k > 0 && rs[k-1].sid == s {
			rs[k-1].hi = uint32(i + 1)
			continue
		}
		if k := len(rs); k > 0 && rs[k-1].sid > s {
			return nil // not sorted: no index, readers scan the column
		}
		rs = append(rs, sidRange{sid: s, lo: uint32(i), hi: uint32(i + 1)})
	}
	out := make([]byte, 0, len(sidxMagic)+4+sidxEntry*len(rs)+8)
	out = append(out, sidxMagic...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(rs)))
	for _, r := range rs {
		out = binary.LittleEndian.AppendUint64(out, r.sid)
		out = binary.LittleEndian.AppendUint32(out, r.lo)
		out = binary.LittleEndian.AppendUint32(out, r.hi-r.lo)
	}
	return binary.LittleEndian.AppendUint64(out, xxh3.Hash(out))
}

// decodeSeriesIndex parses a series index of a file of rows rows. ok is
// false when b is not a series index at all (another writer's buffer); an
// error means it claims to be one but is damaged or inconsistent.
func decodeSeriesIndex(b []byte, rows uint64) (rs []sidRange, ok bool, err error) {
	if len(b) < len(sidxMagic) || string(b[:len(sidxMagic)]) != sidxMagic {
		return nil, false, nil
	}
	bad := func(format string, args ...any) ([]sidRange, bool, error) {
		return nil, true, fmt.Errorf("%w: series index: "+format, append([]any{ErrCorrupt}, args...)...)
	}
	hdr := len(sidxMagic) + 4
	if len(b) < hdr+8 {
		return bad("%d bytes", len(b))
	}
	body, sum := b[:len(b)-8], binary.LittleEndian.Uint64(b[len(b)-8:])
	if xxh3.Hash(body) != sum {
		return bad("checksum mismatch")
	}
	n := binary.LittleEndian.Uint32(b[len(sidxMagic):])
	if uint64(len(body)-hdr) != uint64(n)*sidxEntry {
		return bad("%d entries in %d bytes", n, len(body)-hdr)
	}
	rs = make([]sidRange, n)
	var next uint64 // rows are covered in order, without gaps
	for i := range rs {
		e := body[hdr+i*sidxEntry:]
		sid, lo, cnt := binary.LittleEndian.Uint64(e), binary.LittleEndian.Uint32(e[8:]), binary.LittleEndian.Uint32(e[12:])
		if i > 0 && sid <= rs[i-1].sid {
			return bad("series ids out of order at entry %d", i)
		}
		if uint64(lo) != next || cnt == 0 {
			return bad("entry %d covers rows [%d, +%d) after row %d", i, lo, cnt, next)
		}
		next = uint64(lo) + uint64(cnt)
		rs[i] = sidRange{sid: sid, lo: lo, hi: lo + cnt}
	}
	if next != rows {
		return bad("entries cover %d rows of %d", next, rows)
	}
	return rs, true, nil
}

// sortedLayout returns the write options that lay out recs (rows sorted by
// series_id) for series reads: a series index in each data file, and page
// breaks around every series of at least alignRows rows, so reading such a
// series fetches and decodes its own pages and nothing else. Smaller series
// share pages (a page per series would bloat the column metadata that every
// reader fetches). Without a series_id column it returns the zero options.
func sortedLayout(recs []arrow.RecordBatch, alignRows int) lance.WriteOptions {
	var sids []uint64
	for _, rec := range recs {
		idx := rec.Schema().FieldIndices("series_id")
		if len(idx) != 1 {
			return lance.WriteOptions{}
		}
		col, ok := rec.Column(idx[0]).(*array.Uint64)
		if !ok {
			return lance.WriteOptions{}
		}
		sids = append(sids, col.Uint64Values()...)
	}
	var breaks []uint64
	for i := 0; i < len(sids); {
		j := i + 1
		for j < len(sids) && sids[j] == sids[i] {
			j++
		}
		if j-i >= alignRows {
			if n := len(breaks); n == 0 || breaks[n-1] != uint64(i) {
				breaks = append(breaks, uint64(i))
			}
			breaks = append(breaks, uint64(j))
		}
		i = j
	}
	cols, allSorted := newSortedColumns(recs), slices.IsSorted(sids)
	indexed := func(first, rows uint64) bool {
		return first+rows <= uint64(len(sids)) && rows < 1<<32
	}
	return lance.WriteOptions{
		MaxRowsPerFile: sortedMaxRows,
		PageBreaks:     breaks,
		FileBuffer: func(first, rows uint64) []byte {
			if !indexed(first, rows) {
				return nil
			}
			return encodeSeriesIndex(sids, first, rows)
		},
		// The downsampled levels (levels.go), only beside a series index:
		// their buffer numbers follow it.
		MoreFileBuffers: func(first, rows uint64) []lance.FileBuffer {
			if !indexed(first, rows) || !allSorted {
				return nil
			}
			return levelBuffers(cols, sids, first, rows)
		},
	}
}

// sortedMaxRows bounds the rows of each sorted data file (0: Lance's
// default); tests lower it to spread series over several files.
var sortedMaxRows = 0

// alignRows is the size from which a sorted series gets pages of its own.
const alignRows = 32 << 10
