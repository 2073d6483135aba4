//go:build js && wasm

// Command edge is kv0's Cloudflare worker: the HTTP read API of `kv0
// serve` (httpstore/api, the same handler) over the root named by the
// worker's configuration, beside the dashboard's static files. One Go
// instance runs per isolate (edge/worker.mjs starts it on the first
// request and hands it every request after), so its caches of opened
// files and versions live across requests. docs/edge.md has the
// configuration and the deployment.
package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"syscall/js"
	"time"

	"github.com/syumai/workers/cloudflare"

	"github.com/kv0/kv0/core/expr"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/edge/glue"
	"github.com/kv0/kv0/edge/r2store"
	"github.com/kv0/kv0/httpstore"
	"github.com/kv0/kv0/httpstore/api"
	"github.com/kv0/kv0/wasm/jszone"
)

// Per-isolate cache bounds, inside the isolate's 128 MB: an opened data
// file keeps its footer and column metadata, a version its manifest.
const (
	maxOpenFiles = 256
	maxVersions  = 64
	maxAnswer    = 2 << 20  // the largest answer kept (answers.go)
	maxAnswers   = 24 << 20 // all kept answers
	// The memory the answers under way may hold (api.Options): one
	// request, and all of the isolate's at once.
	requestMemory = 32 << 20
	serverMemory  = 48 << 20
)

func main() {
	// Filters on timestamp columns of a named zone take its offsets from
	// JavaScript's Intl (the worker carries no zoneinfo).
	expr.ZoneOffset = jszone.Offset
	cfg := config{
		Origin: cloudflare.Getenv("KV0_ORIGIN"),
		Prefix: cloudflare.Getenv("KV0_PREFIX"),
		Token:  cloudflare.Getenv("KV0_TOKEN"),
		Bucket: cloudflare.GetBinding("KV0_BUCKET").Truthy(),
	}
	h, err := newHandler(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kv0 edge:", err)
		h = misconfigured(err.Error())
	}
	glue.Serve(js.Global().Get("context").Get("binding"), h)
	select {} // the instance lives as long as the isolate
}

func newHandler(cfg config) (http.Handler, error) {
	src, err := cfg.source()
	if err != nil {
		return nil, err
	}
	var st store.Store
	switch src {
	case fromOrigin:
		st, err = httpstore.OpenStatic(cfg.Origin, httpstore.Options{Transport: glue.Transport{}, MaxConcurrency: glue.MaxConnections})
		if err != nil {
			return nil, err
		}
	case fromBucket:
		// The store is rooted at the prefix, so keys (and the messages
		// naming them) read as they do under kv0 serve ROOT.
		st, err = r2store.New(r2store.Binding{}, cfg.root())
		if err != nil {
			return nil, err
		}
	}
	// Answers about the latest versions are kept per isolate and
	// revalidated against the handler (answers.go).
	return newAnswerCache(api.New(st, "", api.Options{
		Token:         cfg.Token,
		Files:         true,
		MaxOpenFiles:  maxOpenFiles,
		MaxVersions:   maxVersions,
		VersionTTL:    time.Second, // the answers' max-age: see api.Options.VersionTTL
		AnswerCache:   -1,          // answers are kept by answers.go, once
		RequestMemory: requestMemory,
		ServerMemory:  serverMemory,
		Logf:          func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) },
	}), maxAnswer, maxAnswers), nil
}

// misconfigured answers every route with the API's error body naming what
// is missing.
func misconfigured(msg string) http.Handler {
	m, _ := json.Marshal(msg)
	body := []byte(`{"error":{"code":"StoreFailed","message":` + string(m) + "}}\n")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write(body)
	})
}
