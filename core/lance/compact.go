package lance

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
)

// CompactOptions tune Compact. The zero value uses the defaults.
type CompactOptions struct {
	// TargetRowsPerFragment is the size compaction aims for: fragments with
	// fewer rows are merged, and new fragments hold at most this many rows
	// (default 1Mi, as Lance).
	TargetRowsPerFragment int
	// KeepDeletions, when true, leaves fragments with deletions alone unless
	// they are small (Lance's materialize_deletions=false). By default a
	// fragment with deleted rows is rewritten without them.
	KeepDeletions bool
	// Commit tunes the two commits.
	Commit CommitOptions
	// Progress, when set, is called with the rows rewritten so far and the
	// total to rewrite.
	Progress func(done, total int64)
}

// CompactStats summarises a compaction.
type CompactStats struct {
	FragmentsRemoved int
	FragmentsAdded   int
	FilesRemoved     int
	FilesAdded       int
	RowsRewritten    uint64
}

// Compact merges small fragments (and fragments with deletions) into
// fragments of about TargetRowsPerFragment rows, preserving row order, and
// commits the result as Lance does: a ReserveFragments commit for the new
// fragment ids, then a Rewrite commit whose groups map each run of old
// fragments to its new fragments. Only adjacent fragments are merged, and a
// lone fragment is rewritten only to drop its deleted rows. Indices that
// cover a rewritten fragment are dropped (kv0 does not remap them). A
// concurrent delete or rewrite of the same fragments makes Compact fail with
// a retryable *ConflictError; appends never do. When nothing needs
// compacting it commits nothing and returns d.
func (d *Dataset) Compact(ctx context.Context, opts CompactOptions) (*Dataset, CompactStats, error) {
	var stats CompactStats
	fv, err := d.appendVersion("")
	if err != nil {
		return nil, stats, err
	}
	target := opts.TargetRowsPerFragment
	if target <= 0 {
		target = DefaultMaxRowsPerFile
	}
	groups := d.planCompaction(uint64(target), !opts.KeepDeletions)
	if len(groups) == 0 {
		return d, stats, nil
	}
	var total int64
	for _, g := range groups {
		for _, f := range g {
			total += int64(f.PhysicalRows - f.DeletedRows)
		}
	}
	// Write the new fragments first; their ids come from the reservation.
	var done int64
	news := make([][]*tablepb.DataFragment, len(groups))
	var files []string
	for i, g := range groups {
		ids := make([]uint64, len(g))
		for j, f := range g {
			ids[j] = f.ID
		}
		s, err := d.Scan(ctx, ScanOptions{Fragments: ids})
		if err != nil {
			return nil, stats, err
		}
		src := &progressReader{s: s, done: &done, total: total, fn: opts.Progress}
		var stored func() ([]string, error)
		news[i], stored, err = writeFragments(ctx, d.st, d.k, d.schema, fv, src, WriteOptions{MaxRowsPerFile: target})
		s.Close()
		if err != nil {
			return nil, stats, err
		}
		keys, err := stored()
		if err != nil {
			return nil, stats, err
		}
		files = append(files, keys...)
	}
	n := 0
	for _, g := range news {
		n += len(g)
	}
	res := newTransaction(d.Version())
	res.Operation = &tablepb.Transaction_ReserveFragments_{ReserveFragments: &tablepb.Transaction_ReserveFragments{NumFragments: uint32(n)}}
	rd, err := commit(ctx, commitReq{st: d.st, k: d.k, naming: d.Naming(), base: d, txn: res, opts: opts.Commit})
	if err != nil {
		return nil, stats, err
	}
	next := uint64(rd.mf.m.GetMaxFragmentId()) + 1 - uint64(n)
	rw := &tablepb.Transaction_Rewrite{}
	for i, g := range groups {
		grp := &tablepb.Transaction_Rewrite_RewriteGroup{}
		for _, f := range g {
			grp.OldFragments = append(grp.OldFragments, f.pb)
			stats.FragmentsRemoved++
			stats.FilesRemoved += len(f.Files)
			stats.RowsRewritten += f.PhysicalRows - f.DeletedRows
		}
		for _, nf := range news[i] {
			nf.Id = next
			next++
			grp.NewFragments = append(grp.NewFragments, nf)
			stats.FragmentsAdded++
			stats.FilesAdded += len(nf.GetFiles())
		}
		rw.Groups = append(rw.Groups, grp)
	}
	// The rewrite is checked against everything committed since d (the
	// reservation among them), so a concurrent delete of a rewritten
	// fragment is never lost.
	txn := newTransaction(d.Version())
	txn.Operation = &tablepb.Transaction_Rewrite_{Rewrite: rw}
	nd, err := commit(ctx, commitReq{st: d.st, k: d.k, naming: d.Naming(), base: d, txn: txn, unsynced: files, opts: opts.Commit})
	if err != nil {
		return nil, CompactStats{}, err
	}
	return nd, stats, nil
}

// planCompaction picks runs of adjacent candidate fragments (small, or with
// deletions when materialize is set) and cuts them into groups of at most
// about target live rows. A group of one fragment without deletions is
// dropped: rewriting it would change nothing.
func (d *Dataset) planCompaction(target uint64, materialize bool) [][]*Fragment {
	var groups [][]*Fragment
	var cur []*Fragment
	var rows uint64
	flush := func() {
		if len(cur) > 1 || (len(cur) == 1 && cur[0].DeletedRows > 0) {
			groups = append(groups, cur)
		}
		cur, rows = nil, 0
	}
	for i := range d.frags {
		f := &d.frags[i]
		live := f.PhysicalRows - f.DeletedRows
		if !(f.PhysicalRows < target || (materialize && f.DeletedRows > 0)) {
			flush()
			continue
		}
		if len(cur) > 0 && rows+live > target {
			flush()
		}
		cur = append(cur, f)
		rows += live
	}
	flush()
	return groups
}

// progressReader passes a scan's batches through, reporting progress.
type progressReader struct {
	s     *Scanner
	done  *int64
	total int64
	fn    func(done, total int64)
}

func (p *progressReader) Next() bool {
	if !p.s.Next() {
		return false
	}
	*p.done += p.s.Record().NumRows()
	if p.fn != nil {
		p.fn(*p.done, p.total)
	}
	return true
}

func (p *progressReader) RecordBatch() arrow.RecordBatch { return p.s.Record() }

func (p *progressReader) Err() error {
	if err := p.s.Err(); err != nil {
		return fmt.Errorf("lance: compaction read: %w", err)
	}
	return nil
}
