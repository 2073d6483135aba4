package httpstore

import (
	"context"
	"io"
	"strings"
)

// Transport sends the GET requests of a Store and of a ServerSigner. The
// default is net/http on native platforms and the JavaScript fetch function
// on js/wasm (where linking net/http would cost megabytes).
type Transport interface {
	// Get sends a GET of url with the given headers. An error means no
	// answer arrived (connection refused, DNS, TLS, or in a browser a fetch
	// TypeError such as a CORS failure); any HTTP status is an answer.
	Get(ctx context.Context, url string, header map[string][]string) (*Response, error)
}

// Response is the answer of a Transport. The caller closes Body.
type Response struct {
	// Status is the HTTP status code.
	Status int
	// Header holds the response headers under lower-case names.
	Header map[string]string
	// ContentLength is the length of the body, -1 when unknown.
	ContentLength int64
	// Body is the response body; a body cut short fails with an error
	// (io.ErrUnexpectedEOF or the transport's own), never a silent EOF.
	Body io.ReadCloser
}

// header returns the value of a response header, "" when absent.
func (r *Response) header(name string) string { return r.Header[strings.ToLower(name)] }

// HTTP status codes the store interprets (net/http is not linked on js).
const (
	statusOK                  = 200
	statusPartialContent      = 206
	statusBadRequest          = 400
	statusUnauthorized        = 401
	statusForbidden           = 403
	statusNotFound            = 404
	statusGone                = 410
	statusRangeNotSatisfiable = 416
	statusTooManyRequests     = 429
)
