package httpstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/kv0/kv0/core/store"
)

// readReq is one ReadAt waiting for, or served by, a worker.
type readReq struct {
	ctx  context.Context
	key  string
	off  int64
	p    []byte
	done chan error // buffered; receives exactly one result

	mu        sync.Mutex
	abandoned bool // the caller returned early; p must not be touched
	delivered bool
}

// deliver copies data into the caller's buffer unless the caller has gone.
func (r *readReq) deliver(data []byte, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.abandoned || r.delivered {
		return
	}
	if err == nil {
		copy(r.p, data)
	}
	r.delivered = true
	r.done <- err
}

// read queues a ReadAt and waits for a worker to serve it. Up to
// MaxConcurrency workers take the oldest waiting read together with the
// waiting reads of the same object near it, and fetch them as one range.
func (s *Store) read(ctx context.Context, key string, p []byte, off int64) error {
	r := &readReq{ctx: ctx, key: key, off: off, p: p, done: make(chan error, 1)}
	s.mu.Lock()
	s.queue = append(s.queue, r)
	if s.active < s.opts.MaxConcurrency {
		s.active++
		go s.worker()
	}
	s.mu.Unlock()
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		r.mu.Lock()
		if r.delivered {
			r.mu.Unlock()
			return <-r.done
		}
		r.abandoned = true
		r.mu.Unlock()
		return ctx.Err()
	}
}

func (s *Store) worker() {
	for {
		s.mu.Lock()
		run := s.takeRun()
		if run == nil {
			s.active--
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		s.serve(run)
	}
}

// takeRun removes and returns the oldest live read and the waiting reads of
// the same object that merge with it. s.mu must be held.
func (s *Store) takeRun() []*readReq {
	// Drop reads whose callers have gone.
	live := s.queue[:0]
	for _, r := range s.queue {
		r.mu.Lock()
		gone := r.abandoned
		r.mu.Unlock()
		if !gone {
			live = append(live, r)
		}
	}
	clear(s.queue[len(live):])
	s.queue = live
	if len(s.queue) == 0 {
		return nil
	}
	first := s.queue[0]
	if s.opts.CoalesceGap < 0 {
		s.queue = s.queue[1:]
		return []*readReq{first}
	}
	var same []*readReq
	for _, r := range s.queue {
		if r.key == first.key {
			same = append(same, r)
		}
	}
	slices.SortFunc(same, func(a, b *readReq) int {
		switch {
		case a.off < b.off:
			return -1
		case a.off > b.off:
			return 1
		}
		return 0
	})
	// Split the sorted reads into groups and keep the one holding first.
	var run []*readReq
	var lo, hi int64
	for _, r := range same {
		end := r.off + int64(len(r.p))
		if len(run) > 0 && r.off <= hi+s.opts.CoalesceGap && max(hi, end)-lo <= s.opts.MaxCoalesce {
			run = append(run, r)
			hi = max(hi, end)
			continue
		}
		if slices.Contains(run, first) {
			break
		}
		run, lo, hi = []*readReq{r}, r.off, end
	}
	rest := s.queue[:0]
	for _, r := range s.queue {
		if !slices.Contains(run, r) {
			rest = append(rest, r)
		}
	}
	clear(s.queue[len(rest):])
	s.queue = rest
	return run
}

// serve fetches the span of run and hands each read its part. The fetch is
// cancelled when every caller of the run has gone.
func (s *Store) serve(run []*readReq) {
	lo, hi := run[0].off, int64(0)
	for _, r := range run {
		lo = min(lo, r.off)
		hi = max(hi, r.off+int64(len(r.p)))
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(run[0].ctx))
	defer cancel()
	var mu sync.Mutex
	left := len(run)
	for _, r := range run {
		stop := context.AfterFunc(r.ctx, func() {
			mu.Lock()
			left--
			if left == 0 {
				cancel()
			}
			mu.Unlock()
		})
		defer stop()
	}
	data, total, err := s.fetch(ctx, "read", run[0].key, lo, hi)
	for _, r := range run {
		end := r.off + int64(len(r.p))
		switch {
		case err != nil && errors.Is(err, store.ErrShortObject):
			r.deliver(nil, fmt.Errorf("httpstore read %s [%d, %d) of %d bytes: %w", r.key, r.off, end, total, store.ErrShortObject))
		case err != nil:
			r.deliver(nil, err)
		case end-lo > int64(len(data)):
			r.deliver(nil, fmt.Errorf("httpstore read %s [%d, %d) of %d bytes: %w", r.key, r.off, end, total, store.ErrShortObject))
		default:
			r.deliver(data[r.off-lo:end-lo], nil)
		}
	}
}
