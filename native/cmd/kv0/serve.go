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
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/httpstore/api"
	"github.com/kv0/kv0/native/fsstore"
	"github.com/kv0/kv0/native/location"
	"github.com/kv0/kv0/web/assets"
)

// serveProfile, when set (serve_profile.go, -tags kv0_profile), starts
// profiling the server and returns what stops it and writes the profiles.
var serveProfile func() (stop func() error, err error)

const serveDetails = `ROOT is any location (a folder, s3://, gs://, az://, http(s)://): a tracking
repository, a folder of Lance datasets, or both. The server binds to loopback
unless --listen says otherwise (default 127.0.0.1:8080; port 0 picks a free
one), prints its URL, and stops on SIGINT or SIGTERM. --token-file requires
"Authorization: Bearer TOKEN" on every route but /healthz. --answer-cache
bounds the memory of the answers kept for repeated requests on unchanged
tables. --request-memory bounds what one answer holds while it is made (a
larger one is streamed in parts when its form allows, else refused with 413)
and --server-memory what all of them hold at once (a request finding no room
waits a moment, then gets 503 with Retry-After); the Go runtime's soft memory
limit is twice the latter unless GOMEMLIMIT is set. --write-timeout cuts off
a client that takes longer than that to accept 64 KiB of an answer (a long
answer read steadily is never cut). Routes: /api/v1/...
(docs/http-api.md), /files/KEY (ROOT's objects, with Range), /wasm/ and /
(the dashboard). The dashboard and the wasm module are the ones built into
kv0; --web and --wasm serve folders instead (a build's out/web and out/wasm),
read as ROOT is: a symbolic link leading out of the folder, a FIFO, socket or
device is not served.`

// cmdServe runs `kv0 serve`: the HTTP read API over ROOT (httpstore/api),
// ROOT's objects at /files/, the dashboard at / and the WebAssembly module
// at /wasm/, until SIGINT or SIGTERM.
func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fset := trackingFlags("serve")
	listen := fset.String("listen", "127.0.0.1:8080", "listen on `ADDR` (host:port; port 0 picks a free one)")
	tokenFile := fset.String("token-file", "", "require the bearer token held in `FILE` on every route but /healthz")
	origin := fset.String("allow-origin", "*", "Access-Control-Allow-Origin of every answer (`ORIGIN`, or - for none)")
	open := fset.Bool("open", false, "open the dashboard in a browser")
	webDir := fset.String("web", "", "serve the dashboard from `DIR` (default: the one built into kv0)")
	wasmDir := fset.String("wasm", "", "serve the WebAssembly module from `DIR` (default: the one built into kv0)")
	answerMB := fset.Int("answer-cache", api.DefaultAnswerCache>>20, "keep up to `MB` of encoded answers of points and stats, by the tables' versions (0: none)")
	requestMB := fset.Int("request-memory", api.DefaultRequestMemory>>20, "one answer holds at most `MB` while it is made: larger ones are streamed in parts or refused with 413 (0: no bound)")
	serverMB := fset.Int("server-memory", api.DefaultServerMemory>>20, "all answers hold at most `MB` at once: past it a request waits, then gets 503 (0: no bound)")
	writeTimeout := fset.Duration("write-timeout", defaultWriteTimeout, "cut off a client that takes longer than `DURATION` to accept 64 KiB of an answer (0: never)")
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
	if *answerMB < 0 {
		return usagef("--answer-cache: %d MB is negative (give 0 to keep no answers)", *answerMB)
	}
	if cfg.answerCache = int64(*answerMB) << 20; cfg.answerCache == 0 {
		cfg.answerCache = -1 // none
	}
	for _, m := range []struct {
		name string
		mb   int
		dst  *int64
	}{{"request-memory", *requestMB, &cfg.requestMemory}, {"server-memory", *serverMB, &cfg.serverMemory}} {
		if m.mb < 0 {
			return usagef("--%s: %d MB is negative (give 0 for no bound)", m.name, m.mb)
		}
		if *m.dst = int64(m.mb) << 20; *m.dst == 0 {
			*m.dst = -1 // no bound
		}
	}
	if *writeTimeout < 0 {
		return usagef("--write-timeout: %v is negative (give 0 for none)", *writeTimeout)
	}
	if cfg.writeTimeout = *writeTimeout; cfg.writeTimeout == 0 {
		cfg.writeTimeout = -1 // none
	}
	if serveProfile != nil {
		stopProfile, err := serveProfile()
		if err != nil {
			return err
		}
		defer func() {
			if err := stopProfile(); err != nil {
				fmt.Fprintf(stderr, "kv0 serve: %v\n", err)
			}
		}()
	}
	if gogc, ok := serveGCPercent(os.Getenv); ok {
		debug.SetGCPercent(gogc)
	}
	if limit, ok := serveMemoryLimit(os.Getenv, cfg.serverMemory); ok {
		debug.SetMemoryLimit(limit)
	}
	// The signals are caught before the server starts: a SIGTERM sent as
	// soon as the URL is printed still stops it gracefully.
	sig, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := startServe(ctx, cfg, stdout, stderr)
	if err != nil {
		return err
	}
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
	webDir, wasmDir            string // "" for the embedded ones (staticDir)
	answerCache                int64  // api.Options.AnswerCache: 0 the default, -1 none
	// api.Options.RequestMemory and ServerMemory: 0 the defaults, -1 no
	// bound.
	requestMemory, serverMemory int64
	writeTimeout                time.Duration // holdConn's, per piece: 0 the default, -1 none
}

