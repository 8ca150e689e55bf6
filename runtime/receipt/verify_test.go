package receipt

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// tamper decodes a receipt, lets edit change it, and encodes it again.
func tamper(tb testing.TB, raw []byte, edit func(m map[string]any)) []byte {
	tb.Helper()
	var m map[string]any
	mustJSON(tb, raw, &m)
	edit(m)
	return mustMarshal(tb, m)
}

func obj(m map[string]any, key string) map[string]any { return m[key].(map[string]any) }

func TestVerifier_Verify(t *testing.T) {
	c := newClock()
	k := mustKeyring(t, c)
	r, err := k.Sign(KindVerdict, "7d6a250e86c842be", sampleVerdict())
	if err != nil {
		t.Fatal(err)
	}
	raw := mustMarshal(t, r)
	pinned := k.Verifier()
	open := NewVerifier(nil)

	_, foreign, _ := ed25519.GenerateKey(seeded(7))
	foreignPub := base64.StdEncoding.EncodeToString(foreign.Public().(ed25519.PublicKey))

	t.Run("OK", func(t *testing.T) {
		res := pinned.Verify(raw)
		if !res.Valid || !strings.Contains(res.Reason, "pinned court key") {
			t.Fatalf("%+v", res)
		}
	})
	t.Run("OKWrapped", func(t *testing.T) {
		wrapped := mustMarshal(t, map[string]any{"receipt": json.RawMessage(raw)})
		if res := pinned.Verify(wrapped); !res.Valid {
			t.Fatal(res.Reason)
		}
	})
	t.Run("OKIntegrityOnly", func(t *testing.T) {
		res := open.Verify(raw)
		if !res.Valid || !strings.HasPrefix(res.Reason, "integrity only") {
			t.Fatalf("%+v", res)
		}
	})
	t.Run("OKKeyWithoutWindow", func(t *testing.T) {
		key, err := ParseKey(r.Proof.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		if res := NewVerifier([]Key{key}).Verify(raw); !res.Valid {
			t.Fatal(res.Reason)
		}
	})

	// Every field of the receipt is covered: changing any one fails, with
	// a reason naming what is wrong.
	tampers := []struct {
		name, reason string
		edit         func(m map[string]any)
	}{
		{"ErrSubjectVerdict", "subjectHash", func(m map[string]any) { obj(m, "credentialSubject")["verdict"] = "release" }},
		{"ErrSubjectPayout", "subjectHash", func(m map[string]any) {
			obj(obj(m, "credentialSubject"), "payout")["did:nanda:doc-buyer"] = 51
		}},
		{"ErrSubjectNested", "subjectHash", func(m map[string]any) {
			obj(m, "credentialSubject")["checks"].([]any)[0].(map[string]any)["passed"] = true
		}},
		{"ErrSubjectAdded", "subjectHash", func(m map[string]any) { obj(m, "credentialSubject")["extra"] = "x" }},
		{"ErrSubjectRemoved", "subjectHash", func(m map[string]any) { delete(obj(m, "credentialSubject"), "reason") }},
		{"ErrSubjectBinding", "subjectHash", func(m map[string]any) {
			obj(obj(m, "credentialSubject"), "receipt")["issued"] = "2020-01-01T00:00:00Z"
		}},
		{"ErrProofType", "not supported", func(m map[string]any) { obj(m, "proof")["type"] = "Ed25519Signature2020" }},
		{"ErrProofTypeOther", "not supported", func(m map[string]any) { obj(m, "proof")["type"] = "AssayEd25519JcsSubject2027" }},
		{"ErrProofCreated", "proof.created", func(m map[string]any) { obj(m, "proof")["created"] = "2026-05-01T12:00:01Z" }},
		{"ErrProofVerificationMethod", "verificationMethod", func(m map[string]any) {
			obj(m, "proof")["verificationMethod"] = VerificationMethod(foreign.Public().(ed25519.PublicKey))
		}},
		{"ErrProofSubjectHash", "subjectHash", func(m map[string]any) {
			obj(m, "proof")["subjectHash"] = strings.Repeat("0", 64)
		}},
		{"ErrProofPublicKey", "proof.signature does not verify", func(m map[string]any) { obj(m, "proof")["publicKey"] = foreignPub }},
		{"ErrProofPublicKeyGarbage", "proof.publicKey", func(m map[string]any) { obj(m, "proof")["publicKey"] = "not base64!" }},
		{"ErrProofSignature", "proof.signature does not verify", func(m map[string]any) {
			sig, _ := base64.StdEncoding.DecodeString(obj(m, "proof")["signature"].(string))
			sig[0] ^= 1
			obj(m, "proof")["signature"] = base64.StdEncoding.EncodeToString(sig)
		}},
		{"ErrProofExtra", "not signed", func(m map[string]any) { obj(m, "proof")["proofPurpose"] = "assertionMethod" }},
		{"ErrContext", "@context", func(m map[string]any) { m["@context"] = []any{ContextVC1} }},
		{"ErrType", "type", func(m map[string]any) { m["type"] = []any{"VerifiableCredential", "AssayRefund"} }},
		{"ErrID", "id must be", func(m map[string]any) { m["id"] = IDPrefix + "other" }},
		{"ErrIssuer", "issuer", func(m map[string]any) { m["issuer"] = DIDKey(foreign.Public().(ed25519.PublicKey)) }},
		{"ErrIssuanceDate", "issuanceDate", func(m map[string]any) { m["issuanceDate"] = "2026-05-01T12:00:01Z" }},
		{"ErrExtraMember", "not signed", func(m map[string]any) { m["expirationDate"] = "2099-01-01T00:00:00Z" }},
	}
	for _, tc := range tampers {
		t.Run(tc.name, func(t *testing.T) {
			bad := tamper(t, raw, tc.edit)
			for _, v := range []*Verifier{pinned, open} {
				res := v.Verify(bad)
				if res.Valid {
					t.Fatalf("tampered receipt verified: %s", res.Reason)
				}
				if !strings.Contains(res.Reason, tc.reason) {
					t.Errorf("reason %q does not mention %q", res.Reason, tc.reason)
				}
			}
		})
	}

	t.Run("ErrForeignKey", func(t *testing.T) {
		// A well-formed receipt signed by someone else's key: intact, but
		// not the court's.
		forged, err := sign(foreign, KindVerdict, "7d6a250e86c842be", c.t, sampleVerdict())
		if err != nil {
			t.Fatal(err)
		}
		b := mustMarshal(t, forged)
		if res := open.Verify(b); !res.Valid || !strings.HasPrefix(res.Reason, "integrity only") {
			t.Errorf("unpinned: %+v", res)
		}
		res := pinned.Verify(b)
		if res.Valid || !strings.Contains(res.Reason, "not one of the pinned court keys") {
			t.Errorf("pinned: %+v", res)
		}
	})

	t.Run("ErrNotAReceipt", func(t *testing.T) {
		for in, reason := range map[string]string{
			`[]`:                                     "not a JSON object",
			`42`:                                     "not a JSON object",
			`null`:                                   "not a JSON object",
			`not json`:                               "not a JSON object",
			`{"hello": "world"}`:                     "no credentialSubject",
			`{"receipt": 5}`:                         "receipt is not a JSON object",
			`{"receipt": {}, "x": 1}`:                "wrapper has other members",
			`{"credentialSubject": {}}`:              "no proof",
			`{"credentialSubject": {}, "proof": 1}`:  "proof is not an object",
			`{"credentialSubject": {}, "proof": {}}`: "proof has no type",
		} {
			res := pinned.Verify([]byte(in))
			if res.Valid || !strings.Contains(res.Reason, reason) {
				t.Errorf("%s: %+v, want reason with %q", in, res, reason)
			}
		}
	})
}

// TestVerifier_KeyWindow: a receipt by a rotated-out key verifies when it
// was issued before the rotation and fails when it claims a later date.
func TestVerifier_KeyWindow(t *testing.T) {
	c := newClock()
	k := mustKeyring(t, c)
	k.mu.RLock()
	oldPriv := k.keys[0].priv
	k.mu.RUnlock()
	before, err := k.Sign(KindVerdict, "before", sampleVerdict())
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Hour)
	atRotation, err := k.Sign(KindVerdict, "at", sampleVerdict())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Rotate(); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Second)
	late, err := sign(oldPriv, KindVerdict, "late", c.t, sampleVerdict())
	if err != nil {
		t.Fatal(err)
	}
	early, err := sign(oldPriv, KindVerdict, "early", newClock().t.Add(-time.Second), sampleVerdict())
	if err != nil {
		t.Fatal(err)
	}
	v := k.Verifier()
	for _, tc := range []struct {
		name   string
		r      Receipt
		valid  bool
		reason string
	}{
		{"OKBeforeRotation", before, true, "retired"},
		{"OKAtRotation", atRotation, true, "retired"},
		{"ErrAfterRotation", late, false, "stopped signing"},
		{"ErrBeforeKey", early, false, "before key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := v.Verify(mustMarshal(t, tc.r))
			if res.Valid != tc.valid || !strings.Contains(res.Reason, tc.reason) {
				t.Errorf("%+v, want valid=%v with %q", res, tc.valid, tc.reason)
			}
		})
	}
	t.Run("OKKeysRoundTrip", func(t *testing.T) {
		// The published list, as `assay keys list` prints it, pins the same.
		keys, err := ParseKeys(mustMarshal(t, KeySet{Keys: k.Keys()}))
		if err != nil {
			t.Fatal(err)
		}
		if res := NewVerifier(keys).Verify(mustMarshal(t, late)); res.Valid {
			t.Error("late receipt verified against the parsed key list")
		}
		if res := NewVerifier(keys).Verify(mustMarshal(t, before)); !res.Valid {
			t.Error(res.Reason)
		}
	})
}

