package lance

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kv0/kv0/core/lancefile"
)

// DefaultBatchRows is the batch size of a scan when ScanOptions.BatchRows is
// zero and a projected column has variable width (strings, binary, lists):
// Lance's scanner uses the same default.
const DefaultBatchRows = 8192

// Scans of fixed-width columns only use larger batches by default, up to
// maxFixedBatchRows rows or fixedBatchBytes bytes of values a batch: fewer,
// larger batches cost less per row, and the memory a batch needs is known.
const (
	maxFixedBatchRows = 64 << 10
	fixedBatchBytes   = 4 << 20
)

// defaultBatchRows picks the batch size of a scan of fields.
func defaultBatchRows(fields []*lancefile.Field) int {
	rowBytes := 0
	for _, f := range fields {
		w := fixedWidth(f.Type)
		if w <= 0 {
			return DefaultBatchRows
		}
		rowBytes += w
	}
	if rowBytes == 0 {
		return DefaultBatchRows
	}
	return min(maxFixedBatchRows, max(DefaultBatchRows, fixedBatchBytes/rowBytes))
}

// fixedWidth returns the bytes a value of t takes, or 0 for variable-width
// and nested types.
func fixedWidth(t arrow.DataType) int {
	switch t := t.(type) {
	case arrow.FixedWidthDataType:
		if t.ID() == arrow.BOOL {
			return 1
		}
		return max(t.BitWidth()/8, 1)
	case *arrow.FixedSizeListType:
		return int(t.Len()) * fixedWidth(t.Elem())
	}
	return 0
}

// ScanOptions tune a scan. The zero value scans every column of every
// fragment in batches of a default size (see BatchRows).
type ScanOptions struct {
	// Columns are the top-level columns to read, in output order; empty
	// means all columns in schema order.
	Columns []string
	// BatchRows caps the rows of each record batch (before deleted rows are
	// dropped, so batches may be smaller). Memory use is proportional to it.
	// Zero picks DefaultBatchRows when a column has variable width, else
	// up to 64Ki rows (4 MiB of values) a batch.
	BatchRows int
	// Limit stops the scan after this many rows; 0 means no limit.
	Limit int64
	// Fragments restricts the scan to these fragment ids, still read in
	// manifest order. Empty means all fragments.
	Fragments []uint64
}

// Scanner streams the live rows of a dataset version as Arrow record
// batches, fragment by fragment in manifest order and in physical row order
// within a fragment. While one fragment is read, the next one's data files
// are opened in the background. A Scanner is not safe for concurrent use.
//
//	s, err := d.Scan(ctx, lance.ScanOptions{Columns: []string{"a"}})
//	if err != nil { ... }
//	defer s.Close()
//	for s.Next() {
//		rec := s.Record() // valid until the next call to Next or Close
//	}
//	if err := s.Err(); err != nil { ... }
type Scanner struct {
	ctx    context.Context
	cancel context.CancelFunc
	d      *Dataset
	fields []*lancefile.Field
	schema *arrow.Schema
	batch  int
	limit  int64

	frags   []*Fragment
	next    int // index in frags of the next fragment to open
	cur     *fragReader
	pending chan fragResult // the next fragment, being opened

	rec     arrow.RecordBatch
	emitted int64
	err     error
	done    bool
}

type fragResult struct {
	fr  *fragReader
	err error
}

// Scan starts a scan. It checks the options and the fragments' data file
// versions but does no I/O; reading starts with the first call to Next.
func (d *Dataset) Scan(ctx context.Context, opts ScanOptions) (*Scanner, error) {
	proj, err := d.schema.Project(opts.Columns)
	if err != nil {
		return nil, fmt.Errorf("lance: scan of %s: %w", d.k, err)
	}
	for _, f := range proj.Fields {
		if f.Err != nil {
			return nil, f.Err
		}
	}
	if opts.BatchRows < 0 || opts.Limit < 0 {
		return nil, fmt.Errorf("lance: scan of %s: negative batch size or limit", d.k)
	}
	frags, err := d.selectFragments(opts.Fragments)
	if err != nil {
		return nil, err
	}
	for _, f := range frags {
		if err := d.checkFiles(f); err != nil {
			return nil, err
		}
	}
	s := &Scanner{d: d, fields: proj.Fields, schema: proj.Arrow(), batch: opts.BatchRows, limit: opts.Limit, frags: frags}
	if s.batch == 0 {
		s.batch = defaultBatchRows(proj.Fields)
	}
	s.ctx, s.cancel = context.WithCancel(ctx)
	return s, nil
}

