package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/kv0/kv0/core/store"
)

// config is the worker's configuration, from its vars, secret and
// bindings (docs/edge.md).
type config struct {
	Origin string // KV0_ORIGIN: the root as an http(s) URL
	Bucket bool   // an R2 binding named KV0_BUCKET exists
	Prefix string // KV0_PREFIX: the root's key prefix in the bucket
	Token  string // KV0_TOKEN: the bearer token of every /api/ route
}

// where the worker reads.
type source int

const (
	fromNone source = iota
	fromOrigin
	fromBucket
)

// source decides where the worker reads, and checks the values: KV0_ORIGIN
// wins over the bucket when both are set.
func (c config) source() (source, error) {
	if o := strings.TrimSpace(c.Origin); o != "" {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fromNone, fmt.Errorf("KV0_ORIGIN %q is not an http(s) URL", o)
		}
		return fromOrigin, nil
	}
	if c.Bucket {
		if err := store.ValidatePrefix(c.root()); err != nil {
			return fromNone, fmt.Errorf("KV0_PREFIX %q: %v", c.Prefix, err)
		}
		return fromBucket, nil
	}
	return fromNone, fmt.Errorf("the worker has nowhere to read: set the KV0_ORIGIN var or bind an R2 bucket as KV0_BUCKET")
}

// root is the store key of the root in the bucket (KV0_PREFIX without its
// surrounding slashes).
func (c config) root() string { return strings.Trim(strings.TrimSpace(c.Prefix), "/") }
