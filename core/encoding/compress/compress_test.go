package compress

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

var schemes = []Scheme{SchemeLZ4, SchemeZstd}

func inputs() map[string][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 100_000)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	var text bytes.Buffer
	for text.Len() < 200_000 {
		fmt.Fprintf(&text, "row %d: key=user-%d value=%x\n", text.Len(), rng.IntN(1000), rng.Uint32())
	}
	return map[string][]byte{
		"empty":  {},
		"one":    {42},
		"short":  []byte("hello, lance"),
		"random": random,
		"text":   text.Bytes(),
		"zeros":  make([]byte, 1<<20),
	}
}

func TestRoundTrip(t *testing.T) {
	for name, in := range inputs() {
		for _, s := range schemes {
			for _, level := range []int{0, 1, 3, 7, 19} {
				if s == SchemeLZ4 && level != 0 {
					continue
				}
				t.Run(fmt.Sprintf("%s/%v/%d", name, s, level), func(t *testing.T) {
					comp, err := Compress(s, level, []byte("pre"), in)
					if err != nil {
						t.Fatal(err)
					}
					if string(comp[:3]) != "pre" {
						t.Fatal("Compress did not append")
					}
					comp = comp[3:]
					out, err := Decompress(s, []byte("x"), comp)
					if err != nil {
						t.Fatal(err)
					}
					if out[0] != 'x' || !bytes.Equal(out[1:], in) {
						t.Fatalf("round trip differs (%d bytes in, %d out)", len(in), len(out)-1)
					}
					if name == "zeros" || name == "text" {
						t.Logf("%d -> %d bytes", len(in), len(comp))
					}
				})
			}
		}
	}
}

func TestFraming(t *testing.T) {
	// zstd: u64 LE size, then a frame starting with the magic 28 B5 2F FD.
	comp, err := Compress(SchemeZstd, 3, nil, []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(comp[:12], []byte{5, 0, 0, 0, 0, 0, 0, 0, 0x28, 0xB5, 0x2F, 0xFD}) {
		t.Fatalf("zstd framing % x", comp[:12])
	}
	// LZ4: u32 LE size, then a block. Three bytes cannot be compressed:
	// token 0x30 (3 literals, no match) and the literals, as the
	// reference LZ4_compress_default writes them.
	comp, err = Compress(SchemeLZ4, 0, nil, []byte("abc"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{3, 0, 0, 0, 0x30, 'a', 'b', 'c'}; !bytes.Equal(comp, want) {
		t.Fatalf("lz4 framing % x, want % x", comp, want)
	}
	comp, err = Compress(SchemeLZ4, 0, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{0, 0, 0, 0, 0}; !bytes.Equal(comp, want) {
		t.Fatalf("lz4 of nothing % x, want % x", comp, want)
	}
	// 20 literals need a length byte: token 0xF0, then 20-15 = 5.
	lit := appendLiteralBlock(nil, bytes.Repeat([]byte{'z'}, 20))
	if !bytes.Equal(lit[:2], []byte{0xF0, 5}) || len(lit) != 22 {
		t.Fatalf("literal block % x", lit)
	}
}

// helloFrame is a zstd frame built by hand: magic, frame header descriptor
// 0x20 (single segment, 1-byte content size), content size 5, one raw
// block (header 0x29 0x00 0x00: last block, type raw, size 5 << 3), "hello".
var helloFrame = []byte{0x28, 0xB5, 0x2F, 0xFD, 0x20, 0x05, 0x29, 0x00, 0x00, 'h', 'e', 'l', 'l', 'o'}

func TestHandVectors(t *testing.T) {
	prefixed := append([]byte{5, 0, 0, 0, 0, 0, 0, 0}, helloFrame...)
	// An LZ4 block: 3 literals "abc" then a match of 9 at offset 3 (token
	// 0x35: 3 literals, match length 4+5), then 5 final literals.
	lz4Block := []byte{17, 0, 0, 0, 0x35, 'a', 'b', 'c', 3, 0, 0x50, 'x', 'y', 'z', 'u', 'v'}
	tests := []struct {
		name   string
		scheme Scheme
		in     []byte
		want   string
	}{
		{"zstd raw frame", SchemeZstd, helloFrame, "hello"},
		{"zstd prefixed", SchemeZstd, prefixed, "hello"},
		{"zstd two raw frames", SchemeZstd, append(append([]byte(nil), helloFrame...), helloFrame...), "hellohello"},
		{"zstd empty", SchemeZstd, nil, ""},
		{"lz4 with a match", SchemeLZ4, lz4Block, "abcabcabcabcxyzuv"},
		{"lz4 empty block", SchemeLZ4, []byte{0, 0, 0, 0, 0}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Decompress(tc.scheme, nil, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want {
				t.Fatalf("got %q, want %q", out, tc.want)
			}
		})
	}
}

func TestRawDetection(t *testing.T) {
	// Lance's rule: a frame with bit 0x10 of its header descriptor set
	// cannot be raw, so the first 8 bytes are taken as a size.
	odd := append([]byte(nil), helloFrame...)
	odd[4] |= 0x10
	if isRawZstd(odd) {
		t.Fatal("reserved bit set but detected as raw")
	}
	if !isRawZstd(helloFrame) || !isRawZstd([]byte{1, 2, 3}) {
		t.Fatal("raw frame not detected")
	}
	// A bare frame made by the encoder (no size prefix) also decodes.
	enc, _ := zstd.NewWriter(nil)
	defer enc.Close()
	frame := enc.EncodeAll([]byte("bare frame from another writer"), nil)
	out, err := Decompress(SchemeZstd, nil, frame)
	if err != nil || string(out) != "bare frame from another writer" {
		t.Fatalf("bare frame: %q, %v", out, err)
	}
}

// TestStreamedFrames decodes frames written the way Lance's Rust writer
// does: a streaming encoder, so the frame header has no content size, after
// Lance's 8-byte size prefix.
func TestStreamedFrames(t *testing.T) {
	for name, in := range inputs() {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			buf.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(in))))
			w, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(in); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			out, err := Decompress(SchemeZstd, nil, buf.Bytes())
			if err != nil || !bytes.Equal(out, in) {
				t.Fatalf("streamed frame: %v", err)
			}
		})
	}
}

