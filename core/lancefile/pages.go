package lancefile

import (
	"context"
	"math/bits"
	"sort"
	"sync"
)

// page is one page of one column, with its buffers read.
type page struct {
	col, index int
	info       *pageInfo
	bufs       [][]byte
	spans      [][]byte // the buffers bufs point into
}

// readPage fetches every buffer of one page. Buffers of a page are usually
// adjacent, so they are read with a single ranged request covering them all
// (gaps of up to coalesceGap bytes are read and thrown away).
func (f *File) readPage(ctx context.Context, col, index int) (*page, error) {
	info := &f.columns[col].pages[index]
	p := &page{col: col, index: index, info: info, bufs: make([][]byte, len(info.bufs))}
	spans, err := f.readSpans(ctx, info.bufs, p.bufs, true)
	if err != nil {
		return nil, f.pageErr(col, index, err)
	}
	p.spans = spans
	return p, nil
}

// recycle hands the page's buffers back for later page reads. Only a
// decoder that copied everything it needs out of them may call it (the
// 2.1 mini-block decoder does); the page must not be used afterwards.
func (p *page) recycle() {
	for _, b := range p.spans {
		putSpan(b)
	}
	p.spans, p.bufs = nil, nil
}

// Page reads land in buffers recycled across pages and reads (a sync.Pool
// per size class), so a steady read neither allocates nor zeroes memory
// for the bytes it fetches. Classes are a quarter of a power of two apart,
// so a buffer wastes less than a quarter of itself; spans below
// minPooledSpan are plain allocations.
const (
	minPooledSpan = 32 << 10
	maxSpanExp    = 31
)

var spanPools [4 * (maxSpanExp + 1)]sync.Pool

// spanClass returns the pool index and the capacity of the buffers that
// hold n bytes, or -1 for sizes not pooled.
func spanClass(n int) (int, int) {
	if n < minPooledSpan || n > 1<<maxSpanExp {
		return -1, n
	}
	e := bits.Len(uint(n - 1)) // 2^(e-1) < n <= 2^e
	step := 1 << (e - 3)
	k := (n + step - 1) / step // 5..8 eighths of 2^e
	return 4*e + k - 5, k * step
}

// getSpan returns a buffer of length n whose contents are undefined.
func getSpan(n int) []byte {
	c, size := spanClass(n)
	if c < 0 {
		return make([]byte, n)
	}
	if b, ok := spanPools[c].Get().(*[]byte); ok {
		return (*b)[:n]
	}
	return make([]byte, n, size)
}

// putSpan recycles a buffer from getSpan.
func putSpan(b []byte) {
	if c, size := spanClass(cap(b)); c >= 0 && size == cap(b) {
		b = b[:0]
		spanPools[c].Put(&b)
	}
}

// coalesceGap is the largest hole between two buffers that readRanges reads
// through rather than issuing a second request.
const coalesceGap = 64 << 10

// readRanges reads each range into out[i]. Nearby ranges share a request;
// separate requests run concurrently.
func (f *File) readRanges(ctx context.Context, ranges []bufRange, out [][]byte) error {
	_, err := f.readSpans(ctx, ranges, out, false)
	return err
}

