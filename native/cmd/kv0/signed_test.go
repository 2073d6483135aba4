package main

import (
	"bufio"
	"context"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// fakeS3 starts an in-process S3 server with bucket kv0-test and points
// s3:// locations at it through the environment.
func fakeS3(t *testing.T) {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket("kv0-test"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL": srv.URL, "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test-access",
		"AWS_SECRET_ACCESS_KEY": "test-secret", "KV0_S3_PATH_STYLE": "true", "KV0_S3_ALLOW_HTTP": "true",
		"AWS_ENDPOINT_URL_S3": "", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "KV0_SIGNER_TOKEN": "", "KV0_SIGNER_TOKEN_FILE": "",
		"AWS_CONFIG_FILE": filepath.Join(t.TempDir(), "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(t.TempDir(), "none"),
	} {
		t.Setenv(k, v)
	}
	t.Setenv("KV0_WAL_DIR", t.TempDir())
}

// ipcFile writes n rows of (id int64, name utf8) from first on as an
// Arrow IPC file.
func ipcFile(t *testing.T, first, n int64) string {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := first; i < first+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.StringBuilder).Append("row-" + strings.Repeat("x", int(i%5)))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "in.arrow")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// mustRun runs a command line that must succeed and returns its stdout.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := runCLI(args...)
	if code != 0 {
		t.Fatalf("kv0 %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

// startSignServer runs `kv0 sign-server` in-process for the repository
// s3://kv0-test/repo and returns its base URL and token file.
func startSignServer(t *testing.T) (base, tokenFile string) {
	t.Helper()
	return startSignServerFor(t, "s3://kv0-test/repo")
}

// startSignServerFor is startSignServer for the repository at uri.
func startSignServerFor(t *testing.T, uri string) (base, tokenFile string) {
	t.Helper()
	tokenFile = filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("a-token-of-thirty-two-characters\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"sign-server", "--bucket-uri", uri, "--token-file", tokenFile, "--listen", "127.0.0.1:0"}, pw, io.Discard)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("sign-server exited %d", code)
		}
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("sign-server: %v", err)
	}
	go io.Copy(io.Discard, pr)
	i := strings.Index(line, "http://")
	if i < 0 {
		t.Fatalf("sign-server said %q", line)
	}
	return strings.TrimSpace(line[i:]), tokenFile
}

// TestSignedReads writes a Lance dataset (lance write --mode create on
// s3://), a key-value database and a tracking repository to an in-process
// S3, starts kv0 sign-server on it, and checks that every read command
// prints through kv0+signer:// and through --signer exactly what it prints
// reading S3 directly.
func TestSignedReads(t *testing.T) {
	fakeS3(t)
	const s3 = "s3://kv0-test/repo/"
	mustRun(t, "lance", "write", s3+"t.lance", "--mode", "create", "--input", ipcFile(t, 0, 100))
	mustRun(t, "lance", "write", s3+"t.lance", "--mode", "append", "--input", ipcFile(t, 100, 50))
	mustRun(t, "lance", "tag", "create", s3+"t.lance", "first", "--version", "1")
	if code, _, errOut := runCLI("lance", "write", s3+"t.lance", "--mode", "create", "--input", ipcFile(t, 0, 1)); code != 1 || !strings.Contains(errOut, "exist") {
		t.Errorf("create over an existing dataset: exit %d, %q", code, errOut)
	}
	for _, kv := range [][2]string{{"apple", "red"}, {"banana", "yellow"}, {"cherry", "dark red"}} {
		mustRun(t, "kv", "put", s3+"db.lance", kv[0], kv[1])
	}
	mustRun(t, "kv", "tag", s3+"db.lance", "v-three")
	mustRun(t, "demo", s3+"runs", "--runs", "1", "--steps", "120")

	base, tokenFile := startSignServer(t)
	host := strings.TrimPrefix(base, "http://")
	reads := [][]string{
		{"lance", "info", "LOC/t.lance"},
		{"lance", "info", "LOC/t.lance", "--tag", "first", "--json"},
		{"lance", "log", "LOC/t.lance", "--json"},
		{"lance", "cat", "LOC/t.lance"},
		{"lance", "cat", "LOC/t.lance", "--version", "1", "--columns", "name", "--where", "id >= 90"},
		{"kv", "get", "LOC/db.lance", "banana"},
		{"kv", "scan", "LOC/db.lance", "--prefix", "c"},
		{"kv", "versions", "LOC/db.lance"},
		{"runs", "LOC/runs"},
		{"run", "LOC/runs", "bert-sst2-1", "--json"},
		{"params", "LOC/runs", "bert-sst2-1"},
		{"series", "LOC/runs", "resnet-cifar10-1"},
		{"metrics", "LOC/runs", "resnet-cifar10-1", "loss", "lr", "--max-points", "10", "--json"},
	}
	for _, args := range reads {
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			// with returns args at loc, and the location argument.
			with := func(loc string, extra ...string) ([]string, string) {
				out := append([]string(nil), extra...)
				where := ""
				for _, a := range args {
					if rest, ok := strings.CutPrefix(a, "LOC/"); ok {
						a = loc + rest
						where = a
					}
					out = append(out, a)
				}
				return out, where
			}
			s3Args, s3Loc := with(s3)
			direct := mustRun(t, s3Args...)
			if strings.TrimSpace(direct) == "" {
				t.Fatalf("%v printed nothing", args)
			}
			for _, prefix := range []string{"kv0+signer://" + host + "/", ""} {
				extra := []string{"--token-file", tokenFile}
				if prefix == "" {
					extra = append(extra, "--signer", base)
				}
				signed, loc := with(prefix, extra...)
				got := mustRun(t, signed...)
				// info names the location it was given.
				got = strings.Replace(got, "path:        "+loc+"\n", "path:        "+s3Loc+"\n", 1)
				got = strings.Replace(got, `"path":"`+loc+`"`, `"path":"`+s3Loc+`"`, 1)
				if got != direct {
					t.Errorf("kv0 %s:\n%s\nreading S3 directly:\n%s", strings.Join(signed, " "), got, direct)
				}
			}
		})
	}

	// The token comes from the environment too; a wrong one is refused
	// with a clear error, none at all is named, and writes are refused.
	t.Setenv("KV0_SIGNER_TOKEN_FILE", tokenFile)
	if out := mustRun(t, "kv", "get", "kv0+signer://"+host+"/db.lance", "apple"); out != "red\n" {
		t.Errorf("token from $KV0_SIGNER_TOKEN_FILE: %q", out)
	}
	t.Setenv("KV0_SIGNER_TOKEN_FILE", "")
	t.Setenv("KV0_SIGNER_TOKEN", "not-the-token-at-all-no")
	if code, _, errOut := runCLI("lance", "cat", "kv0+signer://"+host+"/t.lance"); code != 1 || !strings.Contains(errOut, "401") {
		t.Errorf("wrong token: exit %d, %q", code, errOut)
	}
	t.Setenv("KV0_SIGNER_TOKEN", "")
	if code, _, errOut := runCLI("runs", "kv0+signer://"+host+"/runs"); code != 1 || !strings.Contains(errOut, "token") {
		t.Errorf("no token: exit %d, %q", code, errOut)
	}
	if code, _, _ := runCLI("kv", "put", "--signer", base, "--token-file", tokenFile, "db.lance", "k", "v"); code != 2 {
		t.Errorf("kv put with --signer: exit %d, want 2", code)
	}
	if code, _, errOut := runCLI("lance", "delete", "kv0+signer://"+host+"/t.lance", "--where", "id < 3", "--token-file", tokenFile); code != 1 || !strings.Contains(errOut, "read-only") {
		t.Errorf("lance delete on a signed location: exit %d, %q", code, errOut)
	}
}
