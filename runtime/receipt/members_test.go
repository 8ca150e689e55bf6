package receipt

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestMarshalReceipt: the receipt's own writer gives Marshal's bytes, for
// a signed receipt and for ones whose fields need escaping or whose
// subject is not compact.
func TestMarshalReceipt(t *testing.T) {
	k := mustKeyring(t, newClock())
	signed, err := k.Sign(KindVerdict, "7d6a250e86c842be", sampleVerdict())
	if err != nil {
		t.Fatal(err)
	}
	odd := signed
	odd.Issuer = "did:key:<&>\u2028\"\\\x01é"
	spaced := signed
	spaced.CredentialSubject = json.RawMessage(" {\n \"a\" : [1, 2] ,\"b\":\"x y\"}\t")
	nilType := signed
	nilType.Type = nil
	for name, r := range map[string]Receipt{"Signed": signed, "Odd": odd, "Spaced": spaced, "NilType": nilType} {
		t.Run(name, func(t *testing.T) {
			want, werr := Marshal(r)
			got, gerr := marshalReceipt(r)
			if !bytes.Equal(got, want) || (werr == nil) != (gerr == nil) {
				t.Errorf("got %s (%v)\nwant %s (%v)", got, gerr, want, werr)
			}
		})
	}
	bad := signed
	bad.CredentialSubject = json.RawMessage(`{"a":`)
	if _, err := marshalReceipt(bad); err == nil {
		t.Error("a subject that is not JSON: no error")
	}
}
