// Package httpsig implements the part of RFC 9421 (HTTP Message Signatures)
// that Assay's private API uses: Ed25519 signatures over derived components
// (@method, @path, @authority, @query, @target-uri) and header fields,
// with the Signature-Input and Signature dictionaries of RFC 8941, and the
// Content-Digest field of RFC 9530 (sha-256). It knows nothing of HTTP
// servers: a Message says what the request's components are.
package httpsig

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Errors. Parse and Base wrap ErrMalformed; Verify returns ErrBadSignature.
var (
	ErrMalformed    = errors.New("httpsig: malformed signature fields")
	ErrBadSignature = errors.New("httpsig: signature does not verify")
	ErrNoComponent  = errors.New("httpsig: covered component missing from the message")
	ErrDigest       = errors.New("httpsig: Content-Digest does not match the body")
)

// Message is what a signature can cover.
type Message struct {
	Method    string
	Authority string // host[:port] as the client addressed it
	Path      string // the request target's path, without the query
	Query     string // without the leading "?"; "" when none
	Scheme    string // for @target-uri; "https" when empty
	// Header returns a field's values in order, by lowercase name.
	Header func(name string) []string
}

// Params are a signature's covered components and parameters.
type Params struct {
	Label      string
	Components []string // lowercase names: "@method", "content-digest", …
	Created    int64    // unix seconds; 0: absent
	Expires    int64    // unix seconds; 0: absent
	KeyID      string
	Nonce      string
	Alg        string
	Tag        string
	// Order is the parameters' names in the order the client wrote them
	// (Parse sets it): @signature-params is the Signature-Input member as
	// sent, which RFC 9421 lets a signer order as it likes. Empty: the
	// order created, expires, keyid, nonce, alg, tag.
	Order []string
}

// paramNames are the signature parameters this package reads, in the
// order Serialize writes them when Params.Order is empty.
var paramNames = []string{"created", "expires", "keyid", "nonce", "alg", "tag"}

// Serialize is the inner list and parameters as RFC 8941 serializes them:
// the value of @signature-params and of the Signature-Input member.
func (p Params) Serialize() string {
	var b strings.Builder
	b.WriteByte('(')
	for i, c := range p.Components {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Quote(c))
	}
	b.WriteByte(')')
	order := p.Order
	if len(order) == 0 {
		order = paramNames
	}
	for _, name := range order {
		switch name {
		case "created", "expires":
			n := p.Created
			if name == "expires" {
				n = p.Expires
			}
			if n != 0 {
				fmt.Fprintf(&b, ";%s=%d", name, n)
			}
		default:
			if v := p.param(name); v != "" {
				fmt.Fprintf(&b, ";%s=%s", name, strconv.Quote(v))
			}
		}
	}
	return b.String()
}

// param is a string parameter's value by name.
func (p Params) param(name string) string {
	switch name {
	case "keyid":
		return p.KeyID
	case "nonce":
		return p.Nonce
	case "alg":
		return p.Alg
	case "tag":
		return p.Tag
	}
	return ""
}

// Covers reports whether the signature covers component c.
func (p Params) Covers(c string) bool {
	for _, x := range p.Components {
		if x == c {
			return true
		}
	}
	return false
}

// Parse reads the member label of the Signature-Input and Signature
// fields (the first member of Signature-Input when label is empty).
func Parse(sigInput, signature, label string) (Params, []byte, error) {
	inputs, err := dictionary(sigInput)
	if err != nil || len(inputs) == 0 {
		return Params{}, nil, fmt.Errorf("%w: Signature-Input: %v", ErrMalformed, err)
	}
	if label == "" {
		label = inputs[0].key
	}
	var raw string
	for _, m := range inputs {
		if m.key == label {
			raw = m.value
		}
	}
	if raw == "" {
		return Params{}, nil, fmt.Errorf("%w: Signature-Input has no member %q", ErrMalformed, label)
	}
	p, err := parseParams(raw)
	if err != nil {
		return Params{}, nil, err
	}
	p.Label = label
	sigs, err := dictionary(signature)
	if err != nil {
		return Params{}, nil, fmt.Errorf("%w: Signature: %v", ErrMalformed, err)
	}
	for _, m := range sigs {
		if m.key != label {
			continue
		}
		v := m.value
		if len(v) < 2 || v[0] != ':' || v[len(v)-1] != ':' {
			return Params{}, nil, fmt.Errorf("%w: Signature member %q is not a byte sequence", ErrMalformed, label)
		}
		sig, err := base64.StdEncoding.DecodeString(v[1 : len(v)-1])
		if err != nil {
			return Params{}, nil, fmt.Errorf("%w: Signature member %q: %v", ErrMalformed, label, err)
		}
		return p, sig, nil
	}
	return Params{}, nil, fmt.Errorf("%w: Signature has no member %q", ErrMalformed, label)
}

