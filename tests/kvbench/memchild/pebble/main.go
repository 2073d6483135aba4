// Command pebble is the key-value benchmark's memory child for Pebble: a
// process holding Pebble alone (see package workload).
package main

import (
	"github.com/kv0/kv0/tests/kvbench/pebbleengine"
	"github.com/kv0/kv0/tests/kvbench/workload"
)

func main() { workload.ChildMain(pebbleengine.Open) }
