package s3

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/lance"
)

var appendSchema = arrow.NewSchema([]arrow.Field{
	{Name: "writer", Type: arrow.PrimitiveTypes.Int32},
	{Name: "seq", Type: arrow.PrimitiveTypes.Int32},
}, nil)

func rows(writer, from, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, appendSchema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int32Builder).Append(int32(writer))
		b.Field(1).(*array.Int32Builder).Append(int32(from + i))
	}
	return b.NewRecordBatch()
}

const (
	appendWriters = 8
	appendsEach   = 5
	rowsPerAppend = 3
)

// TestConcurrentAppendProcesses starts 8 processes that each append 5
// times to one dataset on S3; every row must land exactly once.
func TestConcurrentAppendProcesses(t *testing.T) {
	need(t)
	ctx := context.Background()
	uri := newURI("append")
	st := openStore(t, uri)
	if _, err := lance.Create(ctx, st, "t.lance", appendSchema, lance.Batches(rows(-1, 0, 1)), lance.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	var cmds []*exec.Cmd
	for w := range appendWriters {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAppendChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "KV0_S3_CHILD_ENDPOINT="+endpoint, "KV0_S3_CHILD_URI="+uri,
			"KV0_S3_CHILD_WRITER="+strconv.Itoa(w))
		out := &prefixWriter{t: t, name: fmt.Sprintf("writer %d", w)}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	d, err := lance.Open(ctx, st, "t.lance", lance.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := d.Scan(ctx, lance.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	seen := map[[2]int32]int{}
	for sc.Next() {
		rec := sc.Record()
		ws := rec.Column(0).(*array.Int32)
		ss := rec.Column(1).(*array.Int32)
		for i := range int(rec.NumRows()) {
			seen[[2]int32{ws.Value(i), ss.Value(i)}]++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	want := 1 + appendWriters*appendsEach*rowsPerAppend
	if len(seen) != want {
		t.Errorf("%d distinct rows, want %d", len(seen), want)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("row %v appears %d times", k, n)
		}
	}
	if v := d.Version(); v != 1+appendWriters*appendsEach {
		t.Errorf("latest version %d, want %d", v, 1+appendWriters*appendsEach)
	}
	t.Logf("%d writers x %d appends: version %d, %d rows", appendWriters, appendsEach, d.Version(), len(seen))
}

// TestAppendChild is the body of one writer process; it runs only when
// started by TestConcurrentAppendProcesses.
func TestAppendChild(t *testing.T) {
	uri := os.Getenv("KV0_S3_CHILD_URI")
	if uri == "" {
		t.Skip("runs only as a child of TestConcurrentAppendProcesses")
	}
	w, _ := strconv.Atoi(os.Getenv("KV0_S3_CHILD_WRITER"))
	ctx := context.Background()
	st := openStore(t, uri)
	for i := range appendsEach {
		d, err := lance.Open(ctx, st, "t.lance", lance.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Append(ctx, lance.Batches(rows(w, i*rowsPerAppend, rowsPerAppend)),
			lance.WriteOptions{Commit: lance.CommitOptions{MaxRetries: 200}}); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
}

// prefixWriter forwards a child's output to the test log.
type prefixWriter struct {
	t    *testing.T
	name string
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.t.Logf("%s: %s", p.name, b)
	return len(b), nil
}
