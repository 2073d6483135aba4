// Package azure starts Azurite, the Azure Storage emulator (npm azurite,
// pinned in this folder's package-lock.json and installed by `make test`
// with npm ci), for the tests of kv0's Azure Blob Storage store.
//
// Start runs its blob service in memory on a free loopback port and
// returns the connection string of its well-known development account.
// When node or the npm package is missing, Start fails with ErrMissing;
// tests skip on it, except under CI=true, where Require fails them.
package azure

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Azurite's development account, the same in every installation.
const (
	Account = "devstoreaccount1"
	Key     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// ErrMissing means node or the azurite package is not installed.
var ErrMissing = errors.New("azurite is not installed (run `make test`, or `npm ci` in tests/azure)")

// Server is a running Azurite blob service.
type Server struct {
	// BlobEndpoint is the account's blob endpoint,
	// "http://127.0.0.1:PORT/devstoreaccount1".
	BlobEndpoint string
	// ConnectionString names the endpoint and the development account.
	ConnectionString string

	cmd    *exec.Cmd
	exited chan error
}

// Dir returns this folder (where package.json and node_modules are).
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

var listening = regexp.MustCompile(`successfully listens on (http://127\.0\.0\.1:\d+)`)

// Start starts the blob service and waits until it listens.
func Start() (*Server, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("%w: no node on PATH", ErrMissing)
	}
	main := filepath.Join(Dir(), "node_modules", "azurite", "dist", "src", "blob", "main.js")
	if _, err := os.Stat(main); err != nil {
		return nil, fmt.Errorf("%w: %s is missing", ErrMissing, main)
	}
	work, err := os.MkdirTemp("", "kv0-azurite-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(node, main, "--blobHost", "127.0.0.1", "--blobPort", "0", "--inMemoryPersistence",
		"--skipApiVersionCheck", "--disableTelemetry", "--silent")
	cmd.Dir = work
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting azurite: %w", err)
	}
	s := &Server{cmd: cmd, exited: make(chan error, 1)}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
				break
			}
		}
		io.Copy(io.Discard, out)
		s.exited <- cmd.Wait()
		os.RemoveAll(work)
	}()
	select {
	case base := <-found:
		s.BlobEndpoint = base + "/" + Account
		s.ConnectionString = fmt.Sprintf("DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;BlobEndpoint=%s;", Account, Key, s.BlobEndpoint)
		return s, nil
	case err := <-s.exited:
		return nil, fmt.Errorf("azurite exited before listening: %v", err)
	case <-time.After(60 * time.Second):
		s.Stop()
		return nil, errors.New("azurite did not listen within 60 s")
	}
}

// Stop ends the service and waits for it.
func (s *Server) Stop() {
	if s == nil || s.cmd.Process == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.exited
}

// Require starts a server for the tests of m's package, or explains why
// it cannot: with CI=true a missing emulator is fatal (the process exits
// with status 1), otherwise the returned reason makes the tests skip.
// The caller stops the server after m.Run.
func Require() (*Server, string) {
	s, err := Start()
	if err == nil {
		return s, ""
	}
	if os.Getenv("CI") == "true" {
		fmt.Fprintf(os.Stderr, "azure tests: %v (CI=true: a missing emulator is a failure)\n", err)
		os.Exit(1)
	}
	return nil, err.Error()
}

// Skip skips t when no server runs (why is Require's reason).
func Skip(t testing.TB, s *Server, why string) {
	t.Helper()
	if s == nil {
		t.Skipf("no Azurite: %s", strings.TrimSpace(why))
	}
}

// StartT starts a server for one test and stops it when the test ends.
// A missing emulator skips the test, except under CI=true, where it fails
// it; any other failure to start fails it.
func StartT(t testing.TB) *Server {
	t.Helper()
	s, err := Start()
	if err != nil {
		if errors.Is(err, ErrMissing) && os.Getenv("CI") != "true" {
			t.Skipf("no Azurite: %v", err)
		}
		t.Fatalf("azure: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}