type member struct{ key, value string }

// dictionary splits an RFC 8941 dictionary into members, keeping each
// value's text. Commas inside strings and inner lists are respected.
func dictionary(s string) ([]member, error) {
	var out []member
	for s = strings.TrimSpace(s); s != ""; {
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return nil, errors.New("member without a value")
		}
		key := strings.TrimSpace(s[:eq])
		if !validKey(key) {
			return nil, fmt.Errorf("bad key %q", key)
		}
		s = s[eq+1:]
		end, inStr, depth := len(s), false, 0
	scan:
		for i := 0; i < len(s); i++ {
			switch c := s[i]; {
			case inStr && c == '\\':
				i++
			case c == '"':
				inStr = !inStr
			case inStr:
			case c == '(':
				depth++
			case c == ')':
				depth--
			case c == ',' && depth == 0:
				end = i
				break scan
			}
		}
		if inStr || depth != 0 {
			return nil, errors.New("unterminated string or list")
		}
		out = append(out, member{key, strings.TrimSpace(s[:end])})
		if end == len(s) {
			break
		}
		s = strings.TrimSpace(s[end+1:])
	}
	return out, nil
}

func validKey(k string) bool {
	if k == "" || !(k[0] >= 'a' && k[0] <= 'z' || k[0] == '*') {
		return false
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.ContainsRune("_-.*", c)) {
			return false
		}
	}
	return true
}

// parseParams reads `("a" "b");created=1;keyid="k"`.
func parseParams(s string) (Params, error) {
	bad := func(why string) (Params, error) {
		return Params{}, fmt.Errorf("%w: Signature-Input: %s", ErrMalformed, why)
	}
	if !strings.HasPrefix(s, "(") {
		return bad("not an inner list")
	}
	close := strings.IndexByte(s, ')')
	if close < 0 {
		return bad("unterminated inner list")
	}
	var p Params
	for _, item := range strings.Fields(s[1:close]) {
		c, ok := unquote(item)
		if !ok || c == "" || c != strings.ToLower(c) || strings.ContainsAny(c, ";") {
			return bad(fmt.Sprintf("component %s is not a lowercase string without parameters", item))
		}
		if p.Covers(c) {
			return bad(fmt.Sprintf("component %s named twice", item))
		}
		p.Components = append(p.Components, c)
	}
	rest := s[close+1:]
	for rest != "" {
		if rest[0] != ';' {
			return bad("parameters must follow ';'")
		}
		rest = rest[1:]
		eq := strings.IndexByte(rest, '=')
		if eq <= 0 {
			return bad("a parameter has no value")
		}
		k := rest[:eq]
		rest = rest[eq+1:]
		n := strings.IndexByte(rest, ';')
		if strings.HasPrefix(rest, `"`) {
			n = -1
			for i := 1; i < len(rest); i++ {
				if rest[i] == '\\' {
					i++
				} else if rest[i] == '"' {
					n = i + 1
					break
				}
			}
			if n < 0 {
				return bad("unterminated string")
			}
		} else if n < 0 {
			n = len(rest)
		}
		v := rest[:n]
		rest = rest[n:]
		if slices.Contains(p.Order, k) {
			return bad("parameter " + k + " named twice")
		}
		p.Order = append(p.Order, k)
		switch k {
		case "created", "expires":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return bad(k + " must be a positive integer")
			}
			if k == "created" {
				p.Created = n
			} else {
				p.Expires = n
			}
		case "keyid", "nonce", "alg", "tag":
			str, ok := unquote(v)
			if !ok {
				return bad(k + " must be a string")
			}
			switch k {
			case "keyid":
				p.KeyID = str
			case "nonce":
				p.Nonce = str
			case "alg":
				p.Alg = str
			case "tag":
				p.Tag = str
			}
		default:
			return bad("unknown parameter " + k)
		}
	}
	return p, nil
}

