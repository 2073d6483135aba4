package compress

import (
	"fmt"
	"testing"
)

// BenchmarkDecompress reports uncompressed bytes per second.
func BenchmarkDecompress(b *testing.B) {
	in := inputs()
	for _, name := range []string{"text", "random"} {
		for _, s := range schemes {
			b.Run(fmt.Sprintf("%s/%v", name, s), func(b *testing.B) {
				comp, err := Compress(s, 3, nil, in[name])
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(len(comp))/float64(len(in[name])), "ratio")
				dst := make([]byte, 0, len(in[name]))
				b.SetBytes(int64(len(in[name])))
				for b.Loop() {
					if dst, err = Decompress(s, dst[:0], comp); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkCompress(b *testing.B) {
	in := inputs()["text"]
	for _, s := range schemes {
		b.Run(s.String(), func(b *testing.B) {
			var dst []byte
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				var err error
				if dst, err = Compress(s, 3, dst[:0], in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
