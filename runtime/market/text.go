package market

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/ident"
)

// Artifact encodings: how a listing's artifact is sent at publication and
// delivered to its buyer, as POST /replays names them.
const (
	// EncodingJSON (the default): the artifact is any JSON value of valid
	// UTF-8; a string is given to the checker as its contents, any other
	// value as its JSON text.
	EncodingJSON = "json"
	// EncodingBase64: the artifact is a JSON string holding the bytes in
	// standard base64, for artifacts that are not text.
	EncodingBase64 = "base64"
)

// validAgent checks an agent id against the one id grammar of every
// service (runtime/ident): no NUL, control, whitespace, format or bidi
// characters, no '/', '\', '*', not "." or "..", valid UTF-8, at most
// ident.MaxIDBytes.
func validAgent(field, did string) error {
	if did == "" {
		return fault.New(fault.Invalid, ECodeMissingField, "%s is required: the acting agent's id, e.g. g17-mathema or did:key:…", field)
	}
	return ident.ID(field, ident.ECodeInvalidAgent, did)
}

// validText checks free text (problem statements, purposes, reasons,
// license terms, queries): ident.Text, so valid UTF-8, no control
// character but tab and newline, no bidi control, at most max bytes. Its
// code is "invalid_" + field.
func validText(field, s string, max int) error { return ident.Text(field, s, max) }

// validLine checks one line of text (a title): validText, and no tab or
// newline either.
func validLine(field, s string, max int) error {
	if err := validText(field, s, max); err != nil {
		return err
	}
	if i := strings.IndexAny(s, "\t\n"); i >= 0 {
		return fault.New(fault.Invalid, ECodeInvalidPrefix+field, "%s is one line: it must not hold a tab or a newline (at byte %d)", field, i)
	}
	return nil
}

// decodeArtifact checks an artifact as published under encoding and
// returns the bytes its checker sees.
//
// # Errors
//
// invalid_encoding, invalid_artifact (400); artifact_too_large (413).
func decodeArtifact(art json.RawMessage, encoding string) ([]byte, error) {
	if i := invalidUTF8At(art); i >= 0 {
		return nil, fault.New(fault.Invalid, ECodeInvalidArtifact,
			`artifact is not valid UTF-8 (at byte %d): send an artifact that is not text as a base64 string with "encoding": "base64"`, i)
	}
	switch encoding {
	case "", EncodingJSON:
		return artifactInput(art), nil
	case EncodingBase64:
		var s string
		if len(art) == 0 || art[0] != '"' || json.Unmarshal(art, &s) != nil {
			return nil, fault.New(fault.Invalid, ECodeInvalidArtifact, `with "encoding": "base64", artifact is a JSON string of standard base64`)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fault.New(fault.Invalid, ECodeInvalidArtifact, "artifact is not standard base64: %v", err)
		}
		if len(b) > MaxArtifactBytes {
			return nil, fault.New(fault.TooLarge, ECodeArtifactTooLarge, "an artifact is at most %d bytes", MaxArtifactBytes)
		}
		return b, nil
	}
	return nil, fault.New(fault.Invalid, ECodeInvalidEncoding, "encoding is %q or %q, not %q", EncodingJSON, EncodingBase64, truncate(encoding, 40))
}

// checkerInput returns what a listing's checker sees of its stored
// artifact.
func (l *Listing) checkerInput(art []byte) []byte {
	if l.Encoding == EncodingBase64 {
		var s string
		if json.Unmarshal(art, &s) == nil {
			if b, err := base64.StdEncoding.DecodeString(s); err == nil {
				return b
			}
		}
	}
	return artifactInput(art)
}

// encoding names the form a listing's artifact is delivered in.
func (l *Listing) encoding() string {
	if l.Encoding == "" {
		return EncodingJSON
	}
	return l.Encoding
}

// invalidUTF8At returns the offset of the first byte of b that is not
// valid UTF-8, or -1.
func invalidUTF8At(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// validEvidence checks a challenger's evidence: valid UTF-8 JSON.
func validEvidence(ev []byte) error {
	if i := invalidUTF8At(ev); i >= 0 {
		return fault.New(fault.Invalid, ECodeInvalidEvidence, "evidence is not valid UTF-8 (at byte %d)", i)
	}
	return nil
}