// readSpans is readRanges, also returning the buffers that out's slices
// point into; with pooled set they come from getSpan (see page.recycle).
func (f *File) readSpans(ctx context.Context, ranges []bufRange, out [][]byte, pooled bool) ([][]byte, error) {
	type span struct {
		off, end uint64
		members  []int
	}
	var spans []span
	for i, r := range ranges {
		if r.size == 0 {
			out[i] = []byte{}
			continue
		}
		if n := len(spans); n > 0 && r.off >= spans[n-1].off && r.off <= spans[n-1].end+coalesceGap {
			s := &spans[n-1]
			s.end = max(s.end, r.off+r.size)
			s.members = append(s.members, i)
			continue
		}
		spans = append(spans, span{off: r.off, end: r.off + r.size, members: []int{i}})
	}
	bufs := make([][]byte, len(spans))
	read := func(k int) error {
		s := spans[k]
		var buf []byte
		if pooled {
			buf = getSpan(int(s.end - s.off))
		} else {
			buf = make([]byte, s.end-s.off)
		}
		bufs[k] = buf
		if f.whole != nil && s.end <= uint64(len(f.whole)) {
			copy(buf, f.whole[s.off:s.end]) // a copy: decoders own their buffers
		} else if err := f.st.ReadAt(ctx, f.key, buf, int64(s.off)); err != nil {
			return err
		}
		for _, i := range s.members {
			r := ranges[i]
			out[i] = buf[r.off-s.off : r.off-s.off+r.size : r.off-s.off+r.size]
		}
		return nil
	}
	if len(spans) == 1 {
		return bufs, read(0)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(spans))
	for i := range spans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = read(i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return bufs, nil
}

// pageStream yields the pages of one column in order, reading ahead up to a
// byte budget so decoding never waits on I/O in a steady scan. Page buffers
// are handed to the decoder, which may keep referencing them until it has
// produced its arrays.
type pageStream struct {
	f      *File
	col    int
	next   int // index of the next page to return
	ahead  []*pending
	issued int // index of the next page to start reading
	budget int64
	ranges []RowRange // when set, only pages overlapping them are read ahead
}

type pending struct {
	done chan struct{}
	p    *page
	err  error
	size int64
	lazy bool // not read ahead: read when (if ever) asked for
}

// wanted reports whether page idx overlaps the stream's row ranges.
func (s *pageStream) wanted(idx int) bool {
	if s.ranges == nil {
		return true
	}
	pi := &s.f.columns[s.col].pages[idx]
	lo, hi := pi.firstRow, pi.firstRow+pi.rows
	i := sort.Search(len(s.ranges), func(i int) bool { return s.ranges[i].End > lo })
	return i < len(s.ranges) && s.ranges[i].Start < hi
}

// defaultReadahead is the number of bytes a page stream keeps in flight.
const defaultReadahead = 8 << 20

func (f *File) pageStream(col, first int, opts ReadOptions) *pageStream {
	readahead := opts.Readahead
	if readahead <= 0 {
		readahead = defaultReadahead
	}
	return &pageStream{f: f, col: col, next: first, issued: first, budget: readahead, ranges: opts.Ranges}
}

// numPages returns the number of pages in the column.
func (s *pageStream) numPages() int { return len(s.f.columns[s.col].pages) }

// peekInfo returns the metadata of the next page without reading it, or nil
// at the end of the column.
func (s *pageStream) peekInfo() *pageInfo {
	if s.next >= s.numPages() {
		return nil
	}
	return &s.f.columns[s.col].pages[s.next]
}

// skipPage drops the next page without reading it (when it was not yet
// requested) or discards its read.
func (s *pageStream) skipPage() {
	if len(s.ahead) > 0 {
		s.ahead = s.ahead[1:]
	} else {
		s.issued++
	}
	s.next++
}

// nextPage returns the next page, or nil at the end of the column.
func (s *pageStream) nextPage(ctx context.Context) (*page, error) {
	if s.next >= s.numPages() {
		return nil, nil
	}
	s.fill(ctx)
	pd := s.ahead[0]
	s.ahead = s.ahead[1:]
	s.next++
	if pd.lazy {
		return s.f.readPage(ctx, s.col, s.next-1)
	}
	select {
	case <-pd.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return pd.p, pd.err
}

// fill starts reads until the in-flight bytes reach the budget (always at
// least one page).
func (s *pageStream) fill(ctx context.Context) {
	var inflight int64
	for _, pd := range s.ahead {
		inflight += pd.size
	}
	pages := s.f.columns[s.col].pages
	for s.issued < len(pages) && (len(s.ahead) == 0 || inflight < s.budget) {
		idx := s.issued
		if !s.wanted(idx) {
			s.ahead = append(s.ahead, &pending{lazy: true})
			s.issued++
			continue
		}
		var size int64
		for _, b := range pages[idx].bufs {
			size += int64(b.size)
		}
		pd := &pending{done: make(chan struct{}), size: size}
		s.ahead = append(s.ahead, pd)
		s.issued++
		inflight += size
		go func() {
			pd.p, pd.err = s.f.readPage(context.WithoutCancel(ctx), s.col, idx)
			close(pd.done)
		}()
	}
}