// defaultWriteTimeout is the default of --write-timeout.
const defaultWriteTimeout = 30 * time.Second

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
		Logf: logger.Printf, AnswerCache: cfg.answerCache, RequestMemory: cfg.requestMemory, ServerMemory: cfg.serverMemory})
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
		fmt.Fprintf(stdout, "  %s: %s\n", s.what, s.at)
	}
	if f, ok := stdout.(interface{ Sync() error }); ok {
		_ = f.Sync()
	}
	s := &server{srv: newHTTPServer(h, logger), h: h, served: make(chan error, 1), stderr: stderr}
	wt := cfg.writeTimeout
	if wt == 0 {
		wt = defaultWriteTimeout
	}
	go func() { s.served <- s.srv.Serve(holdListener{Listener: ln, writeTimeout: max(wt, 0)}) }()
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

// staticDir returns what a static route serves: the folder flag names
// when given (it must exist), else the copy of the dashboard (name "web")
// or the wasm module ("wasm") embedded in the binary (web/assets). A
// folder is read as ROOT is (fsstore.OpenConfined): a symbolic link inside
// it that leads outside, and any file that is not regular (a FIFO, a
// socket, a device), read as not there. at says what is served, for the
// start-up lines.
func staticDir(flagName, flag, name string) (fsys fs.FS, at string, err error) {
	if flag != "" {
		st, err := os.Stat(flag)
		if err != nil || !st.IsDir() {
			return nil, "", usagef("--%s: %s is not a folder", flagName, flag)
		}
		fsys, err := confinedFS(flag)
		if err != nil {
			return nil, "", fmt.Errorf("--%s: %w", flagName, err)
		}
		return fsys, flag, nil
	}
	at = "embedded in kv0 (built with " + assets.BuiltWith() + "; --" + flagName + " DIR serves another)"
	if name == "web" {
		return assets.Web(), at, nil
	}
	return assets.Wasm(), at, nil
}

