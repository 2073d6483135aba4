//go:build js && wasm

package main

import (
	"github.com/kv0/kv0/core/expr"
	"github.com/kv0/kv0/wasm/jszone"
)

// Filters on timestamp columns of a named zone take its offsets from
// JavaScript's Intl (the module carries no zoneinfo).
func init() { expr.ZoneOffset = jszone.Offset }
