package api

import (
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"
)

// Loopback stands, among Config.PublicURLs, for every loopback name
// (localhost, 127.0.0.1, [::1]) on any port: a server used from its own
// machine, directly or through a local proxy.
const Loopback = "loopback"

// origins are the authorities a signature may cover: a request signed
// for another server (its @authority not one of them) is refused, so a
// signature made for one deployment is never taken by another.
type origins struct {
	exact    map[string]bool // host[:port], lowercase
	loopback bool
}

// parseOrigins reads Config.PublicURLs: URLs (scheme://host[:port]) and
// Loopback. None is Loopback alone.
//
// # Errors
//
// An entry that is neither.
func parseOrigins(urls []string) (origins, error) {
	o := origins{exact: map[string]bool{}}
	if len(urls) == 0 {
		urls = []string{Loopback}
	}
	for _, raw := range urls {
		raw = strings.TrimSpace(raw)
		if raw == Loopback {
			o.loopback = true
			continue
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || strings.Trim(u.Path, "/") != "" {
			return origins{}, fmt.Errorf("api: public URL %q: want scheme://host[:port], e.g. https://assay.example", raw)
		}
		host := strings.ToLower(u.Host)
		o.exact[host] = true
		// The default port, written or not, is the same authority.
		def := map[string]string{"http": "80", "https": "443"}[u.Scheme]
		if h, p, err := net.SplitHostPort(host); err == nil && p == def {
			o.exact[bracket(h)] = true
		} else if err != nil {
			o.exact[host+":"+def] = true
		}
	}
	return o, nil
}

// bracket writes an IPv6 host in brackets, as an authority holds it.
func bracket(h string) string {
	if strings.Contains(h, ":") {
		return "[" + h + "]"
	}
	return h
}

// has reports whether authority (a request's Host) is one of the origins.
func (o origins) has(authority string) bool {
	a := strings.ToLower(authority)
	if o.exact[a] {
		return true
	}
	if !o.loopback {
		return false
	}
	host := a
	if h, _, err := net.SplitHostPort(a); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// list names the origins, for /health and refusals.
func (o origins) list() []string {
	var out []string
	for h := range o.exact {
		out = append(out, h)
	}
	sort.Strings(out)
	if o.loopback {
		out = append(out, "localhost, 127.0.0.1 or [::1] on any port")
	}
	return out
}

func (o origins) String() string { return strings.Join(o.list(), "; ") }

// ParsePublicURLs checks Config.PublicURLs as New reads them, for a
// command's flags.
//
// # Errors
//
// An entry that is neither a URL (scheme://host[:port]) nor Loopback.
func ParsePublicURLs(urls []string) ([]string, error) {
	o, err := parseOrigins(urls)
	return o.list(), err
}
