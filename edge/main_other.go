//go:build !(js && wasm)

// Command edge is kv0's Cloudflare worker; it runs only as
// GOOS=js GOARCH=wasm (make edge). Elsewhere it says so and exits.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "kv0 edge: the worker builds for GOOS=js GOARCH=wasm only: run `make edge` (docs/edge.md)")
	os.Exit(2)
}
