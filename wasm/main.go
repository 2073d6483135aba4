//go:build js && wasm

// Command wasm is kv0's reader for browsers and Node: a GOOS=js GOARCH=wasm
// program that hands kv0.mjs the functions it wraps (see README.md). Every
// answer comes from the code the CLI prints through (core/inspect,
// core/jsonl, core/tracking), over httpstore with the JavaScript fetch.
//
// Start-up protocol: kv0.mjs stores a callback under a global name it
// chooses and passes that name as the program's only argument; main
// replaces the global with nothing and calls the callback with an object of
// functions, each returning a Promise.
package main

import (
	"os"
	"runtime/debug"
	"syscall/js"
)

// gcPercent is the collector's target unless the environment sets GOGC:
// on js/wasm the collector runs on the page's (or worker's) only thread,
// and a read of 100k points allocates ~15 MB, so the default 100 collects
// once per read; 200 cut a warm series read's time by 18 % in one
// Chromium run, not confirmed in noisier ones (docs/benchmarks.md), for a
// heap up to 3× the live data.
const gcPercent = 200

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	name := "__kv0_ready"
	if len(os.Args) > 1 {
		name = os.Args[1]
	}
	api := js.Global().Get("Object").New()
	for fname, fn := range map[string]func(args []js.Value) js.Value{
		"cat":       lanceCat,
		"info":      lanceInfo,
		"log":       lanceLog,
		"scan":      lanceScan,
		"openRepo":  openRepo,
		"repoCall":  repoCall,
		"repoRead":  repoRead,
		"repoPoll":  repoPoll,
		"repoClose": repoClose,
	} {
		api.Set(fname, js.FuncOf(func(this js.Value, args []js.Value) any { return fn(args) }))
	}
	ready := js.Global().Get(name)
	js.Global().Delete(name)
	setGlue(ready)
	if ready.Type() == js.TypeFunction {
		ready.Invoke(api)
	}
	select {} // serve calls for the life of the page
}
