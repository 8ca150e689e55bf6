package receipt

import (
	"crypto/ed25519"
	"testing"
)

// The ed25519 sub-benchmarks time the bare signature over the same canonical
// subject, so the receipt's own cost (JSON, JCS, hashing) reads as the
// difference within one run.

func BenchmarkSign(b *testing.B) {
	k := mustKeyring(b, newClock())
	subject := sampleVerdict()
	b.Run("receipt", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := k.Sign(KindVerdict, "7d6a250e86c842be", subject); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ed25519", func(b *testing.B) {
		r, err := k.Sign(KindVerdict, "7d6a250e86c842be", subject)
		if err != nil {
			b.Fatal(err)
		}
		priv := k.keys[0].priv
		b.ReportAllocs()
		for b.Loop() {
			ed25519.Sign(priv, r.CredentialSubject)
		}
	})
}

func BenchmarkVerify(b *testing.B) {
	k := mustKeyring(b, newClock())
	r, err := k.Sign(KindVerdict, "7d6a250e86c842be", sampleVerdict())
	if err != nil {
		b.Fatal(err)
	}
	raw := mustMarshal(b, r)
	v := k.Verifier()
	b.Run("receipt", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if res := v.Verify(raw); !res.Valid {
				b.Fatal(res.Reason)
			}
		}
	})
	b.Run("ed25519", func(b *testing.B) {
		pub := k.keys[0].priv.Public().(ed25519.PublicKey)
		sig := ed25519.Sign(k.keys[0].priv, r.CredentialSubject)
		b.ReportAllocs()
		for b.Loop() {
			if !ed25519.Verify(pub, r.CredentialSubject, sig) {
				b.Fatal("bad signature")
			}
		}
	})
}
