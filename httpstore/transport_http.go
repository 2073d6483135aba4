//go:build !js

package httpstore

import (
	"context"
	"net/http"
	"strings"
)

// NetHTTP returns a Transport that sends requests with c (a client without
// timeout of its own when nil; the Store bounds each attempt).
func NetHTTP(c *http.Client) Transport {
	if c == nil {
		c = &http.Client{}
	}
	return netHTTP{c}
}

type netHTTP struct{ c *http.Client }

func (t netHTTP) Get(ctx context.Context, url string, header map[string][]string) (*Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[http.CanonicalHeaderKey(k)] = v
	}
	resp, err := t.c.Do(req)
	if err != nil {
		return nil, err
	}
	h := make(map[string]string, len(resp.Header))
	for k, v := range resp.Header {
		if len(v) > 0 {
			h[strings.ToLower(k)] = v[0]
		}
	}
	return &Response{Status: resp.StatusCode, Header: h, ContentLength: resp.ContentLength, Body: resp.Body}, nil
}

func defaultTransport() Transport { return NetHTTP(nil) }
