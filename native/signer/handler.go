package signer

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/kv0/kv0/httpstore"
)

// MaxBatch is the largest number of requests one batch call may sign.
const MaxBatch = 1000

// HandlerOptions configure Handler.
type HandlerOptions struct {
	// Token is the bearer token callers must present. It must not be empty.
	Token string
	// AllowOrigin is the Access-Control-Allow-Origin answered to browsers
	// (default "*": the token, not the origin, guards the service).
	AllowOrigin string
}

// BatchRequest is the body of POST /sign/batch.
type BatchRequest struct {
	Requests []SignRequest `json:"requests"`
}

// SignRequest is one request of a batch. Op is "get" (Key is the object)
// or "list" (Key is the prefix; StartAfter, ContinuationToken and MaxKeys
// page the listing).
type SignRequest struct {
	Op                string `json:"op"`
	Key               string `json:"key"`
	StartAfter        string `json:"start_after,omitempty"`
	ContinuationToken string `json:"continuation_token,omitempty"`
	MaxKeys           int    `json:"max_keys,omitempty"`
}

// BatchResponse is the answer of POST /sign/batch: one result per request,
// in order, each with a URL or an error.
type BatchResponse struct {
	Results []httpstore.SignResponse `json:"results"`
}

// Handler serves presigned URLs from g:
//
//	GET  /sign?op=get&key=K                     -> {"url": ..., "expires": ...}
//	GET  /sign?op=list&prefix=P[&start-after=S][&continuation-token=T][&max-keys=N]
//	POST /sign/batch  {"requests": [{"op": "get", "key": K}, ...]}
//	                                            -> {"results": [{"url", "expires"} | {"error"}]}
//	GET  /healthz                               -> ok (no token needed)
//
// Every /sign call needs "Authorization: Bearer TOKEN". Answers carry CORS
// headers and "Cache-Control: no-store"; preflights (OPTIONS) are answered
// without a token. The handler never logs or echoes tokens.
func Handler(g *Signer, opts HandlerOptions) (http.Handler, error) {
	if opts.Token == "" {
		return nil, errors.New("signer: empty bearer token")
	}
	if opts.AllowOrigin == "" {
		opts.AllowOrigin = "*"
	}
	h := &handler{g: g, token: []byte(opts.Token), origin: opts.AllowOrigin}
	return h, nil
}

type handler struct {
	g      *Signer
	token  []byte
	origin string
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", h.origin)
	w.Header().Set("Vary", "Origin")
	if r.Method == http.MethodOptions {
		w.Header().Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
		w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
		w.Header().Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if r.URL.Path == "/healthz" {
		w.Write([]byte("ok\n"))
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	switch {
	case r.URL.Path == "/sign" && r.Method == http.MethodGet:
	case r.URL.Path == "/sign/batch" && r.Method == http.MethodPost:
	case r.URL.Path == "/sign" || r.URL.Path == "/sign/batch":
		writeJSON(w, http.StatusMethodNotAllowed, httpstore.SignResponse{Error: "method not allowed"})
		return
	default:
		writeJSON(w, http.StatusNotFound, httpstore.SignResponse{Error: "not found"})
		return
	}
	if !h.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="kv0"`)
		writeJSON(w, http.StatusUnauthorized, httpstore.SignResponse{Error: "missing or wrong bearer token"})
		return
	}
	if r.URL.Path == "/sign/batch" {
		h.batch(w, r)
		return
	}
	q := r.URL.Query()
	req := SignRequest{Op: q.Get("op"), Key: q.Get("key"), StartAfter: q.Get("start-after"),
		ContinuationToken: q.Get("continuation-token")}
	if req.Op == "list" {
		req.Key = q.Get("prefix")
	}
	if v := q.Get("max-keys"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeJSON(w, http.StatusBadRequest, httpstore.SignResponse{Error: "bad max-keys"})
			return
		}
		req.MaxKeys = n
	}
	res, status := h.sign(r, req)
	writeJSON(w, status, res)
}

func (h *handler) authorized(r *http.Request) bool {
	tok, ok := httpstore.BearerToken(r.Header.Get("Authorization"))
	return ok && subtle.ConstantTimeCompare([]byte(tok), h.token) == 1
}

func (h *handler) sign(r *http.Request, req SignRequest) (httpstore.SignResponse, int) {
	var op httpstore.Op
	switch req.Op {
	case "get":
		op = httpstore.OpGet
	case "list":
		op = httpstore.OpList
	default:
		return httpstore.SignResponse{Error: `op must be "get" or "list"`}, http.StatusBadRequest
	}
	u, exp, err := h.g.SignExpiry(r.Context(), op, req.Key, httpstore.ListParams{
		StartAfter: req.StartAfter, ContinuationToken: req.ContinuationToken, MaxKeys: req.MaxKeys})
	if err != nil {
		if IsRefused(err) {
			return httpstore.SignResponse{Error: "key refused: outside the repository or not a clean key"}, http.StatusBadRequest
		}
		return httpstore.SignResponse{Error: "signing failed"}, http.StatusInternalServerError
	}
	return httpstore.SignResponse{URL: u, Expires: exp}, http.StatusOK
}

func (h *handler) batch(w http.ResponseWriter, r *http.Request) {
	var req BatchRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<20))
	if err := dec.Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, httpstore.SignResponse{Error: "bad JSON body"})
		return
	}
	if len(req.Requests) > MaxBatch {
		writeJSON(w, http.StatusBadRequest, httpstore.SignResponse{Error: "too many requests in one batch"})
		return
	}
	out := BatchResponse{Results: make([]httpstore.SignResponse, len(req.Requests))}
	for i, sr := range req.Requests {
		out.Results[i], _ = h.sign(r, sr)
	}
	writeJSON(w, http.StatusOK, out)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
