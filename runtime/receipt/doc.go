// Package receipt signs Assay's decisions as receipts that anyone can verify
// offline, keeps the court's Ed25519 keys, and verifies receipts.
//
// # Receipt format
//
// A receipt is a W3C-VC-shaped JSON object, the shape the escrow seed's
// clients already read:
//
//	{
//	  "@context": ["https://www.w3.org/2018/credentials/v1", "https://github.com/assayhq/assay#receipt-v1"],
//	  "type": ["VerifiableCredential", "AssayVerdict"],
//	  "id": "urn:assay:receipt:7d6a250e86c842be",
//	  "issuer": "did:key:z6Mk…",
//	  "issuanceDate": "2026-05-01T12:00:00Z",
//	  "credentialSubject": {…, "receipt": {"id": "7d6a250e86c842be", "type": "AssayVerdict", "issued": "2026-05-01T12:00:00Z"}},
//	  "proof": {
//	    "type": "AssayEd25519JcsSubject2026",
//	    "created": "2026-05-01T12:00:00Z",
//	    "verificationMethod": "did:key:z6Mk…#z6Mk…",
//	    "subjectHash": "<hex SHA-256 of the canonical subject>",
//	    "publicKey": "<base64 raw 32-byte Ed25519 key>",
//	    "signature": "<base64 Ed25519 signature over the canonical subject>"
//	  }
//	}
//
// The canonical subject is the RFC 8785 (JCS) form of credentialSubject,
// produced by github.com/gowebpki/jcs. The signature is over those bytes
// themselves, not over their hash, so ten lines of any language with JSON,
// SHA-256 and Ed25519 verify a receipt: recompute the hash, check the
// signature against proof.publicKey, and compare that key with the court's
// published keys.
//
// # Suite name
//
// proof.type is "AssayEd25519JcsSubject2026". The seed labels the same
// construction "Ed25519Signature2020", but that W3C suite canonicalises with
// RDF Dataset Canonicalization and signs the whole credential, so a generic
// verifier would reject (or, worse, misread) it. The name says what the suite
// is: Assay's own (not a registered W3C suite), Ed25519 over the JCS form of
// the credential subject, fixed in 2026.
//
// # What the signature covers
//
// The seed signs only credentialSubject, which leaves id, issuanceDate and
// the receipt type open to silent edits. Sign therefore writes the envelope
// into the subject as the reserved member "receipt" ({"id", "type",
// "issued"}), and Verifier insists that id, type, issuanceDate and
// proof.created agree with it. issuer and proof.verificationMethod are the
// did:key of proof.publicKey, and @context is fixed, so every field of a
// receipt is either signed or derived from something signed.
//
// # Data Integrity form
//
// The same receipt is available as a standard W3C Data Integrity credential
// (Keyring.Credential): a VC 2.0 document with a DataIntegrityProof of
// cryptosuite eddsa-jcs-2022, built exactly as the W3C vc-di-eddsa
// specification says (SHA-256 of the canonical proof configuration followed
// by SHA-256 of the canonical document, signed with Ed25519, proofValue in
// multibase base58btc), so generic VC tooling can verify it. Verifier accepts
// both forms.
//
// # Storage
//
// Every service keeps the receipts it signs in one repository (Put, Get,
// ByAgent): receipt/<id> holds a receipt in the bytes Sign produced, marshalled
// without HTML escaping (Marshal), so that the credentialSubject a client is
// served is the one that was signed and hashes to proof.subjectHash;
// receipt-by-agent/<party>/<unixnano>-<id> indexes it under its parties. Ids
// come from ID: the first 8 bytes of the SHA-256 of what the receipt is
// about, so a retried transaction signs under the same id. storage/doc.go
// lists the keys.
//
// # Keys on disk
//
// A Keyring keeps every key the court ever signed with in one file,
// <data>/keys/ed25519.json (mode 0600, directory 0700), rewritten atomically
// on rotation:
//
//	{
//	  "format": "assay-keys/v1",
//	  "keys": [
//	    {"seed": "<base64 32-byte Ed25519 seed>", "public_key": "<base64>",
//	     "not_before": "2026-01-01T00:00:00Z", "not_after": "2026-05-01T12:00:00Z"},
//	    {"seed": "…", "public_key": "…", "not_before": "2026-05-01T12:00:00Z", "not_after": null}
//	  ]
//	}
//
// Only the last key signs. A retired key keeps the time it stopped signing;
// a receipt verifies against a key only if it was issued inside that key's
// window [not_before, not_after] (both ends included, times in whole seconds).
package receipt
