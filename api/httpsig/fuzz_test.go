package httpsig_test

import (
	"crypto/ed25519"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/assayhq/assay/api/httpsig"
)

// parseSeeds are Signature-Input and Signature fields, with the label to
// read: RFC 9421's orders of parameters (section 2.3, appendix B.2.1 and
// B.2.5, as order_test.go signs them), the fields the servers' tests sign
// with, and the refusals of TestParse. FuzzParse adds appendix B.2.6, the
// conformance vector, as published.
var parseSeeds = []struct{ input, signature, label string }{
	{`sig1=("@method" "@authority" "@path" "content-digest");keyid="test-key-ed25519";alg="ed25519";created=1618884475;expires=1618884775`, `sig1=:AA==:`, ""},
	{`sig-b21=("@method" "@path");created=1618884473;keyid="test-key-ed25519";nonce="b3k2pp5k7z-50gnwp.yemd"`, `sig-b21=:AA==:`, "sig-b21"},
	{`sig-b25=("date" "@authority" "content-type");created=1618884473;keyid="test-key-ed25519"`, `sig-b25=:AA==:`, "sig-b25"},
	{`a=("@method" "@path" "@authority" "content-digest");nonce="n1";alg="ed25519";keyid="k";created=1618884475`, `a=:AA==:`, "a"},
	{`sig1=("@method" "@path" "@authority" "content-digest");created=1700000000;keyid="did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK";nonce="bm9uY2Utb25l";alg="ed25519"`,
		`sig1=:` + strings.Repeat("A", 86) + `==:`, "sig1"},
	{`a=("@method" "@path");created=1;keyid="k;1";nonce="n\"x";alg="ed25519", b=("x")`, `b=:AA==:, a=:AAAA:`, ""},
	{`a=("@query" "@target-uri");tag="t";expires=2`, `a=:AA==:`, ""},
	{`a=created=1`, `a=:AA==:`, ""},
	{`a=("@method");foo=1`, `a=:AA==:`, ""},
	{`a=("@method");created=x`, `a=:AA==:`, ""},
	{`a=("@method")`, `b=:AA==:`, ""},
	{`a=("@method")`, `a=AA==`, ""},
	{`a=("Date")`, `a=:AA==:`, ""},
	{`a=("@method");created=1;created=2`, `a=:AA==:`, ""},
	{``, ``, ""},
}

// FuzzParse: Parse never panics; what it refuses it refuses as
// ErrMalformed; what it accepts it writes back (Params.Serialize, as Sign
// writes a Signature-Input member) in a form it reads as the same
// parameters; and a signature made over parsed parameters verifies.
func FuzzParse(f *testing.F) {
	v := readVector(f)
	f.Add(v.SignatureInput, v.Signature, "sig-b26")
	for _, s := range parseSeeds {
		f.Add(s.input, s.signature, s.label)
	}
	priv := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	pub := priv.Public().(ed25519.PublicKey)
	f.Fuzz(func(t *testing.T, input, signature, label string) {
		p, sig, err := httpsig.Parse(input, signature, label)
		if err != nil {
			if !errors.Is(err, httpsig.ErrMalformed) {
				t.Fatalf("Parse(%q, %q, %q): %v, not ErrMalformed", input, signature, label, err)
			}
			return
		}
		if sig == nil || p.Label == "" || label != "" && p.Label != label {
			t.Fatalf("Parse(%q, %q, %q) = %+v, %x: no label or no signature", input, signature, label, p, sig)
		}
		member := p.Label + "=" + p.Serialize()
		again, _, err := httpsig.Parse(member, p.Label+"=:AA==:", p.Label)
		if err != nil {
			t.Fatalf("Parse read %q as %+v, but not its own serialisation %q: %v", input, p, member, err)
		}
		if !reflect.DeepEqual(again, p) {
			t.Fatalf("Parse read %q as %+v, and its serialisation %q as %+v", input, p, member, again)
		}
		// A message holding every covered field, signed and verified.
		m := httpsig.Message{Method: "POST", Authority: "assay.test", Path: "/contracts", Query: "a=1",
			Header: func(name string) []string { return []string{"value of " + name} }}
		in, out, err := httpsig.Sign(priv, m, p)
		if err != nil {
			if !errors.Is(err, httpsig.ErrMalformed) {
				t.Fatalf("Sign over %+v: %v, not ErrMalformed", p, err)
			}
			return
		}
		q, qsig, err := httpsig.Parse(in, out, p.Label)
		if err != nil {
			t.Fatalf("Parse of Sign's own fields %q, %q: %v", in, out, err)
		}
		if err := httpsig.Verify(pub, m, q, qsig); err != nil {
			t.Fatalf("a signature over %+v does not verify: %v", p, err)
		}
	})
}

// FuzzCheckContentDigest: CheckContentDigest never panics, refuses as
// ErrMalformed or ErrDigest, and accepts the digest ContentDigest writes.
func FuzzCheckContentDigest(f *testing.F) {
	// RFC 9530 appendix B.1's body and digest, and refusals.
	f.Add("sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:", []byte(`{"hello": "world"}`))
	f.Add("sha-512=:AA==:, sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:", []byte(`{"hello": "world"}`))
	f.Add("md5=:AA==:", []byte(`{}`))
	f.Add("sha-256=AA==", []byte{})
	f.Add(`sha-256="x, y"`, []byte("x"))
	f.Fuzz(func(t *testing.T, field string, body []byte) {
		err := httpsig.CheckContentDigest(field, body)
		if err != nil && !errors.Is(err, httpsig.ErrMalformed) && !errors.Is(err, httpsig.ErrDigest) {
			t.Fatalf("CheckContentDigest(%q): %v", field, err)
		}
		if err := httpsig.CheckContentDigest(httpsig.ContentDigest(body), body); err != nil {
			t.Fatalf("the digest ContentDigest wrote for %q: %v", body, err)
		}
	})
}

// TestParse_rfc8941Strings: components and parameters are RFC 8941
// strings, printable ASCII with only \" and \\ escaped; the escapes Go
// allows besides, which FuzzParse found Serialize could not write back
// (a component "a\x20b" read as "a b", written as two), are refused.
func TestParse_rfc8941Strings(t *testing.T) {
	p, _, err := httpsig.Parse(`a=("@method");keyid="k \"1\" \\ ;)"`, `a=:AA==:`, "")
	if err != nil || p.KeyID != `k "1" \ ;)` {
		t.Fatalf("%+v %v", p, err)
	}
	for _, in := range []string{
		`a=("a\x20b")`,
		`a=("x\u00e9")`,
		`a=("@method");keyid="a\tb"`,
		`a=("@method");keyid="a` + "\x01" + `"`,
		`a=("@method");nonce="é"`,
		`a=("@method");alg="ed25519\"`,
	} {
		if _, _, err := httpsig.Parse(in, `a=:AA==:`, ""); !errors.Is(err, httpsig.ErrMalformed) {
			t.Errorf("Parse(%q): %v, want ErrMalformed", in, err)
		}
	}
}
