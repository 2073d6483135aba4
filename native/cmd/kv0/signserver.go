package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/kv0/kv0/native/s3store"
	"github.com/kv0/kv0/native/signer"
)

// signServerDetails is the help text of kv0 sign-server.
const signServerDetails = `Hands out presigned, read-only URLs for keys under one repository prefix to
callers presenting "Authorization: Bearer <token>" (the first line of FILE):
S3 GetObject and ListObjectsV2, GCS V4 URLs (object GET, XML listing), Azure
SAS (Get Blob, List Blobs). URLs are signed as of the start of a window a
fifth of --expiry long, so a key keeps its URL through a window. S3
credentials come from the environment or the shared AWS config
(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_PROFILE, ...); AWS_ENDPOINT_URL,
AWS_REGION, KV0_S3_PATH_STYLE and KV0_S3_ALLOW_HTTP fill the flags that are
not given. gs:// signs with a service account key from Application Default
Credentials (or IAM signBlob); az:// with the account's shared key
(AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT and
AZURE_STORAGE_KEY). Readers open the repository as
kv0+signer://HOST:PORT (kv0 itself, httpstore.ServerSigner in Go, the wasm
reader in browsers).
`

// cmdSignServer runs "kv0 sign-server" until ctx is cancelled.
func cmdSignServer(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kv0 sign-server", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	bucketURI := fs.String("bucket-uri", "", "repository `location` s3://bucket/prefix, gs://bucket/prefix or az://container/prefix")
	listen := fs.String("listen", "127.0.0.1:8787", "`address` to listen on")
	tokenFile := fs.String("token-file", "", "`file` holding the bearer token")
	expiry := durationFlag(fs, "expiry", signer.DefaultExpiry, time.Second, signer.MaxExpiry, "lifetime of each presigned URL, 1s to 7d (`DURATION`: Go durations, plus d and w)")
	origin := fs.String("allow-origin", "*", "Access-Control-Allow-Origin answered to browsers")
	var o s3store.Options
	fs.StringVar(&o.Endpoint, "endpoint", "", "S3 endpoint `URL` (default: AWS or AWS_ENDPOINT_URL)")
	fs.StringVar(&o.Region, "region", "", "S3 `region`")
	fs.BoolVar(&o.PathStyle, "path-style", false, "address buckets path-style (endpoint/bucket)")
	fs.BoolVar(&o.AllowHTTP, "allow-http", false, "allow a plain-http endpoint")
	pos, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("sign-server takes no arguments, got %s", strings.Join(pos, " "))
	}
	if *bucketURI == "" || *tokenFile == "" {
		return usagef("sign-server needs --bucket-uri and --token-file")
	}
	raw, err := os.ReadFile(*tokenFile)
	if err != nil {
		return fmt.Errorf("sign-server: reading the token file: %w", err)
	}
	token, _, _ := strings.Cut(strings.TrimSpace(string(raw)), "\n")
	token = strings.TrimSpace(token)
	if len(token) < 16 {
		return fmt.Errorf("sign-server: the token in %s is shorter than 16 characters", *tokenFile)
	}
	g, err := signer.New(ctx, *bucketURI, signer.Options{Expiry: *expiry, S3: s3store.OptionsFromEnv(o)})
	if err != nil {
		return err
	}
	h, err := signer.Handler(g, signer.HandlerOptions{Token: token, AllowOrigin: *origin})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("sign-server: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	fmt.Fprintf(stdout, "kv0 sign-server: signing reads of %s for %v on http://%s\n", *bucketURI, *expiry, ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("sign-server: %w", err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		return nil
	}
}
