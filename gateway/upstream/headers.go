package upstream

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// reservedHeaders are the headers the pool or net/http sets on every
// upstream request; Config.Headers may not name them.
var reservedHeaders = []string{
	"Host", "Content-Length", "Content-Type", "Transfer-Encoding", "Connection",
	"Keep-Alive", "Te", "Trailer", "Upgrade", "Proxy-Connection", DeadlineHeader,
}

// validateHeaders checks Config.Headers: HTTP token names, unique once
// canonicalised, none of the reservedHeaders, values without control
// characters (a CR or LF would split the request).
func (c Config) validateHeaders() error {
	seen := make(map[string]string, len(c.Headers))
	names := make([]string, 0, len(c.Headers))
	for name := range c.Headers {
		names = append(names, name)
	}
	slices.Sort(names) // the first error is the same on every run
	for _, name := range names {
		f := "headers." + name
		if !validHeaderName(name) {
			return &FieldError{f, fmt.Sprintf("%q is not a valid HTTP header name", name)}
		}
		canon := http.CanonicalHeaderKey(name)
		if slices.Contains(reservedHeaders, canon) {
			return &FieldError{f, "the gateway sets " + canon + " itself"}
		}
		if other, dup := seen[canon]; dup {
			return &FieldError{f, fmt.Sprintf("duplicates %q (header names ignore case)", other)}
		}
		seen[canon] = name
		if i := strings.IndexFunc(c.Headers[name], func(r rune) bool { return (r < ' ' && r != '\t') || r == 0x7f }); i >= 0 {
			return &FieldError{f, fmt.Sprintf("value has a control character at byte %d", i)}
		}
	}
	return nil
}

// validHeaderName reports whether s is an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("!#$%&'*+-.^_`|~", r):
		default:
			return false
		}
	}
	return true
}

// headerOf returns m as an http.Header with canonical names, or nil when m
// is empty.
func headerOf(m map[string]string) http.Header {
	if len(m) == 0 {
		return nil
	}
	h := make(http.Header, len(m))
	for k, v := range m {
		h.Set(k, v)
	}
	return h
}

// setHeaders sets the pool's configured headers on req (model calls and
// health checks alike), over any the caller set.
func (p *Pool) setHeaders(req *http.Request) {
	for k, v := range p.header {
		req.Header[k] = v
	}
}
