//go:build !kv0_readonly

package tracking

// writable is false in builds tagged kv0_readonly (the wasm reader), where
// OpenRepo refuses writable handles so that the linker drops the write
// path (buffers, flushes, compaction, the Lance and file writers).
const writable = true
