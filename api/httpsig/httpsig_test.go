package httpsig_test

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/assayhq/assay/api/httpsig"
	"github.com/assayhq/assay/internal/conformance"
)

type vector struct {
	PrivateKeyPEM string `json:"private_key_pem"`
	PublicKeyPEM  string `json:"public_key_pem"`
	Request       struct {
		Method, Path, Authority string
		Headers                 map[string]string
		Body                    string
	}
	SignatureBase  string `json:"signature_base"`
	SignatureInput string `json:"signature_input"`
	Signature      string `json:"signature"`
}

// readVector reads RFC 9421's appendix B.2.6, as the conformance vectors
// hold it.
func readVector(tb testing.TB) vector {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(conformance.Dir(tb, "rfc9421"), "ed25519-b26.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var v vector
	if err := json.Unmarshal(b, &v); err != nil {
		tb.Fatal(err)
	}
	return v
}

func load(t *testing.T) (vector, httpsig.Message, ed25519.PrivateKey, ed25519.PublicKey) {
	t.Helper()
	v := readVector(t)
	blk, _ := pem.Decode([]byte(v.PrivateKeyPEM))
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ = pem.Decode([]byte(v.PublicKeyPEM))
	pk, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	h := map[string][]string{}
	for k, val := range v.Request.Headers {
		h[strings.ToLower(k)] = []string{val}
	}
	m := httpsig.Message{Method: v.Request.Method, Path: v.Request.Path, Authority: v.Request.Authority,
		Header: func(n string) []string { return append([]string(nil), h[n]...) }}
	return v, m, k.(ed25519.PrivateKey), pk.(ed25519.PublicKey)
}

// RFC 9421 appendix B.2.6: the base, the signature and verification.
func TestRFC9421_B26(t *testing.T) {
	v, m, priv, pub := load(t)
	p, sig, err := httpsig.Parse(v.SignatureInput, v.Signature, "sig-b26")
	if err != nil {
		t.Fatal(err)
	}
	base, err := httpsig.Base(m, p)
	if err != nil {
		t.Fatal(err)
	}
	if string(base) != v.SignatureBase {
		t.Fatalf("base:\n%s\nwant:\n%s", base, v.SignatureBase)
	}
	if err := httpsig.Verify(pub, m, p, sig); err != nil {
		t.Fatal(err)
	}
	in, out, err := httpsig.Sign(priv, m, p)
	if err != nil {
		t.Fatal(err)
	}
	if in != v.SignatureInput || out != v.Signature {
		t.Fatalf("sign:\n%s\n%s", in, out)
	}
	// tampering with any covered component breaks it
	m2 := m
	m2.Path = "/bar"
	if err := httpsig.Verify(pub, m2, p, sig); !errors.Is(err, httpsig.ErrBadSignature) {
		t.Fatalf("tampered path: %v", err)
	}
	other := ed25519.NewKeyFromSeed(make([]byte, 32)).Public().(ed25519.PublicKey)
	if err := httpsig.Verify(other, m, p, sig); !errors.Is(err, httpsig.ErrBadSignature) {
		t.Fatalf("wrong key: %v", err)
	}
}

func TestParse(t *testing.T) {
	p, _, err := httpsig.Parse(`a=("@method" "@path");created=1;keyid="k;1";nonce="n\"x";alg="ed25519", b=("x")`, `b=:AA==:, a=:AAAA:`, "")
	if err != nil {
		t.Fatal(err)
	}
	if p.Label != "a" || p.KeyID != "k;1" || p.Nonce != `n"x` || p.Alg != "ed25519" || p.Created != 1 || len(p.Components) != 2 {
		t.Fatalf("%+v", p)
	}
	for _, tc := range []struct{ name, in, sig string }{
		{"ErrNoList", `a=created=1`, `a=:AA==:`},
		{"ErrUnknownParam", `a=("@method");foo=1`, `a=:AA==:`},
		{"ErrCreated", `a=("@method");created=x`, `a=:AA==:`},
		{"ErrNoSig", `a=("@method")`, `b=:AA==:`},
		{"ErrSigToken", `a=("@method")`, `a=AA==`},
		{"ErrUpper", `a=("Date")`, `a=:AA==:`},
		{"ErrEmpty", ``, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := httpsig.Parse(tc.in, tc.sig, ""); !errors.Is(err, httpsig.ErrMalformed) {
				t.Fatalf("err %v", err)
			}
		})
	}
}

func TestContentDigest(t *testing.T) {
	body := []byte(`{"hello": "world"}`)
	d := httpsig.ContentDigest(body)
	// RFC 9530 appendix B.1 gives this value for this body
	if d != "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:" {
		t.Fatal(d)
	}
	if err := httpsig.CheckContentDigest(d, body); err != nil {
		t.Fatal(err)
	}
	if err := httpsig.CheckContentDigest(d, []byte(`{}`)); !errors.Is(err, httpsig.ErrDigest) {
		t.Fatal(err)
	}
	if err := httpsig.CheckContentDigest("md5=:AA==:", body); !errors.Is(err, httpsig.ErrMalformed) {
		t.Fatal(err)
	}
}
