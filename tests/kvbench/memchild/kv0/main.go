// Command kv0 is the key-value benchmark's memory child for kv0: a process
// holding kv0 alone (see package workload).
package main

import (
	"github.com/kv0/kv0/tests/kvbench/kv0engine"
	"github.com/kv0/kv0/tests/kvbench/workload"
)

func main() { workload.ChildMain(kv0engine.Open) }
