package s3

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/jsonl"
	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/tests/azure"
)

// lancedbNode returns node when lancedb is installed for the interop suite
// (tests/interop: npm ci), or skips.
func lancedbNode(t *testing.T) string {
	t.Helper()
	need(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	if _, err := os.Stat("../interop/node_modules/@lancedb/lancedb"); err != nil {
		t.Skip("lancedb is not installed (run npm ci in tests/interop)")
	}
	return node
}

func runNode(t *testing.T, node string, args ...string) {
	t.Helper()
	cmd := exec.Command(node, append([]string{"lancedb_s3.mjs"}, args...)...)
	cmd.Env = append(os.Environ(), "KV0_S3_ENDPOINT="+endpoint, "KV0_S3_ACCESS_KEY="+accessKey,
		"KV0_S3_SECRET_KEY="+secretKey, "AWS_EC2_METADATA_DISABLED=true")
	if azurite != nil {
		cmd.Env = append(cmd.Env, "KV0_AZ_ACCOUNT="+azure.Account, "KV0_AZ_KEY="+azure.Key,
			"AZURITE_BLOB_STORAGE_URL="+strings.TrimSuffix(azurite.BlobEndpoint, "/"+azure.Account))
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node lancedb_s3.mjs %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// goLines scans the latest version of t.lance at uri as JSON lines.
func goLines(t *testing.T, uri string) string {
	return goLinesOn(t, s3Backend(), uri)
}

func goLinesOn(t *testing.T, b backend, uri string) string {
	t.Helper()
	ctx := context.Background()
	st := b.open(t, uri)
	d, err := lance.Open(ctx, st, "t.lance", lance.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := d.Scan(ctx, lance.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	var buf bytes.Buffer
	w := jsonl.NewWriter(&buf)
	for sc.Next() {
		if err := w.Write(sc.Record()); err != nil {
			t.Fatal(err)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestLancedbReadsGoDataset(t *testing.T) { lancedbReadsGo(t, s3Backend()) }

// TestLancedbReadsGoDatasetOnAzure: lancedb opens an az:// dataset kv0
// wrote to Azurite (lance's object store in emulator mode) and reads the
// same rows.
func TestLancedbReadsGoDatasetOnAzure(t *testing.T) { lancedbReadsGo(t, azureBackend()) }

func lancedbReadsGo(t *testing.T, b backend) {
	node := lancedbNode(t)
	b.need(t)
	ctx := context.Background()
	uri := b.newURI("go-written")
	st := b.open(t, uri)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	for i := range 500 {
		rb.Field(0).(*array.Int64Builder).Append(int64(i * i))
		if i%7 == 0 {
			rb.Field(1).AppendNull()
		} else {
			rb.Field(1).(*array.StringBuilder).Append("row " + strings.Repeat("x", i%5))
		}
	}
	rec := rb.NewRecordBatch()
	rb.Release()
	// lancedb 0.31 (lance 8) reads data files of format 2.1 only.
	d, err := lance.Create(ctx, st, "t.lance", schema, lance.Batches(rec), lance.WriteOptions{DataFormat: lance.DataFormat21})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Append(ctx, lance.Batches(rec), lance.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "lancedb.jsonl")
	runNode(t, node, "read", uri, out)
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := goLinesOn(t, b, uri); string(got) != want || len(want) == 0 {
		t.Fatalf("lancedb read %d bytes, Go %d bytes; they differ", len(got), len(want))
	}
}

func TestGoReadsLancedbDataset(t *testing.T) { goReadsLancedb(t, s3Backend()) }

// TestGoReadsLancedbDatasetOnAzure: kv0 reads an az:// dataset lancedb
// wrote to Azurite.
func TestGoReadsLancedbDatasetOnAzure(t *testing.T) { goReadsLancedb(t, azureBackend()) }

func goReadsLancedb(t *testing.T, b backend) {
	node := lancedbNode(t)
	b.need(t)
	uri := b.newURI("lancedb-written")
	runNode(t, node, "write", uri)
	out := filepath.Join(t.TempDir(), "lancedb.jsonl")
	runNode(t, node, "read", uri, out)
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got := goLinesOn(t, b, uri)
	if got != string(want) || strings.Count(got, "\n") != 1001 {
		t.Fatalf("Go read %d lines, lancedb %d; they differ", strings.Count(got, "\n"), bytes.Count(want, []byte("\n")))
	}
}
