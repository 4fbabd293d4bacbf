package ratelimit

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The URL schemes OpenRedis accepts.
const (
	schemeRedis          = "redis"           // one server
	schemeRedisTLS       = "rediss"          // one server over TLS
	schemeUnix           = "unix"            // one server over a Unix socket
	schemeCluster        = "redis+cluster"   // Redis Cluster: seed nodes as host and addr= parameters
	schemeClusterTLS     = "rediss+cluster"  // Redis Cluster over TLS
	schemeSentinel       = "redis+sentinel"  // Sentinel: sentinels as host and addr=, master_name= required
	schemeSentinelTLS    = "rediss+sentinel" // Sentinel over TLS
	redisSupportedScheme = "redis://, rediss://, unix://, redis+cluster://, rediss+cluster://, redis+sentinel://, rediss+sentinel://"
)

// OpenRedis builds a go-redis client from a URL. The forms are:
//
//	redis://[user:pass@]host:port[/db][?option=value…]    one server
//	rediss://…                                            the same over TLS
//	unix://[user:pass@]/path/redis.sock[?db=N]            one server over a Unix socket
//	redis+cluster://host:port?addr=host2:port&addr=…      Redis Cluster (rediss+cluster for TLS)
//	redis+sentinel://sentinel:26379?master_name=mymaster&addr=… Sentinel-managed primary (rediss+sentinel for TLS)
//	redis://host1:port,host2:port[?option=value…]           a comma list of hosts: Redis Cluster seed nodes
//
// Redis Cluster has only database 0: a cluster URL (either form) with
// another database in its path is an error. So are what would only fail
// every dial later, looking like Redis down: a unix URL with a host or
// without a socket path, a port outside 1–65535, a negative database.
//
// Options are go-redis's snake_case URL parameters (dial_timeout, pool_size,
// …); an unknown option is an error. go-redis v9.23 has no single universal
// URL parser, so the scheme picks ParseURL, ParseClusterURL or
// ParseFailoverURL.
//
// Two defaults differ from go-redis's because a rate limit decision has a
// deadline of a few milliseconds and its scripts are not idempotent: unless
// the URL sets them, max_retries=-1 (no automatic command retry, which could
// count one request twice), context_timeout_enabled=true (the caller's
// context deadline bounds socket reads and writes, not a 5 s read timeout).
// A third, dialer_retries=1, makes a refused connection fail the waiting
// decision at once rather than after go-redis's 5 dial attempts 100 ms
// apart. context_timeout_enabled and dialer_retries are accepted in every
// form.
//
// OpenRedis does not connect; the first command does. Errors never include
// the URL's password.
func OpenRedis(rawURL string) (redis.UniversalClient, error) {
	if strings.TrimSpace(rawURL) == "" {
		return nil, errors.New("ratelimit: redis URL is empty; want e.g. redis://127.0.0.1:6379/0")
	}
	rawURL, err := expandHostList(rawURL)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Parse quotes the whole input in its error; do not echo a
		// password back.
		return nil, fmt.Errorf("ratelimit: redis URL does not parse (want e.g. redis://127.0.0.1:6379/0): %w", redactURLError(err))
	}
	shown := u.Redacted()
	query := u.Query()
	noRetry := !query.Has("max_retries")
	ctxTimeout, dialRetries, err := takeCommonOptions(query)
	if err != nil {
		return nil, fmt.Errorf("ratelimit: redis URL %q: %w", shown, err)
	}
	u.RawQuery = query.Encode()
	rawURL = u.String()

	if err := checkAddrs(u); err != nil {
		return nil, fmt.Errorf("ratelimit: redis URL %q: %w", shown, err)
	}
	base, kind, _ := strings.Cut(u.Scheme, "+")
	switch u.Scheme {
	case schemeRedis, schemeRedisTLS, schemeUnix:
		if u.Scheme != schemeUnix && u.Host == "" {
			return nil, fmt.Errorf("ratelimit: redis URL %q has no host", shown)
		}
		o, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("ratelimit: redis URL %q: %w", shown, err)
		}
		if o.DB < 0 {
			return nil, fmt.Errorf("ratelimit: redis URL %q: database %d, want ≥ 0", shown, o.DB)
		}
		if noRetry {
			o.MaxRetries = -1
		}
		o.ContextTimeoutEnabled = ctxTimeout
		o.DialerRetries = dialRetries
		return redis.NewClient(o), nil
	case schemeCluster, schemeClusterTLS:
		if u.Host == "" {
			return nil, fmt.Errorf("ratelimit: redis URL %q has no seed node", shown)
		}
		// go-redis's cluster parser ignores the path: a /2 would be
		// dropped without a word, and the limits would share database 0
		// with whatever else lives there.
		if db := strings.Trim(u.Path, "/"); db != "" && db != "0" {
			return nil, fmt.Errorf("ratelimit: redis %s URL %q: path %q: Redis Cluster has only database 0; drop the path", kind, shown, u.Path)
		}
		v := *u
		v.Scheme = base
		o, err := redis.ParseClusterURL(v.String())
		if err != nil {
			return nil, fmt.Errorf("ratelimit: redis %s URL %q: %w", kind, shown, err)
		}
		if noRetry {
			o.MaxRetries = -1
		}
		o.ContextTimeoutEnabled = ctxTimeout
		o.DialerRetries = dialRetries
		return redis.NewClusterClient(o), nil
	case schemeSentinel, schemeSentinelTLS:
		if u.Host == "" {
			return nil, fmt.Errorf("ratelimit: redis URL %q has no sentinel address", shown)
		}
		if query.Get("master_name") == "" {
			return nil, fmt.Errorf("ratelimit: redis %s URL %q: missing master_name parameter (the name the sentinels monitor)", kind, shown)
		}
		v := *u
		v.Scheme = base
		o, err := redis.ParseFailoverURL(v.String())
		if err != nil {
			return nil, fmt.Errorf("ratelimit: redis %s URL %q: %w", kind, shown, err)
		}
		if noRetry {
			o.MaxRetries = -1
		}
		o.ContextTimeoutEnabled = ctxTimeout
		o.DialerRetries = dialRetries
		return redis.NewFailoverClient(o), nil
	case "":
		return nil, fmt.Errorf("ratelimit: redis URL %q has no scheme; want one of %s", shown, redisSupportedScheme)
	default:
		return nil, fmt.Errorf("ratelimit: redis URL %q: unsupported scheme %q; want one of %s", shown, u.Scheme, redisSupportedScheme)
	}
}

