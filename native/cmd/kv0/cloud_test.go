package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/kv0/kv0/native/azblobstore"
	"github.com/kv0/kv0/tests/azure"
)

var commitTime = regexp.MustCompile(`\d{4}-\d\d-\d\dT[0-9:.]+Z`)

// What differs between two repositories written by the same commands:
// commit and creation times, data and deletion file names (random),
// series ids (hashes of the random run ids), and so the column widths of
// tables with times in them.
var (
	localTime    = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`)
	dataFile     = regexp.MustCompile(`data/[0-9a-f]{20,}\.lance`)
	deletionFile = regexp.MustCompile(`_deletions/\d+-\d+-\d+\.(arrow|bin)`)
	seriesID     = regexp.MustCompile(`"series_id":\d+`)
	spaces       = regexp.MustCompile(` {2,}`)
)

// normalize replaces what differs between two repositories written by the
// same commands (see above) with placeholders.
func normalize(out string) string {
	out = commitTime.ReplaceAllString(out, "TIME")
	out = localTime.ReplaceAllString(out, "TIME")
	out = dataFile.ReplaceAllString(out, "data/FILE.lance")
	out = deletionFile.ReplaceAllString(out, "_deletions/FILE")
	out = seriesID.ReplaceAllString(out, `"series_id":N`)
	return numberIDs(spaces.ReplaceAllString(out, " "))
}

// startFakeGCS runs fake-gcs-server in process with bucket, points
// STORAGE_EMULATOR_HOST at it for the test, and returns it.
func startFakeGCS(t *testing.T, bucket string) *fakestorage.Server {
	t.Helper()
	fake, err := fakestorage.NewServerWithOptions(fakestorage.Options{NoListener: true, PublicHost: "127.0.0.1", Writer: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	fake.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: bucket})
	hs := httptest.NewServer(fake.HTTPHandler())
	t.Cleanup(hs.Close)
	t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(hs.URL, "http://"))
	return fake
}

// startAzurite runs Azurite for the test with container created, and
// points AZURE_STORAGE_CONNECTION_STRING at it.
func startAzurite(t *testing.T, container string) *azure.Server {
	t.Helper()
	az := azure.StartT(t)
	c, err := azblobstore.NewContainerClient(container, azblobstore.Options{ConnectionString: az.ConnectionString})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", az.ConnectionString)
	return az
}

// TestCommandsOnGCS runs the CLI's writing and reading commands on gs://
// (fake-gcs-server in process, reached through STORAGE_EMULATOR_HOST) and
// on a local folder, and checks that every command prints the same on both.
func TestCommandsOnGCS(t *testing.T) {
	fake := startFakeGCS(t, "kv0-cli")
	t.Setenv("KV0_WAL_DIR", t.TempDir())
	commandsMatchLocal(t, "gs://kv0-cli/some/prefix/")
	// The datasets are in the bucket, under the prefix.
	objs, _, err := fake.ListObjectsWithOptions("kv0-cli", fakestorage.ListOptions{Prefix: "some/prefix/"})
	if err != nil || len(objs) < 10 {
		t.Fatalf("the bucket holds %d objects under the prefix (%v)", len(objs), err)
	}
}

// TestCommandsOnAzure is TestCommandsOnGCS on az:// through Azurite
// (tests/azure), reached through AZURE_STORAGE_CONNECTION_STRING.
func TestCommandsOnAzure(t *testing.T) {
	az := startAzurite(t, "kv0-cli")
	t.Setenv("KV0_WAL_DIR", t.TempDir())
	commandsMatchLocal(t, "az://kv0-cli/some/prefix/")
	// The datasets are in the container, under the prefix.
	c, err := azblobstore.NewContainerClient("kv0-cli", azblobstore.Options{ConnectionString: az.ConnectionString})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for pager := c.NewListBlobsFlatPager(nil); pager.More(); {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page.Segment.BlobItems {
			if !strings.HasPrefix(*b.Name, "some/prefix/") {
				t.Errorf("blob %s outside the prefix", *b.Name)
			}
			n++
		}
	}
	if n < 10 {
		t.Fatalf("the container holds %d blobs", n)
	}
}

// runIDs finds the run ids kv0 prints ("id": "..." in JSON, or the first
// column of `kv0 runs`).
var runIDs = regexp.MustCompile(`\b[0-9a-f]{32}\b`)

// commandsMatchLocal runs the CLI's writing and reading commands on remote
// (a location ending with "/") and on a fresh local folder, and checks
// that every command prints the same on both (and that reads print
// something), once the root and what normalize replaces are replaced by
// placeholders.
func commandsMatchLocal(t *testing.T, remote string) {
	t.Helper()
	roots := []string{remote, filepath.Join(t.TempDir(), "local") + "/"}
	const points = `{"name": "loss", "value": 2.5, "step": 0, "timestamp": 1767323045.5, "context": {"subset": "train"}}
{"name": "loss", "value": NaN, "step": 1, "timestamp": 1767323046}
{"name": "loss", "value": 1.25, "step": 2, "timestamp": "2026-01-02T03:04:07Z"}
{"params": {"optimizer": {"lr": 0.001}, "layers": 4}}
`
	const points2 = `{"name": "acc", "value": 0.5, "step": 0, "timestamp": 1767323045}
`
	type cmd struct {
		args  []string
		stdin string
		read  bool // must print something
	}
	cmds := []cmd{
		{args: []string{"lance", "write", "ROOT/t.lance", "--mode", "create", "--input", ipcFile(t, 0, 100)}},
		{args: []string{"lance", "write", "ROOT/t.lance", "--mode", "append", "--input", ipcFile(t, 100, 50)}},
		{args: []string{"lance", "delete", "ROOT/t.lance", "--where", "id < 10"}},
		{args: []string{"lance", "tag", "create", "ROOT/t.lance", "two", "--version", "2"}},
		{args: []string{"lance", "write", "ROOT/t.lance", "--mode", "append", "--input", ipcFile(t, 150, 7)}},
		{args: []string{"lance", "compact", "ROOT/t.lance"}},
		{args: []string{"lance", "restore", "ROOT/t.lance", "--version", "3"}},
		{args: []string{"lance", "cleanup", "ROOT/t.lance", "--older-than", "1000d"}},
		{args: []string{"lance", "tag", "list", "ROOT/t.lance"}, read: true},
		{args: []string{"lance", "info", "ROOT/t.lance"}, read: true},
		{args: []string{"lance", "info", "ROOT/t.lance", "--tag", "two", "--json"}, read: true},
		{args: []string{"lance", "cat", "ROOT/t.lance"}, read: true},
		{args: []string{"lance", "cat", "ROOT/t.lance", "--tag", "two", "--columns", "name", "--where", "id >= 140"}, read: true},
		{args: []string{"lance", "log", "ROOT/t.lance"}, read: true},
		{args: []string{"lance", "log", "ROOT/t.lance", "--json"}, read: true},
		{args: []string{"kv", "put", "ROOT/db.lance", "apple", "red"}},
		{args: []string{"kv", "put", "ROOT/db.lance", "banana", "yellow"}},
		{args: []string{"kv", "put", "ROOT/db.lance", "cherry", "dark red"}},
		{args: []string{"kv", "tag", "ROOT/db.lance", "three"}},
		{args: []string{"kv", "delete", "ROOT/db.lance", "banana"}},
		{args: []string{"kv", "compact", "ROOT/db.lance"}},
		{args: []string{"kv", "cleanup", "ROOT/db.lance"}},
		{args: []string{"kv", "get", "ROOT/db.lance", "cherry"}, read: true},
		{args: []string{"kv", "scan", "ROOT/db.lance"}, read: true},
		{args: []string{"kv", "scan", "ROOT/db.lance", "--reverse", "--keys-only"}, read: true},
		{args: []string{"kv", "versions", "ROOT/db.lance"}, read: true},
		{args: []string{"track", "ROOT/runs", "--run", "r1", "--experiment", "e"}, stdin: points},
		{args: []string{"track", "ROOT/runs", "--run", "r2", "--experiment", "e"}, stdin: points2},
		{args: []string{"optimize", "ROOT/runs"}},
		{args: []string{"runs", "ROOT/runs", "--experiment", "e"}, read: true},
		{args: []string{"run", "ROOT/runs", "r1"}, read: true},
		{args: []string{"params", "ROOT/runs", "r1"}, read: true},
		{args: []string{"series", "ROOT/runs", "r1"}, read: true},
		{args: []string{"metrics", "ROOT/runs", "r1", "loss", "--csv"}, read: true},
		{args: []string{"metrics", "ROOT/runs", "r1", "loss", "--json"}, read: true},
		{args: []string{"delete-runs", "ROOT/runs", "r2"}},
		{args: []string{"runs", "ROOT/runs", "--json"}, read: true},
	}
	outs := make([][]string, len(roots))
	for ri, root := range roots {
		for _, c := range cmds {
			a := make([]string, len(c.args))
			for i, s := range c.args {
				a[i] = strings.Replace(s, "ROOT/", root, 1)
			}
			old := stdin
			stdin = strings.NewReader(c.stdin)
			out := mustRun(t, a...)
			stdin = old
			outs[ri] = append(outs[ri], normalize(strings.ReplaceAll(out, root, "ROOT/")))
		}
	}
	for i, c := range cmds {
		remoteOut, localOut := outs[0][i], outs[1][i]
		if remoteOut != localOut || (c.read && strings.TrimSpace(remoteOut) == "") {
			t.Errorf("kv0 %s: %s printed\n%s\nthe local folder\n%s", strings.Join(c.args, " "), remote, remoteOut, localOut)
		}
	}
}

// numberIDs replaces each distinct run id in s by "ID1", "ID2", ... in
// order of first appearance.
func numberIDs(s string) string {
	seen := map[string]string{}
	return runIDs.ReplaceAllStringFunc(s, func(id string) string {
		if n, ok := seen[id]; ok {
			return n
		}
		seen[id] = "ID" + strconv.Itoa(len(seen)+1)
		return seen[id]
	})
}

// TestSignedReadsOnCloudStores runs `kv0 sign-server` on a gs://
// repository (fake-gcs-server; the signing key comes from a service
// account file named by GOOGLE_APPLICATION_CREDENTIALS, as Application
// Default Credentials find it) and on an az:// one (Azurite, whose SAS
// checks are real), and checks that reads through kv0+signer:// print
// what direct reads print.
func TestSignedReadsOnCloudStores(t *testing.T) {
	for _, scheme := range []string{"gs", "az"} {
		t.Run(scheme, func(t *testing.T) {
			t.Setenv("KV0_WAL_DIR", t.TempDir())
			if scheme == "gs" {
				startFakeGCS(t, "kv0-signed")
				key, err := rsa.GenerateKey(rand.Reader, 2048)
				if err != nil {
					t.Fatal(err)
				}
				sa, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": "kv0-test",
					"private_key_id": "1", "client_email": "kv0-signer@kv0-test.iam.gserviceaccount.com", "client_id": "1",
					"token_uri":   "https://oauth2.googleapis.com/token",
					"private_key": string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))})
				file := filepath.Join(t.TempDir(), "sa.json")
				if err := os.WriteFile(file, sa, 0o600); err != nil {
					t.Fatal(err)
				}
				t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", file)
			} else {
				startAzurite(t, "kv0-signed")
			}
			remote := scheme + "://kv0-signed/repo/"
			mustRun(t, "lance", "write", remote+"t.lance", "--mode", "create", "--input", ipcFile(t, 0, 100))
			mustRun(t, "lance", "write", remote+"t.lance", "--mode", "append", "--input", ipcFile(t, 100, 50))
			mustRun(t, "kv", "put", remote+"db.lance", "apple", "red")
			mustRun(t, "demo", remote+"runs", "--runs", "1", "--steps", "60")
			base, tokenFile := startSignServerFor(t, strings.TrimSuffix(remote, "/"))
			signed := "kv0+signer://" + strings.TrimPrefix(base, "http://") + "/"
			for _, args := range [][]string{
				{"lance", "cat", "LOC/t.lance", "--where", "id >= 95 AND id < 105"},
				{"lance", "log", "LOC/t.lance", "--json"},
				{"kv", "scan", "LOC/db.lance"},
				{"runs", "LOC/runs", "--json"},
				{"metrics", "LOC/runs", "resnet-cifar10-1", "loss", "--max-points", "5", "--csv"},
			} {
				at := func(loc string) []string {
					a := make([]string, len(args))
					for i, s := range args {
						a[i] = strings.Replace(s, "LOC/", loc, 1)
					}
					return a
				}
				direct := mustRun(t, at(remote)...)
				got := mustRun(t, append(at(signed), "--token-file", tokenFile)...)
				if strings.TrimSpace(direct) == "" || got != direct {
					t.Errorf("kv0 %s through the sign server:\n%s\ndirectly:\n%s", strings.Join(args, " "), got, direct)
				}
			}
		})
	}
}
