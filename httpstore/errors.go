package httpstore

import (
	"errors"
	"fmt"
	"net/url"
)

// Errors of the HTTP store, in addition to the store sentinels. Match them
// with errors.Is; they are wrapped in an *Error that names the URL.
var (
	// ErrForbidden means the server answered 401 or 403: a presigned URL
	// that expired or whose signature does not match, or missing rights.
	ErrForbidden = errors.New("httpstore: access denied (URL expired, signature invalid or no permission)")
	// ErrNetwork means no HTTP answer arrived: connection refused or reset,
	// DNS, TLS, or in a browser a fetch TypeError, usually a CORS failure.
	ErrNetwork = errors.New("httpstore: network or CORS error")
	// ErrTruncated means a response body ended before its announced length.
	ErrTruncated = errors.New("httpstore: truncated response")
	// ErrServer means the server kept failing (5xx or 429) or answered
	// something that is not a valid reply to the request.
	ErrServer = errors.New("httpstore: server error")
)

// Error is a failed request. It never holds a URL's query string.
type Error struct {
	Op     string // "read", "stat", "list", "sign"
	URL    string // without query string
	Status int    // HTTP status, 0 when no answer arrived
	Msg    string // detail
	Err    error  // sentinel or cause, matched by errors.Is
}

func (e *Error) Error() string {
	s := fmt.Sprintf("httpstore %s %s", e.Op, e.URL)
	if e.Status != 0 {
		s += fmt.Sprintf(": HTTP %d", e.Status)
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the sentinel or cause.
func (e *Error) Unwrap() error { return e.Err }

// redact returns u without query string, fragment or user info.
func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	p.RawQuery, p.Fragment, p.User = "", "", nil
	return p.String()
}

// scrub replaces every occurrence of a URL's query string in err's message;
// net/http errors quote the full URL.
type scrubbed struct {
	msg   string
	cause error
}

func (s *scrubbed) Error() string { return s.msg }
func (s *scrubbed) Unwrap() error { return s.cause }
