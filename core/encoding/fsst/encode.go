package fsst

import (
	"cmp"
	"encoding/binary"
	"slices"
)

// encoder finds the longest symbol matching at a position.
type encoder struct {
	// byFirst[b] lists the codes whose symbol starts with byte b, longest
	// symbol first.
	byFirst [256][]uint8
}

func (t *Table) encoder() *encoder {
	t.encOnce.Do(func() {
		e := new(encoder)
		for c := range t.n {
			b := byte(t.symbols[c])
			e.byFirst[b] = append(e.byFirst[b], uint8(c))
		}
		for b := range e.byFirst {
			slices.SortStableFunc(e.byFirst[b], func(x, y uint8) int {
				return cmp.Compare(t.lens[y], t.lens[x])
			})
		}
		t.enc = e
	})
	return t.enc
}

// byteMask returns a mask of the low n bytes of a word, 1 ≤ n ≤ 8.
func byteMask(n uint8) uint64 { return ^uint64(0) >> (64 - 8*uint(n)) }

// load reads up to 8 bytes of b as a little-endian word, zero-padded.
func load(b []byte) uint64 {
	if len(b) >= 8 {
		return binary.LittleEndian.Uint64(b)
	}
	var w uint64
	for k, c := range b {
		w |= uint64(c) << (8 * k)
	}
	return w
}

// match returns the code of the longest symbol that is a prefix of src and
// its length, or length 0 if there is none. src must not be empty.
func (t *Table) match(e *encoder, src []byte) (uint8, int) {
	w := load(src)
	for _, c := range e.byFirst[src[0]] {
		l := t.lens[c]
		if int(l) <= len(src) && (w^t.symbols[c])&byteMask(l) == 0 {
			return c, int(l)
		}
	}
	return 0, 0
}

// Encode appends the compression of one string, src, to dst: at every
// position the code of the longest matching symbol, or an escape and the
// literal byte where no symbol matches. A table whose Compressed is false
// appends src unchanged. The result decodes back to src with Decode.
func (t *Table) Encode(dst, src []byte) []byte {
	if !t.compressed {
		return append(dst, src...)
	}
	e := t.encoder()
	for i := 0; i < len(src); {
		c, l := t.match(e, src[i:])
		if l == 0 {
			dst = append(dst, Escape, src[i])
			i++
			continue
		}
		dst = append(dst, c)
		i += l
	}
	return dst
}

// sym is a symbol under construction: its bytes, little-endian, and length.
type sym struct {
	val uint64
	len uint8
}

// concat joins a and b, keeping at most 8 bytes.
func concat(a, b sym) sym {
	n := min(a.len+b.len, MaxSymbolLen)
	// A shift by 64 yields 0 in Go, so a full a keeps only itself.
	v := a.val | b.val<<(8*a.len)
	return sym{v & byteMask(n), n}
}

const (
	// sampleTarget is how many bytes of the input Train looks at.
	sampleTarget = 16 << 10
	// sampleChunk caps what one long string contributes to the sample.
	sampleChunk = 512
	// trainRounds is the number of refinement rounds.
	trainRounds = 5
)

// Train builds a symbol table for strings like samples with a greedy
// version of the FSST construction: starting from an empty table it
// repeatedly compresses a sample of at most 16 KiB, counts how often each
// symbol and each pair of adjacent symbols occurs, and keeps the 255
// candidates (symbols, single bytes and pairs joined up to 8 bytes) that
// save the most output. The result always has Compressed set. Train is
// deterministic: the same samples give the same table.
func Train(samples [][]byte) *Table {
	sample := pickSample(samples)
	t := &Table{compressed: true}
	for range trainRounds {
		t = t.refine(sample)
	}
	return t
}

// pickSample returns samples if they are small, and otherwise pieces of
// them totalling about sampleTarget bytes, picked by a fixed pseudo-random
// sequence.
func pickSample(samples [][]byte) [][]byte {
	total := 0
	for _, s := range samples {
		total += len(s)
	}
	if total <= sampleTarget {
		return samples
	}
	var out [][]byte
	state := uint64(0x9E3779B97F4A7C15)
	next := func(n int) int {
		state ^= state << 13
		state ^= state >> 7
		state ^= state << 17
		return int(state % uint64(n))
	}
	size := 0
	for tries := 0; size < sampleTarget && tries < 4*len(samples)+4096; tries++ {
		s := samples[next(len(samples))]
		if len(s) > sampleChunk {
			off := next(len(s) - sampleChunk + 1)
			s = s[off : off+sampleChunk]
		}
		out = append(out, s)
		size += len(s)
	}
	return out
}

// refine compresses sample with t and returns the table of the best
// candidates found.
func (t *Table) refine(sample [][]byte) *Table {
	e := t.encoder()
	single := make(map[sym]int)
	pairs := make(map[sym]int)
	for _, s := range sample {
		var prev sym
		for i := 0; i < len(s); {
			var cur sym
			if c, l := t.match(e, s[i:]); l > 0 {
				cur = sym{t.symbols[c] & byteMask(uint8(l)), uint8(l)}
				i += l
			} else {
				cur = sym{uint64(s[i]), 1}
				i++
			}
			single[cur]++
			if prev.len > 0 {
				pairs[concat(prev, cur)]++
			}
			prev = cur
		}
	}
	gain := make(map[sym]int, len(single)+len(pairs))
	for s, n := range single {
		g := n * int(s.len)
		if s.len == 1 {
			// A single byte without a code costs two output bytes (escape +
			// literal), so a code for it is worth more than its length.
			g *= 8
		}
		gain[s] += g
	}
	for s, n := range pairs {
		if n > 1 {
			gain[s] += n * int(s.len)
		}
	}
	cands := make([]sym, 0, len(gain))
	for s := range gain {
		cands = append(cands, s)
	}
	slices.SortFunc(cands, func(a, b sym) int {
		return cmp.Or(
			cmp.Compare(gain[b], gain[a]),
			cmp.Compare(b.len, a.len),
			cmp.Compare(a.val, b.val),
		)
	})
	next := &Table{compressed: true}
	for _, s := range cands[:min(len(cands), MaxSymbols)] {
		next.symbols[next.n] = s.val
		next.lens[next.n] = s.len
		next.n++
	}
	return next
}
