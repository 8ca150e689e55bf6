package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/assayhq/assay/api/httpsig"
	"github.com/assayhq/assay/runtime/receipt"
)

func init() {
	register("sign", "sign an HTTP request (RFC 9421): print its headers for curl, or send it", cmdSign)
}

func signUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: assay sign --key FILE [--keyid ID] [-X METHOD] [-d BODY|@FILE] [--curl | --run] URL")
	fmt.Fprintln(w, "\nSigns one request with an Ed25519 key as Assay's signed routes take it (RFC 9421):")
	fmt.Fprintln(w, "covering @method, @path, @authority, @query when there is one, and content-digest")
	fmt.Fprintln(w, "(RFC 9530, sha-256), with created (now), a fresh nonce, keyid and alg=\"ed25519\".")
	fmt.Fprintln(w, "Without --keyid the keyid is the key's did:key, the agent id it signs as; give a")
	fmt.Fprintln(w, "registered principal's key id to sign as that principal.")
	fmt.Fprintln(w, "\nBy default it prints the headers, one per line (Content-Type, Content-Digest,")
	fmt.Fprintln(w, "Signature-Input, Signature); --curl prints a curl command; --run sends the request")
	fmt.Fprintln(w, "and prints the response body (exit 1 for a status of 400 or more). A signature is")
	fmt.Fprintln(w, "good for one request, within five minutes: its nonce is refused a second time.")
	fmt.Fprintln(w, "\nFILE holds the private key: standard base64 of its 32-byte seed (what 'assay")
	fmt.Fprintln(w, "principals keygen' writes) or of the 64-byte key, or a PKCS #8 PEM block.")
}

func cmdSign(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sign", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { signUsage(stderr); fmt.Fprintln(stderr); fs.PrintDefaults() }
	keyFile := fs.String("key", "", "`FILE` holding the Ed25519 private key")
	keyID := fs.String("keyid", "", "the signature's key `ID`; the key's did:key when empty")
	method := fs.String("X", "POST", "the request's `METHOD`")
	data := fs.String("d", "", "the request's `BODY`, or @FILE to read it from FILE (@- for stdin)")
	asCurl := fs.Bool("curl", false, "print a curl command that sends the signed request")
	run := fs.Bool("run", false, "send the signed request and print the response")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() != 1 || *keyFile == "" || (*asCurl && *run) {
		fmt.Fprintln(stderr, "assay sign: give --key FILE and one URL, and at most one of --curl and --run")
		return exitUsage
	}
	priv, err := readPrivateKey(*keyFile)
	if err != nil {
		fmt.Fprintf(stderr, "assay sign: %v\n", err)
		return exitUsage
	}
	body, err := readBody(*data, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "assay sign: -d: %v\n", err)
		return exitUsage
	}
	u, err := url.Parse(fs.Arg(0))
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		fmt.Fprintf(stderr, "assay sign: %q is not an http or https URL\n", fs.Arg(0))
		return exitUsage
	}
	id := *keyID
	if id == "" {
		id = receipt.DIDKey(priv.Public().(ed25519.PublicKey))
	}
	headers, err := signRequest(priv, id, strings.ToUpper(*method), u, body, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "assay sign: %v\n", err)
		return exitUsage
	}
	switch {
	case *run:
		return sendSigned(strings.ToUpper(*method), u, body, headers, stdout, stderr)
	case *asCurl:
		fmt.Fprintln(stdout, curlCommand(strings.ToUpper(*method), u.String(), body, headers))
	default:
		for _, h := range headers {
			fmt.Fprintf(stdout, "%s: %s\n", h[0], h[1])
		}
	}
	return exitOK
}

// readPrivateKey reads an Ed25519 private key: base64 of the seed or of
// the whole key, or PKCS #8 PEM.
func readPrivateKey(path string) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if blk, _ := pem.Decode(b); blk != nil {
		k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		if priv, ok := k.(ed25519.PrivateKey); ok {
			return priv, nil
		}
		return nil, fmt.Errorf("%s: not an Ed25519 key", path)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	switch {
	case err != nil:
	case len(raw) == ed25519.SeedSize:
		return ed25519.NewKeyFromSeed(raw), nil
	case len(raw) == ed25519.PrivateKeySize:
		return ed25519.PrivateKey(raw), nil
	}
	return nil, fmt.Errorf("%s: want base64 of a 32-byte Ed25519 seed or a 64-byte key, or a PKCS #8 PEM block", path)
}

func readBody(data string, stdin io.Reader) ([]byte, error) {
	switch {
	case data == "@-":
		return io.ReadAll(stdin)
	case strings.HasPrefix(data, "@"):
		return os.ReadFile(data[1:])
	}
	return []byte(data), nil
}

// signRequest returns the headers that sign a request: Content-Type (for a
// body), Content-Digest, Signature-Input and Signature.
func signRequest(priv ed25519.PrivateKey, keyID, method string, u *url.URL, body []byte, now time.Time) ([][2]string, error) {
	var nonce [16]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, err
	}
	digest := httpsig.ContentDigest(body)
	var headers [][2]string
	if len(body) > 0 {
		headers = append(headers, [2]string{"Content-Type", "application/json"})
	}
	headers = append(headers, [2]string{"Content-Digest", digest})
	components := []string{"@method", "@path", "@authority", "content-digest"}
	if u.RawQuery != "" {
		components = []string{"@method", "@path", "@query", "@authority", "content-digest"}
	}
	p := httpsig.Params{Label: "sig1", Components: components, Created: now.Unix(), KeyID: keyID,
		Nonce: base64.RawURLEncoding.EncodeToString(nonce[:]), Alg: "ed25519"}
	m := httpsig.Message{Method: method, Authority: u.Host, Path: u.EscapedPath(), Query: u.RawQuery, Scheme: u.Scheme,
		Header: func(n string) []string {
			if n == "content-digest" {
				return []string{digest}
			}
			return nil
		}}
	in, sig, err := httpsig.Sign(priv, m, p)
	if err != nil {
		return nil, err
	}
	return append(headers, [2]string{"Signature-Input", in}, [2]string{"Signature", sig}), nil
}

// curlCommand is a shell command line that sends the request.
func curlCommand(method, u string, body []byte, headers [][2]string) string {
	parts := []string{"curl", "-sS", "-X", method, shellQuote(u)}
	for _, h := range headers {
		parts = append(parts, "-H", shellQuote(h[0]+": "+h[1]))
	}
	if len(body) > 0 {
		parts = append(parts, "--data-binary", shellQuote(string(body)))
	}
	return strings.Join(parts, " ")
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func sendSigned(method string, u *url.URL, body []byte, headers [][2]string, stdout, stderr io.Writer) int {
	req, err := http.NewRequest(method, u.String(), bytes.NewReader(body))
	if err != nil {
		fmt.Fprintf(stderr, "assay sign: %v\n", err)
		return exitUsage
	}
	for _, h := range headers {
		req.Header.Set(h[0], h[1])
	}
	client := &http.Client{Timeout: 2 * time.Minute}
	res, err := client.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "assay sign: %v\n", err)
		return exitNo
	}
	defer res.Body.Close()
	fmt.Fprintf(stderr, "%s %s: %s\n", method, u, res.Status)
	if _, err := io.Copy(stdout, res.Body); err != nil {
		fmt.Fprintf(stderr, "assay sign: %v\n", err)
		return exitNo
	}
	if res.StatusCode >= 400 {
		return exitNo
	}
	return exitOK
}
