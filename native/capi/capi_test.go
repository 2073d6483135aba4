package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/kv0/kv0/core/kv"
	"github.com/kv0/kv0/core/tracking"
	"github.com/kv0/kv0/native/kvdb"
	"github.com/kv0/kv0/native/wal"
)

// appendOp serializes one batch operation as the Python side does.
func appendOp(buf []byte, op byte, a, b []byte) []byte {
	buf = append(buf, op)
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(a)))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(b)))
	return append(append(buf, a...), b...)
}

func TestDecodeBatch(t *testing.T) {
	buf := appendOp(nil, batchPut, []byte("k"), []byte("v"))
	buf = appendOp(buf, batchDelete, []byte("gone"), nil)
	buf = appendOp(buf, batchDeleteRange, []byte("a"), []byte("b"))
	buf = appendOp(buf, batchPut, nil, nil)
	var b kv.Batch
	if err := decodeBatch(buf, &b); err != nil {
		t.Fatal(err)
	}
	if b.Len() != 4 {
		t.Fatalf("%d operations, want 4", b.Len())
	}
	for _, bad := range [][]byte{
		buf[:len(buf)-1],                   // truncated value
		{batchPut, 1, 0},                   // truncated header
		appendOp(nil, 9, []byte("k"), nil), // unknown op
		appendOp(nil, batchDelete, []byte("k"), []byte("v")), // delete with a value
		{batchPut, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0},       // length past the end
	} {
		var b kv.Batch
		if err := decodeBatch(bad, &b); !errors.Is(err, errInvalidArg) {
			t.Errorf("decodeBatch(%x) = %v, want an invalid-argument error", bad, err)
		}
	}
}

func TestDecodeKeys(t *testing.T) {
	var buf []byte
	for _, k := range []string{"a", "", "ccc"} {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(k)))
		buf = append(buf, k...)
	}
	keys, err := decodeKeys(buf, 3)
	if err != nil || len(keys) != 3 || string(keys[0]) != "a" || len(keys[1]) != 0 || string(keys[2]) != "ccc" {
		t.Fatalf("decodeKeys = %q, %v", keys, err)
	}
	for _, n := range []int{2, 4, -1} {
		if _, err := decodeKeys(buf, n); !errors.Is(err, errInvalidArg) {
			t.Errorf("decodeKeys(n=%d) = %v, want an invalid-argument error", n, err)
		}
	}
}

func FuzzDecodeBatch(f *testing.F) {
	f.Add(appendOp(appendOp(nil, batchPut, []byte("k"), []byte("v")), batchDeleteRange, []byte("a"), []byte("z")))
	f.Add([]byte{batchDelete, 1, 0, 0, 0, 0, 0, 0, 0, 'x'})
	f.Fuzz(func(t *testing.T, buf []byte) {
		var b kv.Batch
		if err := decodeBatch(buf, &b); err != nil {
			if !errors.Is(err, errInvalidArg) {
				t.Fatalf("error %v is not an invalid-argument error", err)
			}
			return
		}
		// A batch that decodes re-encodes to the same bytes' operation count.
		n := 0
		for off := 0; off < len(buf); n++ {
			off += 9 + int(binary.LittleEndian.Uint32(buf[off+1:])) + int(binary.LittleEndian.Uint32(buf[off+5:]))
		}
		if n != b.Len() {
			t.Fatalf("%d operations decoded, %d in the buffer", b.Len(), n)
		}
	})
}

func FuzzDecodeKeys(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 'k', 0, 0, 0, 0}, 2)
	f.Fuzz(func(t *testing.T, buf []byte, n int) {
		keys, err := decodeKeys(buf, n)
		if err != nil {
			if !errors.Is(err, errInvalidArg) {
				t.Fatalf("error %v is not an invalid-argument error", err)
			}
			return
		}
		size := 0
		for _, k := range keys {
			size += 4 + len(k)
		}
		if len(keys) != n || size != len(buf) {
			t.Fatalf("%d keys of %d bytes from %d bytes, n=%d", len(keys), size, len(buf), n)
		}
	})
}

func TestErrCode(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
	}{
		{fmt.Errorf("x: %w", kv.ErrNotFound), codeNotFound},
		{fmt.Errorf("x: %w", tracking.ErrNotFound), codeNotFound},
		{fmt.Errorf("x: %w", kv.ErrNotSupported), codeNotSupported},
		{fmt.Errorf("x: %w", tracking.ErrReadOnly), codeNotSupported},
		{&kv.CorruptionError{File: "f", Offset: -1}, codeCorruption},
		{fmt.Errorf("kv0: WAL of x: %w", &wal.CorruptError{Segment: "s", Location: "x"}), codeWALCorruption},
		{fmt.Errorf("x: %w", kv.ErrConflict), codeConflict},
		{fmt.Errorf("x: %w", tracking.ErrInvalid), codeInvalidArgument},
		{fmt.Errorf("x: %w", kv.ErrClosed), codeClosed},
		{errClosedHandle, codeClosed},
		{fmt.Errorf("x: %w", kv.ErrStoreIO), codeStoreIO},
		{&os.PathError{Op: "open", Path: "/x", Err: os.ErrPermission}, codeStoreIO},
		{errors.New("something else"), codeOther},
	} {
		if got := errCode(c.err); got != c.code {
			t.Errorf("errCode(%v) = %d, want %d", c.err, got, c.code)
		}
	}
}

func TestApplyEnv(t *testing.T) {
	t.Setenv("KV0_TEST_KEEP", "old")
	t.Setenv("KV0_TEST_DROP", "x")
	t.Setenv("OTHER_TEST_VAR", "untouched")
	if err := applyEnv([]byte("KV0_TEST_KEEP=new\x00AWS_TEST_ADD=1\x00")); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("KV0_TEST_KEEP") != "new" || os.Getenv("AWS_TEST_ADD") != "1" || os.Getenv("OTHER_TEST_VAR") != "untouched" {
		t.Fatalf("environment not applied: %q %q %q", os.Getenv("KV0_TEST_KEEP"), os.Getenv("AWS_TEST_ADD"), os.Getenv("OTHER_TEST_VAR"))
	}
	if _, ok := os.LookupEnv("KV0_TEST_DROP"); ok {
		t.Fatal("KV0_TEST_DROP was not unset")
	}
	os.Unsetenv("AWS_TEST_ADD")
	if err := applyEnv([]byte("no-equals")); !errors.Is(err, errInvalidArg) {
		t.Fatalf("applyEnv(no-equals) = %v", err)
	}
}

// BenchmarkIterChunk measures the Go half of an iterator step: encoding
// chunks of 1,024 entries (100-byte values) for the Python side.
func BenchmarkIterChunk(b *testing.B) {
	ctx := context.Background()
	db, err := kvdb.Open(ctx, "memory://capi-bench-iter", kvdb.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	const n = 100_000
	var wb kv.Batch
	val := make([]byte, 100)
	for i := range n {
		wb.Put(binary.BigEndian.AppendUint64([]byte("key"), uint64(i)), val)
	}
	if err := db.Write(ctx, &wb, nil); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		it, err := db.NewIter(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		h := &iterHandle{it: it}
		valid, got := it.First(), 0
		for valid {
			head, _, m, err := h.chunk(true, false, 1024)
			if err != nil {
				b.Fatal(err)
			}
			got += m
			valid = binary.LittleEndian.Uint32(head[4:]) == 1
		}
		it.Close()
		if got != n {
			b.Fatalf("%d entries, want %d", got, n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
}