// selectFragments returns the fragments with the given ids (all when ids is
// empty), in manifest order.
func (d *Dataset) selectFragments(ids []uint64) ([]*Fragment, error) {
	var out []*Fragment
	if len(ids) == 0 {
		for i := range d.frags {
			out = append(out, &d.frags[i])
		}
		return out, nil
	}
	want := map[uint64]bool{}
	for _, id := range ids {
		if _, ok := d.byID[id]; !ok {
			return nil, fmt.Errorf("%w: fragment %d in version %d of %s", ErrNotFound, id, d.Version(), d.k)
		}
		want[id] = true
	}
	for i := range d.frags {
		if want[d.frags[i].ID] {
			out = append(out, &d.frags[i])
		}
	}
	return out, nil
}

// Schema returns the schema of the scan's records.
func (s *Scanner) Schema() *arrow.Schema { return s.schema }

// Next advances to the next record batch and reports whether there is one.
// It releases the previous batch.
func (s *Scanner) Next() bool {
	if s.rec != nil {
		s.rec.Release()
		s.rec = nil
	}
	for !s.done && s.err == nil {
		if s.limit > 0 && s.emitted >= s.limit {
			s.finish()
			break
		}
		if s.cur == nil {
			if s.next >= len(s.frags) {
				s.finish()
				break
			}
			s.cur, s.err = s.openNext()
			continue
		}
		fr := s.cur
		if fr.pos >= fr.rows {
			s.cur = nil
			continue
		}
		if k := fr.del.deletedRun(fr.pos, fr.rows); k > 0 {
			s.err = fr.skip(s.ctx, int(k))
			continue
		}
		n := uint64(s.batch)
		n = min(n, fr.rows-fr.pos)
		if s.limit > 0 {
			n = min(n, uint64(s.limit-s.emitted))
		}
		start := fr.pos
		cols, err := fr.next(s.ctx, int(n))
		if err != nil {
			s.err = err
			break
		}
		live := int(n)
		if runs := fr.del.liveRuns(start, int(n)); runs != nil {
			if len(runs) == 0 {
				releaseAll(cols)
				continue
			}
			if cols, err = keepRuns(cols, runs); err != nil {
				s.err = err
				break
			}
			live = 0
			for _, r := range runs {
				live += r[1] - r[0]
			}
		}
		s.rec = array.NewRecordBatch(s.schema, cols, int64(live))
		releaseAll(cols)
		s.emitted += int64(live)
		return true
	}
	return false
}

// openNext returns the reader of frags[next], from the background open when
// one is under way, and starts opening the fragment after it.
func (s *Scanner) openNext() (*fragReader, error) {
	var res fragResult
	if s.pending != nil {
		res = <-s.pending
		s.pending = nil
	} else {
		res.fr, res.err = s.d.openFragment(s.ctx, s.frags[s.next], s.fields)
	}
	s.next++
	if res.err == nil && s.next < len(s.frags) && (s.limit == 0 || s.emitted < s.limit) {
		ch := make(chan fragResult, 1)
		f := s.frags[s.next]
		go func() {
			fr, err := s.d.openFragment(s.ctx, f, s.fields)
			ch <- fragResult{fr, err}
		}()
		s.pending = ch
	}
	return res.fr, res.err
}

func (s *Scanner) finish() {
	s.done = true
	s.cur = nil
}

// Record returns the current batch. It is valid until the next call to Next
// or Close; call Retain to keep it longer.
func (s *Scanner) Record() arrow.RecordBatch { return s.rec }

// Err returns the error that ended the scan, if any.
func (s *Scanner) Err() error { return s.err }

// Close releases the current batch and stops background reads. It is safe
// to call more than once.
func (s *Scanner) Close() {
	if s.rec != nil {
		s.rec.Release()
		s.rec = nil
	}
	s.cancel()
	s.done = true
	s.cur = nil
}