// unquote reads an RFC 8941 string (section 3.3.3): printable ASCII
// between double quotes, in which only a double quote and a backslash are
// escaped, each by a backslash. Anything else, other escapes included, is
// not a string: Serialize could not write it back as it was read.
func unquote(s string) (string, bool) {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return "", false
	}
	var b strings.Builder
	for i := 1; i < len(s)-1; i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
			if i == len(s)-1 || s[i] != '"' && s[i] != '\\' {
				return "", false
			}
			b.WriteByte(s[i])
		case c == '"' || c < 0x20 || c > 0x7e:
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// Base returns the signature base of m for p (RFC 9421 section 2.5).
func Base(m Message, p Params) ([]byte, error) {
	var b strings.Builder
	for _, c := range p.Components {
		v, err := component(m, c)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "%q: %s\n", c, v)
	}
	fmt.Fprintf(&b, "\"@signature-params\": %s", p.Serialize())
	return []byte(b.String()), nil
}

func component(m Message, c string) (string, error) {
	switch c {
	case "@method":
		return strings.ToUpper(m.Method), nil
	case "@authority":
		return strings.ToLower(m.Authority), nil
	case "@path":
		if m.Path == "" {
			return "/", nil
		}
		return m.Path, nil
	case "@query":
		return "?" + m.Query, nil
	case "@target-uri":
		scheme := m.Scheme
		if scheme == "" {
			scheme = "https"
		}
		u := scheme + "://" + strings.ToLower(m.Authority) + m.Path
		if m.Query != "" {
			u += "?" + m.Query
		}
		return u, nil
	}
	if strings.HasPrefix(c, "@") {
		return "", fmt.Errorf("%w: derived component %s is not supported", ErrMalformed, c)
	}
	var vals []string
	if m.Header != nil {
		vals = m.Header(c)
	}
	if len(vals) == 0 {
		return "", fmt.Errorf("%w: %s", ErrNoComponent, c)
	}
	for i, v := range vals {
		vals[i] = strings.TrimSpace(v)
	}
	return strings.Join(vals, ", "), nil
}

// Verify checks sig over m's base for p with pub.
func Verify(pub ed25519.PublicKey, m Message, p Params, sig []byte) error {
	base, err := Base(m, p)
	if err != nil {
		return err
	}
	if len(pub) != ed25519.PublicKeySize || !ed25519.Verify(pub, base, sig) {
		return ErrBadSignature
	}
	return nil
}

// Sign signs m for p with priv and returns the Signature-Input and
// Signature field values.
func Sign(priv ed25519.PrivateKey, m Message, p Params) (sigInput, signature string, err error) {
	base, err := Base(m, p)
	if err != nil {
		return "", "", err
	}
	sig := ed25519.Sign(priv, base)
	return p.Label + "=" + p.Serialize(), p.Label + "=:" + base64.StdEncoding.EncodeToString(sig) + ":", nil
}

// ContentDigest returns the Content-Digest field value of body (RFC 9530):
// sha-256=:<base64>:.
func ContentDigest(body []byte) string {
	sum := sha256.Sum256(body)
	return "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
}

// CheckContentDigest reports whether field (a Content-Digest value) holds a
// sha-256 digest equal to body's. Other algorithms are ignored; at least
// one sha-256 member must be present.
func CheckContentDigest(field string, body []byte) error {
	ms, err := dictionary(field)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	sum := sha256.Sum256(body)
	for _, m := range ms {
		if m.key != "sha-256" {
			continue
		}
		v := m.value
		if len(v) < 2 || v[0] != ':' || v[len(v)-1] != ':' {
			return fmt.Errorf("%w: Content-Digest sha-256 is not a byte sequence", ErrMalformed)
		}
		got, err := base64.StdEncoding.DecodeString(v[1 : len(v)-1])
		if err != nil || subtle.ConstantTimeCompare(got, sum[:]) != 1 {
			return ErrDigest
		}
		return nil
	}
	return fmt.Errorf("%w: Content-Digest has no sha-256 member", ErrMalformed)
}
