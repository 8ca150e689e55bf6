package receipt

import "testing"

func BenchmarkSign(b *testing.B) {
	k := mustKeyring(b, newClock())
	subject := sampleVerdict()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Sign(KindVerdict, "7d6a250e86c842be", subject); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	k := mustKeyring(b, newClock())
	r, err := k.Sign(KindVerdict, "7d6a250e86c842be", sampleVerdict())
	if err != nil {
		b.Fatal(err)
	}
	raw := mustMarshal(b, r)
	v := k.Verifier()
	b.ReportAllocs()
	for b.Loop() {
		if res := v.Verify(raw); !res.Valid {
			b.Fatal(res.Reason)
		}
	}
}
