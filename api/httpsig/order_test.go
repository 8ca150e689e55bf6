package httpsig_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/assayhq/assay/api/httpsig"
)

// A signer may write the signature parameters in any order: the base's
// @signature-params is the Signature-Input member as sent, not a
// serialisation in this package's own order. The orders are RFC 9421's
// own examples: section 2.3 (keyid, alg, created, expires), B.2.1
// (created, keyid, nonce) and B.2.5 (created, keyid), written over the
// request of B.2.6 and signed with the test key of B.1.4.
func TestParamsInTheClientsOrder(t *testing.T) {
	_, m, priv, pub := load(t)
	digest := httpsig.ContentDigest([]byte(`{"hello": "world"}`))
	header := m.Header
	m.Header = func(n string) []string {
		if n == "content-digest" {
			return []string{digest}
		}
		return header(n)
	}
	for _, tc := range []struct{ name, input string }{
		{"Section2.3", `sig1=("@method" "@authority" "@path" "content-digest");keyid="test-key-ed25519";alg="ed25519";created=1618884475;expires=1618884775`},
		{"B.2.1", `sig-b21=("@method" "@path");created=1618884473;keyid="test-key-ed25519";nonce="b3k2pp5k7z-50gnwp.yemd"`},
		{"B.2.5", `sig-b25=("date" "@authority" "content-type");created=1618884473;keyid="test-key-ed25519"`},
		{"NonceFirst", `a=("@method" "@path" "@authority" "content-digest");nonce="n1";alg="ed25519";keyid="k";created=1618884475`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			label, member, _ := strings.Cut(tc.input, "=")
			// The signature as a client computes it: over its own text.
			var base strings.Builder
			p, _, err := httpsig.Parse(tc.input, label+"=:AA==:", label)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range p.Components {
				v := map[string]string{"@method": "POST", "@path": "/foo", "@authority": "example.com",
					"date": "Tue, 20 Apr 2021 02:07:55 GMT", "content-type": "application/json",
					"content-digest": digest}[c]
				base.WriteString(`"` + c + `": ` + v + "\n")
			}
			base.WriteString(`"@signature-params": ` + member)
			sig := ed25519.Sign(priv, []byte(base.String()))
			field := label + "=:" + base64.StdEncoding.EncodeToString(sig) + ":"

			p, got, err := httpsig.Parse(tc.input, field, "")
			if err != nil {
				t.Fatal(err)
			}
			b, err := httpsig.Base(m, p)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != base.String() {
				t.Fatalf("base:\n%s\nwant:\n%s", b, base.String())
			}
			if err := httpsig.Verify(pub, m, p, got); err != nil {
				t.Fatalf("the client's order does not verify: %v", err)
			}
			// Signing with the parsed params writes the same member.
			in, out, err := httpsig.Sign(priv, m, p)
			if err != nil || in != tc.input || out != field {
				t.Fatalf("sign: %v\n%s\n%s", err, in, out)
			}
			// Rebuilt in another order, the base is another text: the
			// signature does not verify over it.
			p.Order = nil
			if p.Serialize() != member {
				if err := httpsig.Verify(pub, m, p, got); !errors.Is(err, httpsig.ErrBadSignature) {
					t.Fatalf("reordered: %v", err)
				}
			}
		})
	}
	if _, _, err := httpsig.Parse(`a=("@method");created=1;created=2`, `a=:AA==:`, ""); !errors.Is(err, httpsig.ErrMalformed) {
		t.Fatalf("a parameter named twice: %v", err)
	}
}
