package main

import (
	"fmt"
	"io"
	"sync"
)

// warnTo returns a Warn callback (lance.ListOptions, lancelog.Options) that
// prints each warning to stderr as "kv0: warning: <message>". Core packages
// never print: they hand what they skipped to such a callback, and the CLI
// decides where it goes. Safe for concurrent use.
func warnTo(stderr io.Writer) func(error) {
	var mu sync.Mutex
	return func(err error) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stderr, "kv0: warning: %v\n", err)
	}
}
