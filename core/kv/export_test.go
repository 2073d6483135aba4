package kv

// Tests merge the view's delta into its base run after a few entries, so
// every read and walk goes through both layers.
func init() { mergeMinEntries = 8 }
