package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/httpstore/api"
	"github.com/kv0/kv0/native/location"
)

const serveDetails = `ROOT is any location (a folder, s3://, gs://, az://, http(s)://): a tracking
repository, a folder of Lance datasets, or both. The server binds to loopback
unless --listen says otherwise (default 127.0.0.1:8080; port 0 picks a free
one), prints its URL, and stops on SIGINT or SIGTERM. --token-file requires "Authorization:
Bearer TOKEN" on every route but /healthz. Routes: /api/v1/... (docs/http-api.md),
/files/KEY (ROOT's objects, with Range), /wasm/ and / (the dashboard).`

// cmdServe runs `kv0 serve`: the HTTP read API over ROOT (httpstore/api),
// ROOT's objects at /files/, the dashboard at / and the WebAssembly module
// at /wasm/, until SIGINT or SIGTERM.
func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fset := trackingFlags("serve")
	listen := fset.String("listen", "127.0.0.1:8080", "listen on `ADDR` (host:port; port 0 picks a free one)")
	tokenFile := fset.String("token-file", "", "require the bearer token held in `FILE` on every route but /healthz")
	origin := fset.String("allow-origin", "*", "Access-Control-Allow-Origin of every answer (`ORIGIN`, or - for none)")
	open := fset.Bool("open", false, "open the dashboard in a browser")
	webDir := fset.String("web", "", "serve the dashboard from `DIR` (default: out/web of kv0's project)")
	wasmDir := fset.String("wasm", "", "serve the WebAssembly module from `DIR` (default: out/wasm of kv0's project)")
	pos, err := parseArgs(fset, args, stderr)
	if err != nil {
		return err
	}
	loc, err := onePath(pos)
	if err != nil {
		return err
	}
	cfg := serveConfig{loc: loc, listen: *listen, origin: *origin, open: *open, webDir: *webDir, wasmDir: *wasmDir}
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return usagef("--token-file: %v", err)
		}
		if cfg.token = strings.TrimSpace(string(b)); cfg.token == "" {
			return usagef("--token-file: %s is empty", *tokenFile)
		}
	}
	srv, err := startServe(ctx, cfg, stdout, stderr)
	if err != nil {
		return err
	}
	sig, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	select {
	case err := <-srv.served:
		srv.h.Close()
		return err
	case <-sig.Done():
	}
	return srv.stop()
}

// serveConfig is what kv0 serve serves and how.
type serveConfig struct {
	loc, listen, token, origin string
	open                       bool
	webDir, wasmDir            string // "" for the defaults of staticDir
}

// server is a running kv0 serve: startServe starts it, stop ends it.
type server struct {
	srv    *http.Server
	h      *api.Handler
	served chan error // the result of Serve, once it returns
	stderr io.Writer
}

// startServe opens cfg.loc, listens on cfg.listen, prints the URL and
// serves in the background until stop.
func startServe(ctx context.Context, cfg serveConfig, stdout, stderr io.Writer) (*server, error) {
	if cfg.origin == "" {
		return nil, usagef("--allow-origin: empty origin (give - to send no CORS header)")
	}
	// Requests name the keys it reads: a local ROOT never lets a symbolic
	// link inside it lead outside.
	lo := locationOptions
	lo.Confine = true
	st, root, err := location.Open(ctx, cfg.loc, lo)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("%s: no such folder", cfg.loc)
		}
		return nil, err
	}
	web, webAt, err := staticDir("web", cfg.webDir, "web")
	if err != nil {
		return nil, err
	}
	wasm, wasmAt, err := staticDir("wasm", cfg.wasmDir, "wasm")
	if err != nil {
		return nil, err
	}
	logger := log.New(stderr, "", log.LstdFlags)
	h := api.New(st, root, api.Options{AllowOrigin: cfg.origin, Token: cfg.token, Files: true, Web: web, Wasm: wasm,
		Logf: logger.Printf})
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("--listen %s: %w", cfg.listen, err)
	}
	url := "http://" + ln.Addr().String() + "/"
	if a, ok := ln.Addr().(*net.TCPAddr); ok && a.IP.IsUnspecified() {
		// Every interface: name the loopback one, which a browser opens.
		url = fmt.Sprintf("http://127.0.0.1:%d/", a.Port)
		fmt.Fprintf(stdout, "kv0 serve: listening on every interface (%s)\n", ln.Addr())
	}
	fmt.Fprintf(stdout, "kv0 serve: %s at %s\n", cfg.loc, url)
	for _, s := range []struct{ what, at string }{{"dashboard", webAt}, {"wasm module", wasmAt}} {
		if s.at == "" {
			fmt.Fprintf(stdout, "  %s: not built (answers 404)\n", s.what)
		} else {
			fmt.Fprintf(stdout, "  %s: %s\n", s.what, s.at)
		}
	}
	if f, ok := stdout.(interface{ Sync() error }); ok {
		_ = f.Sync()
	}
	s := &server{srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: logger}, h: h,
		served: make(chan error, 1), stderr: stderr}
	go func() { s.served <- s.srv.Serve(ln) }()
	if cfg.open {
		if err := openBrowser(url); err != nil {
			fmt.Fprintf(stderr, "kv0 serve: --open: %v\n", err)
		}
	}
	return s, nil
}

// stop finishes the answers under way for a moment, then cuts the rest
// (long streams included), so a stop takes well under a second.
func (s *server) stop() error {
	defer s.h.Close()
	shut, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := s.srv.Shutdown(shut); err != nil {
		_ = s.srv.Close()
	}
	if err := <-s.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Fprintln(s.stderr, "kv0 serve: stopped")
	return nil
}

// staticDir returns the folder a static route serves: flag when given
// (it must exist), else out/NAME of kv0's project, looked up next to the
// executable (bin/kv0 -> ../out/NAME) and then in the working folder. A
// missing default is no error: the route answers 404.
func staticDir(flagName, flag, name string) (fs.FS, string, error) {
	if flag != "" {
		st, err := os.Stat(flag)
		if err != nil || !st.IsDir() {
			return nil, "", usagef("--%s: %s is not a folder", flagName, flag)
		}
		return os.DirFS(flag), flag, nil
	}
	var candidates []string
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			candidates = append(candidates, filepath.Join(filepath.Dir(exe), "..", "out", name))
		}
	}
	candidates = append(candidates, filepath.Join("out", name))
	for _, c := range candidates {
		if st, err := os.Stat(c); err == nil && st.IsDir() {
			abs, err := filepath.Abs(c)
			if err != nil {
				abs = c
			}
			return os.DirFS(abs), abs, nil
		}
	}
	return nil, "", nil
}

// openBrowser opens url in the desktop's browser.
func openBrowser(url string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		cmd = exec.Command("xdg-open", url)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