// takeCommonOptions takes context_timeout_enabled (default true) and
// dialer_retries (default 1) out of query: go-redis parses them only for
// some forms, and OpenRedis applies them to every form.
func takeCommonOptions(query url.Values) (ctxTimeout bool, dialRetries int, err error) {
	ctxTimeout, dialRetries = true, 1
	if query.Has("context_timeout_enabled") {
		v := query.Get("context_timeout_enabled")
		if ctxTimeout, err = strconv.ParseBool(v); err != nil {
			return false, 0, fmt.Errorf("option context_timeout_enabled=%q, want true or false", v)
		}
		query.Del("context_timeout_enabled")
	}
	if query.Has("dialer_retries") {
		v := query.Get("dialer_retries")
		if dialRetries, err = strconv.Atoi(v); err != nil || dialRetries < 1 {
			return false, 0, fmt.Errorf("option dialer_retries=%q, want an integer ≥ 1", v)
		}
		query.Del("dialer_retries")
	}
	return ctxTimeout, dialRetries, nil
}

// checkAddrs refuses what go-redis would take and then fail to dial on
// every attempt, which a gateway would only see as Redis down: a unix URL
// with a host (unix://relative/path.sock dials /path.sock; the socket path
// must be absolute, unix:///path) or without a socket path, and a port
// outside 1–65535 in the host or an addr= parameter.
func checkAddrs(u *url.URL) error {
	if u.Scheme == schemeUnix {
		if u.Host != "" {
			return fmt.Errorf("host %q in a unix URL: the socket path must be absolute, unix:///path/to/redis.sock", u.Host)
		}
		if strings.Trim(u.Path, "/") == "" {
			return errors.New("no socket path; want unix:///path/to/redis.sock")
		}
		return nil
	}
	for _, hp := range append([]string{u.Host}, u.Query()["addr"]...) {
		port := (&url.URL{Host: hp}).Port()
		if port == "" {
			continue // none: the default
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("address %q: port %q, want 1–65535", hp, port)
		}
	}
	return nil
}

// redactURLError drops the URL text from a *url.Error, keeping the reason.
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// expandHostList rewrites a URL whose host part is a comma list,
// scheme://[userinfo@]h1:p1,h2:p2[/path][?query], into the cluster form
// redis+cluster://[userinfo@]h1:p1[/path]?query&addr=h2:p2. Other URLs are
// returned unchanged.
func expandHostList(raw string) (string, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw, nil
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	userinfo, hosts := "", authority
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		userinfo, hosts = authority[:i+1], authority[i+1:]
	}
	if !strings.Contains(hosts, ",") {
		return raw, nil
	}
	switch scheme {
	case schemeRedis, schemeRedisTLS:
		scheme += "+cluster"
	case schemeCluster, schemeClusterTLS, schemeSentinel, schemeSentinelTLS:
	default:
		return "", fmt.Errorf("ratelimit: redis URL: a comma list of hosts needs scheme redis, rediss, redis+cluster or redis+sentinel, not %q", scheme)
	}
	list := strings.Split(hosts, ",")
	for _, h := range list {
		if strings.TrimSpace(h) == "" {
			return "", fmt.Errorf("ratelimit: redis URL: empty host in the comma list %q", hosts)
		}
	}
	path, query, _ := strings.Cut(tail, "?")
	extra := make([]string, 0, len(list)-1)
	for _, h := range list[1:] {
		extra = append(extra, "addr="+url.QueryEscape(strings.TrimSpace(h)))
	}
	if query != "" {
		query += "&"
	}
	query += strings.Join(extra, "&")
	return scheme + "://" + userinfo + strings.TrimSpace(list[0]) + path + "?" + query, nil
}

// redactedURL is rawURL as errors may show it: with its password replaced
// by "xxxxx", or a placeholder when it does not parse.
func redactedURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(the configured URL)"
	}
	return u.Redacted()
}
