package api

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/kv0/kv0/core/inspect"
	"github.com/kv0/kv0/core/jsonl"
	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/lancefile"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/tracking"
	"github.com/kv0/kv0/httpstore"
)

// Error codes of the API's error bodies, with their statuses.
const (
	CodeInvalid             = "Invalid"             // 400: a bad argument, named in the message
	CodeUnauthorized        = "Unauthorized"        // 401: the bearer token is missing or wrong
	CodeForbidden           = "Forbidden"           // 403: the store refused access
	CodeNotFound            = "NotFound"            // 404: no such dataset, version, tag, run, series or route
	CodeMethodNotAllowed    = "MethodNotAllowed"    // 405: not GET, HEAD or OPTIONS
	CodeTooLarge            = "TooLarge"            // 413: the answer needs more memory than one request may hold
	CodeRangeNotSatisfiable = "RangeNotSatisfiable" // 416: a Range past the object's end
	CodeCorrupt             = "Corrupt"             // 422: corrupt data, naming the file
	CodeInternal            = "Internal"            // 500: a bug (a recovered panic)
	CodeUnsupported         = "Unsupported"         // 501: a format, encoding or type kv0 does not read
	CodeStoreFailed         = "StoreFailed"         // 502: the store failed to answer
	CodeUnavailable         = "Unavailable"         // 503: the data was rewritten under the read twice; retry (Retry-After)
	CodeBusy                = "Busy"                // 503: the server's memory is taken by other answers (Retry-After)
)

// ErrorBody is the JSON of every error answer.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// apiError is an error with its status and code decided.
type apiError struct {
	status     int
	code       string
	msg        string
	retryAfter int // seconds, for Retry-After (0: none)
}

func (e *apiError) Error() string { return e.msg }

func argErr(arg, format string, args ...any) error {
	return &apiError{status: http.StatusBadRequest, code: CodeInvalid, msg: arg + ": " + fmt.Sprintf(format, clipped(args)...)}
}

func notFound(format string, args ...any) error {
	return &apiError{status: http.StatusNotFound, code: CodeNotFound, msg: fmt.Sprintf(format, clipped(args)...)}
}

// maxEcho is how many bytes of a string from the request (a path, a
// value) an error message repeats.
const maxEcho = 200

// clipped cuts each string of args longer than maxEcho there (at a rune
// boundary) and marks it with its full length, so a long URL is not echoed
// whole in its error. It changes args in place (the variadic arguments of
// argErr and notFound).
func clipped(args []any) []any {
	for i, a := range args {
		if s, ok := a.(string); ok && len(s) > maxEcho {
			cut := maxEcho
			for cut > 0 && !utf8.RuneStart(s[cut]) {
				cut--
			}
			args[i] = fmt.Sprintf("%s… (%d bytes)", s[:cut], len(s))
		}
	}
	return args
}

// classify decides the status and code of an error.
func classify(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	e := &apiError{msg: err.Error()}
	var arg *inspect.ArgError
	var ut *jsonl.UnsupportedTypeError
	var coded interface{ ErrorCode() string }
	switch {
	case errors.As(err, &arg):
		e.status, e.code, e.msg = http.StatusBadRequest, CodeInvalid, arg.Error()
		if arg.Caret != "" {
			e.msg += "\n" + arg.Caret
		}
	case errors.Is(err, inspect.ErrInvalid), errors.Is(err, tracking.ErrInvalid), errors.Is(err, store.ErrInvalidKey):
		e.status, e.code = http.StatusBadRequest, CodeInvalid
	case errors.Is(err, lance.ErrNotFound), errors.Is(err, tracking.ErrNotFound), errors.Is(err, store.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		e.status, e.code = http.StatusNotFound, CodeNotFound
	case errors.Is(err, httpstore.ErrForbidden), errors.Is(err, fs.ErrPermission),
		errors.As(err, &coded) && (coded.ErrorCode() == "AccessDenied" || coded.ErrorCode() == "Forbidden"):
		e.status, e.code = http.StatusForbidden, CodeForbidden
	case errors.Is(err, lance.ErrCorrupt), errors.Is(err, lancefile.ErrCorrupt), errors.Is(err, tracking.ErrCorrupt),
		errors.Is(err, store.ErrShortObject):
		e.status, e.code = http.StatusUnprocessableEntity, CodeCorrupt
	case errors.Is(err, lancefile.ErrUnsupportedVersion), errors.Is(err, lancefile.ErrUnsupportedEncoding),
		errors.Is(err, lancefile.ErrUnsupportedType), errors.Is(err, lance.ErrUnsupportedFeature), errors.As(err, &ut):
		e.status, e.code = http.StatusNotImplemented, CodeUnsupported
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// The client went away or the deadline passed: nobody reads this.
		e.status, e.code = http.StatusServiceUnavailable, CodeStoreFailed
	default:
		e.status, e.code = http.StatusBadGateway, CodeStoreFailed
	}
	return e
}

// writeError answers err as an error body.
func writeError(w http.ResponseWriter, err error) {
	e := classify(err)
	var body ErrorBody
	body.Error.Code, body.Error.Message = e.code, e.msg
	b, _ := encodeJSON(body, false)
	h := w.Header()
	for _, k := range []string{"ETag", "Cache-Control", "Accept-Ranges", "Last-Modified", "Content-Encoding"} {
		h.Del(k)
	}
	if e.status != http.StatusRequestedRangeNotSatisfiable {
		h.Del("Content-Range")
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if e.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.retryAfter))
	}
	w.WriteHeader(e.status)
	_, _ = w.Write(b)
}
