package httpstore

import "testing"

func TestBearerToken(t *testing.T) {
	for _, c := range []struct {
		header, token string
		ok            bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer abc", "abc", true},
		{"BEARER   abc  ", "abc", true},
		{"  Bearer abc", "abc", true},
		{"Bearer", "", false},
		{"Bearerabc", "", false},
		{"Basic abc", "", false},
		{"abc", "", false},
		{"", "", false},
	} {
		tok, ok := BearerToken(c.header)
		if tok != c.token || ok != c.ok {
			t.Errorf("%q: %q %v, want %q %v", c.header, tok, ok, c.token, c.ok)
		}
	}
}
