package signer

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/api/option"

	"github.com/kv0/kv0/httpstore"
)

// TestGCSV4GoogleVectors checks the V4 signer against Google's
// cross-language conformance vectors (the client library's module ships
// them, with the throwaway service-account key they are signed with):
// the canonical request, the string to sign and the signed URL must be
// byte for byte those expected, for every vector within what kv0 signs
// (GET, path style, the host header only, optional query parameters and
// hostname).
func TestGCSV4GoogleVectors(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "cloud.google.com/go/storage").Output()
	if err != nil {
		t.Fatalf("locating cloud.google.com/go/storage: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "internal", "test", "conformance")
	raw, err := os.ReadFile(filepath.Join(dir, "service-account"))
	if err != nil {
		t.Fatal(err)
	}
	var sa struct {
		ClientEmail string `json:"client_email"`
		PrivateKey  string `json:"private_key"`
	}
	if err := json.Unmarshal(raw, &sa); err != nil {
		t.Fatal(err)
	}
	sign, err := rsaSigner([]byte(sa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	raw, err = os.ReadFile(filepath.Join(dir, "v4_signatures.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Tests []struct {
			Description      string            `json:"description"`
			Bucket           string            `json:"bucket"`
			Object           string            `json:"object"`
			Method           string            `json:"method"`
			Expiration       int               `json:"expiration"`
			Timestamp        time.Time         `json:"timestamp"`
			Scheme           string            `json:"scheme"`
			Hostname         string            `json:"hostname"`
			URLStyle         string            `json:"urlStyle"`
			Headers          map[string]string `json:"headers"`
			Query            map[string]string `json:"queryParameters"`
			EmulatorHostname string            `json:"emulatorHostname"`
			ClientEndpoint   string            `json:"clientEndpoint"`
			UniverseDomain   string            `json:"universeDomain"`
			URL              string            `json:"expectedUrl"`
			Canonical        string            `json:"expectedCanonicalRequest"`
			ToSign           string            `json:"expectedStringToSign"`
		} `json:"signingV4Tests"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, tc := range file.Tests {
		if tc.Method != "GET" || len(tc.Headers) > 0 || tc.URLStyle != "" || tc.EmulatorHostname != "" ||
			tc.ClientEndpoint != "" || tc.UniverseDomain != "" {
			continue
		}
		g := gcsV4{accessID: sa.ClientEmail, sign: sign, host: "storage.googleapis.com", insecure: tc.Scheme == "http"}
		if tc.Hostname != "" {
			g.host = tc.Hostname
		}
		q := url.Values{}
		for k, v := range tc.Query {
			q.Set(k, v)
		}
		u, canonical, toSign, err := g.signURL(context.Background(), "GET", tc.Bucket, tc.Object, q, tc.Timestamp, time.Duration(tc.Expiration)*time.Second)
		if err != nil {
			t.Errorf("%s: %v", tc.Description, err)
			continue
		}
		if canonical != tc.Canonical {
			t.Errorf("%s: canonical request\n%q\nwant\n%q", tc.Description, canonical, tc.Canonical)
		}
		if toSign != tc.ToSign {
			t.Errorf("%s: string to sign\n%q\nwant\n%q", tc.Description, toSign, tc.ToSign)
		}
		if u != tc.URL {
			t.Errorf("%s: URL\n%s\nwant\n%s", tc.Description, u, tc.URL)
		}
		checked++
	}
	if checked < 8 {
		t.Fatalf("only %d of Google's %d vectors apply", checked, len(file.Tests))
	}
	t.Logf("%d of Google's %d V4 vectors checked", checked, len(file.Tests))
}

// TestGCSSigningThroughIAM: with impersonated service-account
// credentials (no private key at hand), the signer finds the service
// account in the impersonation URL and signs through the IAM Credentials
// signBlob call, authenticated with the impersonated token; a fake
// Google (token, impersonation and IAM endpoints) signs with its own key,
// and the URL's signature verifies with that key over the string to sign.
func TestGCSSigningThroughIAM(t *testing.T) {
	iamKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	const target = "kv0-reader@kv0-test.iam.gserviceaccount.com"
	var signed [][]byte
	var mu sync.Mutex
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token":"source-token","token_type":"Bearer","expires_in":3600}`)
	})
	mux.HandleFunc("POST /v1/projects/-/serviceAccounts/{sa}", func(w http.ResponseWriter, r *http.Request) {
		sa := r.PathValue("sa")
		w.Header().Set("Content-Type", "application/json")
		switch {
		case sa == target+":generateAccessToken" && r.Header.Get("Authorization") == "Bearer source-token":
			fmt.Fprintf(w, `{"accessToken":"impersonated-token","expireTime":%q}`, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
		case sa == target+":signBlob" && r.Header.Get("Authorization") == "Bearer impersonated-token":
			var req struct{ Payload string }
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			b, _ := base64.StdEncoding.DecodeString(req.Payload)
			mu.Lock()
			signed = append(signed, b)
			mu.Unlock()
			sum := sha256.Sum256(b)
			sig, _ := rsa.SignPKCS1v15(rand.Reader, iamKey, crypto.SHA256, sum[:])
			fmt.Fprintf(w, `{"keyId":"1","signedBlob":%q}`, base64.StdEncoding.EncodeToString(sig))
		default:
			http.Error(w, `{"error":{"code":403,"message":"denied"}}`, 403)
		}
	})
	fake := httptest.NewServer(mux)
	defer fake.Close()
	sourceKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	creds, _ := json.Marshal(map[string]any{
		"type":                              "impersonated_service_account",
		"service_account_impersonation_url": fake.URL + "/v1/projects/-/serviceAccounts/" + target + ":generateAccessToken",
		"source_credentials": map[string]string{"type": "service_account", "client_email": "source@kv0-test.iam.gserviceaccount.com",
			"private_key_id": "1", "token_uri": fake.URL + "/token",
			"private_key": string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(sourceKey)}))},
	})
	file := filepath.Join(t.TempDir(), "creds.json")
	if err := os.WriteFile(file, creds, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", file)
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	old := iamClientOptions
	iamClientOptions = []option.ClientOption{option.WithEndpoint(fake.URL + "/")}
	defer func() { iamClientOptions = old }()

	ctx := context.Background()
	g, err := New(ctx, "gs://kv0-bucket/repo", Options{})
	if err != nil {
		t.Fatal(err)
	}
	u, err := g.Sign(ctx, httpstore.OpGet, "t.lance/_versions/1.manifest", httpstore.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	q := pu.Query()
	if !strings.HasPrefix(q.Get("X-Goog-Credential"), target+"/") {
		t.Errorf("credential %q, want the impersonated account", q.Get("X-Goog-Credential"))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(signed) != 1 {
		t.Fatalf("%d signBlob calls, want 1", len(signed))
	}
	if !strings.HasPrefix(string(signed[0]), "GOOG4-RSA-SHA256\n"+q.Get("X-Goog-Date")+"\n") {
		t.Errorf("signBlob got %q", signed[0])
	}
	sig, _ := hex.DecodeString(q.Get("X-Goog-Signature"))
	sum := sha256.Sum256(signed[0])
	if err := rsa.VerifyPKCS1v15(&iamKey.PublicKey, crypto.SHA256, sum[:], sig); err != nil {
		t.Errorf("the URL does not carry the IAM signature: %v", err)
	}
}
