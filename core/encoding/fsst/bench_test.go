package fsst

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// textCorpus returns n short strings of words, the kind of column FSST is
// chosen for.
func textCorpus(rng *rand.Rand, n int) [][]byte {
	words := []string{"lance", "storage", "engine", "column", "the", "value", "of", "page",
		"user", "id", "2025", "request", "https://", "example.com/", "error", "ok"}
	out := make([][]byte, n)
	for i := range out {
		var s []byte
		for range 3 + rng.IntN(8) {
			s = fmt.Appendf(s, "%s ", words[rng.IntN(len(words))])
		}
		out[i] = s
	}
	return out
}

// benchCorpora are the inputs of the decode benchmarks: "text" is words
// only; "mixed" is a third each of URLs, log lines and random bytes (which
// escape a lot).
var benchCorpora = []struct {
	name string
	gen  func(*rand.Rand, int) [][]byte
}{{"text", textCorpus}, {"mixed", corpus}}

// benchInput compresses strs and returns the table, the codes and their
// offsets, and the decoded size.
func benchInput(strs [][]byte) (*Table, []byte, []int64, int) {
	tab := Train(strs)
	var comp []byte
	offs := []int64{0}
	raw := 0
	for _, s := range strs {
		comp = tab.Encode(comp, s)
		offs = append(offs, int64(len(comp)))
		raw += len(s)
	}
	return tab, comp, offs, raw
}

// BenchmarkDecodeOffsets reports decoded (output) bytes per second for a
// page of 20000 strings.
func BenchmarkDecodeOffsets(b *testing.B) {
	for _, c := range benchCorpora {
		b.Run(c.name, func(b *testing.B) {
			tab, comp, offs, raw := benchInput(c.gen(rand.New(rand.NewPCG(5, 6)), 20000))
			b.ReportMetric(float64(len(comp))/float64(raw), "ratio")
			data := make([]byte, 0, 8*len(comp))
			doffs := make([]int64, 0, len(offs))
			b.SetBytes(int64(raw))
			for b.Loop() {
				var err error
				data, doffs, err = tab.DecodeOffsets(data[:0], doffs[:0], comp, offs)
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecode decodes all codes of the page as one long string.
func BenchmarkDecode(b *testing.B) {
	for _, c := range benchCorpora {
		b.Run(c.name, func(b *testing.B) {
			tab, comp, _, raw := benchInput(c.gen(rand.New(rand.NewPCG(5, 6)), 20000))
			dst := make([]byte, 0, 8*len(comp))
			b.SetBytes(int64(raw))
			for b.Loop() {
				var err error
				if dst, err = tab.Decode(dst[:0], comp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEncode(b *testing.B) {
	strs := corpus(rand.New(rand.NewPCG(5, 6)), 20000)
	tab := Train(strs)
	raw := 0
	for _, s := range strs {
		raw += len(s)
	}
	var dst []byte
	b.SetBytes(int64(raw))
	for b.Loop() {
		dst = dst[:0]
		for _, s := range strs {
			dst = tab.Encode(dst, s)
		}
	}
}

func BenchmarkTrain(b *testing.B) {
	strs := corpus(rand.New(rand.NewPCG(5, 6)), 20000)
	for b.Loop() {
		Train(strs)
	}
}