func TestCorrupt(t *testing.T) {
	le64 := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	le32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	tests := []struct {
		name   string
		scheme Scheme
		in     []byte
	}{
		{"zstd size over 1 GiB", SchemeZstd, cat(le64(1<<30+1), bytes.Repeat(helloFrame, 3000))},
		{"zstd size impossible for input", SchemeZstd, cat(le64(1<<20), helloFrame)},
		{"zstd size too large", SchemeZstd, cat(le64(6), helloFrame)},
		{"zstd size too small", SchemeZstd, cat(le64(4), helloFrame)},
		{"zstd garbage after prefix", SchemeZstd, cat(le64(5), []byte("not a frame"))},
		{"zstd truncated frame", SchemeZstd, helloFrame[:12]},
		{"zstd short garbage", SchemeZstd, []byte{1, 2, 3}},
		{"lz4 no prefix", SchemeLZ4, []byte{1, 2}},
		{"lz4 empty size with data", SchemeLZ4, cat(le32(0), []byte("0000"))},
		{"lz4 empty size with a literal", SchemeLZ4, cat(le32(0), []byte{0x10, 'a'})},
		{"lz4 size over 1000x", SchemeLZ4, cat(le32(1001*2), []byte{0x1F, 'a'})},
		{"lz4 size too large", SchemeLZ4, cat(le32(4), []byte{0x30, 'a', 'b', 'c'})},
		{"lz4 size too small", SchemeLZ4, cat(le32(2), []byte{0x30, 'a', 'b', 'c'})},
		{"lz4 offset before start", SchemeLZ4, cat(le32(12), []byte{0x14, 'a', 9, 0, 0x00})},
		{"lz4 zero offset", SchemeLZ4, cat(le32(12), []byte{0x14, 'a', 0, 0, 0x00})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Decompress(tc.scheme, []byte("keep"), tc.in)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}
			if string(out) != "keep" {
				t.Fatalf("dst changed on error: %q", out)
			}
		})
	}
	if _, err := Decompress(Scheme(7), nil, nil); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("unknown scheme: %v", err)
	}
	if _, err := Compress(Scheme(0), 0, nil, nil); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("unknown scheme: %v", err)
	}
}

// TestZeroRatio checks that highly compressible zstd data past 1000:1,
// which real pages produce, is not mistaken for corruption.
func TestZeroRatio(t *testing.T) {
	in := make([]byte, 8<<20)
	comp, err := Compress(SchemeZstd, 3, nil, in)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d zeros -> %d bytes (%.0f:1)", len(in), len(comp), float64(len(in))/float64(len(comp)))
	out, err := Decompress(SchemeZstd, nil, comp)
	if err != nil || !bytes.Equal(out, in) {
		t.Fatalf("zeros: %v", err)
	}
}

func TestConcurrentNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	in := inputs()["text"]
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				s := schemes[(g+i)%2]
				comp, err := Compress(s, 1+i%7, nil, in)
				if err != nil {
					t.Error(err)
					return
				}
				out, err := Decompress(s, nil, comp)
				if err != nil || !bytes.Equal(out, in) {
					t.Errorf("%v: %v", s, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(time.Minute) // ample for exiting goroutines on a loaded machine
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines before, %d after", before, n)
	}
}

func TestSchemeString(t *testing.T) {
	if SchemeZstd.String() != "zstd" || SchemeLZ4.String() != "lz4" || Scheme(9).String() != "Scheme(9)" {
		t.Fatal("Scheme.String")
	}
}
