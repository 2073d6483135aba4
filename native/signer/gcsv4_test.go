package signer

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