// confinedFS is the folder dir read confined, as kv0 serve reads ROOT.
func confinedFS(dir string) (fs.FS, error) {
	st, err := fsstore.OpenConfined(dir)
	if err != nil {
		return nil, err
	}
	return st.FS(), nil
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

// serveGCPercent is the GOGC of kv0 serve when the environment sets none:
// 300. A warm series read allocates about 15 MB (the decoded 100k points)
// while the server's live heap is about 12 MB, so at Go's default of 100
// the server collected 1.5 times a request and spent half of each in the
// collector's mark phase, which on two cores takes a quarter of the CPU
// from the read and its assists more: that was most of what the server
// added to a read it did again (docs/benchmarks.md). At 300 the heap may
// grow to four times the live one between collections: streaming a 1M or
// 2M-row table peaked at 175–202 MB instead of 83–91 MB (still flat in the
// rows). GOGC=100 in the environment restores the default.
func serveGCPercent(getenv func(string) string) (int, bool) {
	if getenv("GOGC") != "" {
		return 0, false // the user's choice stands
	}
	return 300, true
}

// serveMemoryLimit is the Go runtime's soft memory limit of kv0 serve when
// the environment sets none: twice the memory the answers may hold
// (--server-memory). The server runs with GOGC=300 (serveGCPercent), which
// lets the heap grow to four times what is live between collections: a
// burst of answers holding their whole budget would then take four times
// it. Under the limit the collector runs as the heap nears it instead. No
// bound on the answers (serverMemory negative), no limit.
func serveMemoryLimit(getenv func(string) string, serverMemory int64) (int64, bool) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, false // the user's choice stands
	}
	if serverMemory == 0 {
		serverMemory = api.DefaultServerMemory
	}
	if serverMemory < 0 {
		return 0, false
	}
	return 2 * serverMemory, true
}

// newHTTPServer is the server of kv0 serve, for a holdListener: each
// connection's requests carry it as their api.WriteHolder. Headers must
// come within 10 s and an idle connection is closed after 2 min; there is
// no deadline on a whole answer (a long stream read steadily is fine), but
// the holdListener's connections cut off a client that stops reading.
func newHTTPServer(h http.Handler, logger *log.Logger) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: logger,
		ConnContext: holdContext}
}

func holdContext(ctx context.Context, c net.Conn) context.Context {
	if hc, ok := c.(*holdConn); ok {
		return api.WithWriteHolder(ctx, hc)
	}
	return ctx
}

// holdListener accepts holdConns.
type holdListener struct {
	net.Listener
	writeTimeout time.Duration // of each holdConn
}

func (l holdListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &holdConn{Conn: c, timeout: l.writeTimeout}, nil
}

// holdConn is a connection whose writes the API may hold and release at
// once (api.WriteHolder): an answer then leaves in one write instead of
// net/http's two (its 4 KiB buffer, then the rest). net/http writes to a
// connection from the goroutine serving it, which is the one holding.
//
// Its writes also carry the server's write timeout, renewed on progress:
// a write to the connection gets timeout to finish and, when the client
// took at least writePiece bytes of it meanwhile, another timeout for the
// rest, and so on. A client that stops reading (or takes less than
// writePiece bytes per timeout) is cut off and its answer's handler ends,
// while a long answer read steadily is never cut, and an answer still
// leaves in one write to the socket; http.Server's WriteTimeout, a
// deadline on the whole answer, would cut long streams.
type holdConn struct {
	net.Conn
	timeout time.Duration // 0: none
	held    bool
	buf     []byte
}

// writePiece is the least a client must take of a write per timeout.
const writePiece = 64 << 10

func (c *holdConn) Write(p []byte) (int, error) {
	if c.held {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	return c.write(p)
}

// write writes p to the connection under the write timeout.
func (c *holdConn) write(p []byte) (int, error) {
	if c.timeout <= 0 {
		return c.Conn.Write(p)
	}
	n := 0
	for {
		if err := c.Conn.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
			return n, err
		}
		m, err := c.Conn.Write(p[n:])
		n += m
		if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) || m < writePiece {
			return n, err
		}
		// The client took a piece within the timeout: it reads, slowly.
	}
}

// Hold keeps the writes from now on.
func (c *holdConn) Hold() { c.held = true }

// Release writes what was kept in one write.
func (c *holdConn) Release() error {
	c.held = false
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.write(c.buf)
	if cap(c.buf) > 1<<20 {
		c.buf = nil // an idle connection keeps no large buffer
	} else {
		c.buf = c.buf[:0]
	}
	return err
}

// CloseWrite half-closes a TCP connection, as net/http does before
// closing one.
func (c *holdConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