func TestKeyring_Credential(t *testing.T) {
	c := newClock()
	k := mustKeyring(t, c)
	r, err := k.Sign(KindVerdict, "7d6a250e86c842be", sampleVerdict())
	if err != nil {
		t.Fatal(err)
	}
	cred, err := k.Credential(r)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("OK", func(t *testing.T) {
		if res := k.Verifier().Verify(cred); !res.Valid {
			t.Fatal(res.Reason)
		}
		pub, _, err := VerifyDataIntegrity(cred)
		if err != nil || DIDKey(pub) != k.Current().DID {
			t.Fatalf("generic verification: %v", err)
		}
	})
	t.Run("ErrTampered", func(t *testing.T) {
		bad := tamper(t, cred, func(m map[string]any) { obj(m, "credentialSubject")["verdict"] = "release" })
		if res := k.Verifier().Verify(bad); res.Valid {
			t.Fatal("tampered credential verified")
		}
	})
	t.Run("ErrForeignKey", func(t *testing.T) {
		_, foreign, _ := ed25519.GenerateKey(seeded(7))
		forged, err := sign(foreign, KindVerdict, "x", c.t, sampleVerdict())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := k.Credential(forged); err == nil {
			t.Fatal("Credential signed a forged receipt")
		}
	})
}
