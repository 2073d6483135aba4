// Package s3 runs kv0's stores and the Lance reader and writer against a
// real S3 server: versitygw (POSIX backend), started by TestMain on
// loopback. The Lance, key-value and tracking suites run again on Google
// Cloud Storage through fake-gcs-server (in process) and on Azure Blob
// Storage through Azurite (tests/azure), which TestMain starts too.
// versitygw is installed by `make s3-deps` (a step of make test of its own,
// before any test runs) into the cache folder TestMain looks in; with
// CI=true a missing versitygw is a failure. Outside CI, TestMain installs it
// with "go install" itself when it is missing, and without network the
// tests are skipped.
package s3

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/kv0/kv0/native/s3store"
)

// versitygwModule is the pinned server (see the toolchain notes).
const versitygwModule = "github.com/versity/versitygw/cmd/versitygw@v1.8.0"

const (
	bucket    = "kv0-test"
	accessKey = "kv0testaccess"
	secretKey = "kv0testsecret0123456789"
)

var (
	endpoint string // http://127.0.0.1:PORT, empty when no server runs
	skipWhy  string // why the tests skip
	prefixes atomic.Int64
)

func TestMain(m *testing.M) {
	// Child processes of the concurrent-append test talk to the parent's
	// server and need no server of their own.
	if ep := os.Getenv("KV0_S3_CHILD_ENDPOINT"); ep != "" {
		endpoint = ep
		os.Exit(m.Run())
	}
	stop, err := startServer()
	if err != nil {
		if os.Getenv("CI") == "true" {
			fmt.Fprintf(os.Stderr, "tests/s3: %v\n", err)
			os.Exit(1)
		}
		skipWhy = err.Error()
	}
	stopCloud, err := startCloudEmulators()
	if err != nil {
		fmt.Fprintf(os.Stderr, "tests/s3: %v\n", err)
		if stop != nil {
			stop()
		}
		os.Exit(1)
	}
	code := m.Run()
	stopCloud()
	if stop != nil {
		stop()
	}
	os.Exit(code)
}

// need skips t when no server could be started.
func need(t testing.TB) {
	t.Helper()
	if endpoint == "" {
		t.Skipf("no S3 server: %s", skipWhy)
	}
}

// versitygwBinary finds versitygw on PATH or in the cache folder make
// s3-deps installs it to (a GOBIN outside the module, reused across runs),
// or, outside CI, installs it there.
func versitygwBinary() (string, error) {
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	gobin := filepath.Join(cache, "kv0", "tools", "versitygw-v1.8.0")
	bin := filepath.Join(gobin, "versitygw")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if os.Getenv("CI") == "true" {
		return "", fmt.Errorf("versitygw is not installed in %s: make s3-deps installs it (make test does first)", gobin)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "install", versitygwModule)
	cmd.Dir = os.TempDir() // outside the module: never touches go.mod
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go install %s: %v\n%s", versitygwModule, err, out)
	}
	return bin, nil
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startServer starts versitygw on a free loopback port over a temporary
// folder, creates the test bucket and returns a function that stops it.
func startServer() (func(), error) {
	bin, err := versitygwBinary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kv0-versitygw-")
	if err != nil {
		return nil, err
	}
	var lastErr error
	for try := 0; try < 3; try++ {
		addr, err := freePort()
		if err != nil {
			return nil, err
		}
		logf, _ := os.Create(filepath.Join(dir, "versitygw.log"))
		data := filepath.Join(dir, "data")
		os.MkdirAll(data, 0o755)
		cmd := exec.Command(bin, "--port", addr, "posix", data)
		cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+accessKey, "ROOT_SECRET_KEY="+secretKey)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = serverProcAttr()
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("starting versitygw: %w", err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		stop := func() {
			cmd.Process.Kill()
			<-exited
			logf.Close()
			os.RemoveAll(dir)
		}
		endpoint = "http://" + addr
		if err := waitReady(addr, exited); err != nil {
			lastErr = err
			endpoint = ""
			cmd.Process.Kill()
			continue
		}
		if err := createBucket(); err != nil {
			stop()
			endpoint = ""
			return nil, fmt.Errorf("creating bucket: %w", err)
		}
		return stop, nil
	}
	return nil, fmt.Errorf("versitygw did not start: %w", lastErr)
}

func waitReady(addr string, exited chan error) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("versitygw exited: %v", err)
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("versitygw did not listen within 30 s")
}

func s3Options() s3store.Options {
	return s3store.Options{Endpoint: endpoint, Region: "us-east-1", AccessKey: accessKey, Secret: secretKey,
		PathStyle: true, AllowHTTP: true, Timeout: time.Minute}
}

func createBucket() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := s3store.NewClient(ctx, s3Options())
	if err != nil {
		return err
	}
	_, err = client.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(bucket)})
	return err
}

// newURI returns a fresh s3:// location in the test bucket.
func newURI(name string) string {
	name = strings.ReplaceAll(name, "/", "-")
	return fmt.Sprintf("s3://%s/%s-%d-%d", bucket, name, os.Getpid(), prefixes.Add(1))
}

func openStore(t testing.TB, uri string) *s3store.Store {
	t.Helper()
	s, err := s3store.Open(context.Background(), uri, s3Options())
	if err != nil {
		t.Fatal(err)
	}
	return s
}
