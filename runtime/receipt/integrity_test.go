package receipt

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/assayhq/assay/internal/conformance"
	"github.com/mr-tron/base58"
)

// conformanceKey decodes the vc-di-eddsa key pair: multibase base58btc of
// the multicodec ed25519-priv (0x1300) seed and ed25519-pub (0xed) key.
func conformanceKey(tb testing.TB, dir string) ed25519.PrivateKey {
	tb.Helper()
	var kp struct {
		PublicKeyMultibase  string `json:"publicKeyMultibase"`
		PrivateKeyMultibase string `json:"privateKeyMultibase"`
	}
	mustJSON(tb, readFile(tb, filepath.Join(dir, "keyPair.json")), &kp)
	b, err := base58.Decode(strings.TrimPrefix(kp.PrivateKeyMultibase, "z"))
	if err != nil || len(b) != 34 || b[0] != 0x80 || b[1] != 0x26 {
		tb.Fatalf("private key multibase: %v (% x)", err, b[:2])
	}
	priv := ed25519.NewKeyFromSeed(b[2:])
	if got := Multibase(priv.Public().(ed25519.PublicKey)); got != kp.PublicKeyMultibase {
		tb.Fatalf("public key %s, want %s", got, kp.PublicKeyMultibase)
	}
	return priv
}

// TestSignDataIntegrity_Conformance reproduces the W3C vc-di-eddsa
// eddsa-jcs-2022 test vector byte for byte from its key pair.
func TestSignDataIntegrity_Conformance(t *testing.T) {
	dir := conformance.Dir(t, "vc-di-eddsa")
	vec := filepath.Join(dir, "eddsa-jcs-2022")
	priv := conformanceKey(t, dir)
	text := func(name string) string { return strings.TrimSpace(string(readFile(t, filepath.Join(vec, name)))) }

	var secured map[string]json.RawMessage
	mustJSON(t, readFile(t, filepath.Join(vec, "signedJCS.json")), &secured)
	delete(secured, "proof")
	unsecured, err := json.Marshal(secured)
	if err != nil {
		t.Fatal(err)
	}
	canonDoc, err := CanonicalJSON(unsecured)
	if err != nil {
		t.Fatal(err)
	}
	if string(canonDoc) != text("canonDocJCS.txt") {
		t.Errorf("canonical document\n got: %s\nwant: %s", canonDoc, text("canonDocJCS.txt"))
	}

	var opts DataIntegrityProof
	mustJSON(t, readFile(t, filepath.Join(vec, "proofConfigJCS.json")), &opts)
	canonProof, err := Canonical(opts)
	if err != nil {
		t.Fatal(err)
	}
	if string(canonProof) != text("proofCanonJCS.txt") {
		t.Errorf("canonical proof config\n got: %s\nwant: %s", canonProof, text("proofCanonJCS.txt"))
	}

	var doc map[string]json.RawMessage
	mustJSON(t, unsecured, &doc)
	hashData, err := diHashData(doc, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(hashData[:32]); got != text("proofHashJCS.txt") {
		t.Errorf("proof hash %s, want %s", got, text("proofHashJCS.txt"))
	}
	if got := hex.EncodeToString(hashData[32:]); got != text("docHashJCS.txt") {
		t.Errorf("document hash %s, want %s", got, text("docHashJCS.txt"))
	}
	if got := hex.EncodeToString(hashData); got != text("combinedHashJCS.txt") {
		t.Errorf("combined hash %s, want %s", got, text("combinedHashJCS.txt"))
	}
	if got := hex.EncodeToString(ed25519.Sign(priv, hashData)); got != text("sigHexJCS.txt") {
		t.Errorf("signature %s, want %s", got, text("sigHexJCS.txt"))
	}

	// The whole Add Proof algorithm, from the unsecured document and the
	// proof options without @context (it is copied from the document).
	opts.Context = nil
	out, err := SignDataIntegrity(unsecured, opts, priv)
	if err != nil {
		t.Fatal(err)
	}
	want, err := CanonicalJSON(readFile(t, filepath.Join(vec, "signedJCS.json")))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, want) {
		t.Errorf("secured document\n got: %s\nwant: %s", out, want)
	}
	var got struct {
		Proof struct {
			ProofValue string `json:"proofValue"`
		} `json:"proof"`
	}
	mustJSON(t, out, &got)
	if got.Proof.ProofValue != text("sigBTC58JCS.txt") {
		t.Errorf("proofValue %s, want %s", got.Proof.ProofValue, text("sigBTC58JCS.txt"))
	}
}

func TestVerifyDataIntegrity_Conformance(t *testing.T) {
	dir := conformance.Dir(t, "vc-di-eddsa")
	priv := conformanceKey(t, dir)
	signed := readFile(t, filepath.Join(dir, "eddsa-jcs-2022", "signedJCS.json"))

	t.Run("OK", func(t *testing.T) {
		pub, created, err := VerifyDataIntegrity(signed)
		if err != nil {
			t.Fatal(err)
		}
		if !pub.Equal(priv.Public()) {
			t.Error("verified with another key")
		}
		if created.Format(timeLayout) != "2023-02-24T23:36:38Z" {
			t.Errorf("created %s", created)
		}
	})
	for _, tc := range []struct{ name, from, to string }{
		{"ErrSubject", `"The School of Examples"`, `"The School of Exemples"`},
		{"ErrCreated", `"2023-02-24T23:36:38Z"`, `"2023-02-24T23:36:39Z"`},
		{"ErrPurpose", `"assertionMethod"`, `"authentication"`},
		{"ErrSuite", `"cryptosuite": "eddsa-jcs-2022"`, `"cryptosuite": "eddsa-rdfc-2022"`},
		{"ErrProofValue", `"z2HnFSSPP`, `"z2HnFSSPQ`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := strings.Replace(string(signed), tc.from, tc.to, 1)
			if bad == string(signed) {
				t.Fatalf("%s not found", tc.from)
			}
			if _, _, err := VerifyDataIntegrity([]byte(bad)); err == nil {
				t.Fatal("tampered credential verified")
			}
		})
	}
}

func readFile(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func mustJSON(tb testing.TB, data []byte, v any) {
	tb.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		tb.Fatal(err)
	}
}
