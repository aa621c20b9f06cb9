package api

import (
	"net"
	"strconv"
	"strings"
)

// Environment variables every Strata program honours.
const (
	// EnvURI holds the URI of the instance a command targets (jobs get the
	// URI of their enclosing instance).
	EnvURI = "STRATA_URI"
	// EnvCreds holds the path of the NATS credentials file to connect with.
	EnvCreds = "STRATA_CREDS"
)

// URI defaults.
const (
	URIScheme   = "strata"
	DefaultHost = "127.0.0.1"
	DefaultPort = 4222
)

// DefaultURI is the local root instance: strata://127.0.0.1:4222/root.
var DefaultURI = URI{Host: net.JoinHostPort(DefaultHost, strconv.Itoa(DefaultPort)), Path: RootPath}

// URI names an instance: the NATS server to reach (HOST:PORT) and the
// instance path. Its text form is strata://HOST:PORT/root/physics. Parsed
// URIs are normalised (host in lower case, port explicit), so two URIs of the
// same instance compare equal.
type URI struct {
	Host string // host:port, as net.JoinHostPort makes it ("[::1]:4222")
	Path string // dot-separated instance path ("root.physics")
}

// ParseURI parses an instance URI. Accepted forms:
//
//	""                              the default, strata://127.0.0.1:4222/root
//	strata://HOST:PORT/root/physics an instance
//	strata://HOST:PORT  HOST:PORT   the root instance there
//	strata://HOST       HOST        port 4222
//	HOST:PORT/root/physics          the scheme may be left out
//
// HOST is a DNS name, an IPv4 address or a bracketed IPv6 address. Errors are
// invalid_argument errors that say what is wrong.
func ParseURI(s string) (URI, error) {
	if s == "" {
		return DefaultURI, nil
	}
	rest := s
	if scheme, r, ok := strings.Cut(s, "://"); ok {
		if scheme != URIScheme {
			return URI{}, Errorf(CodeInvalidArgument, "invalid Strata URI %q: the scheme is %q, not %q (as in strata://127.0.0.1:4222/root)", s, scheme, URIScheme)
		}
		rest = r
	}
	hostport, path, _ := strings.Cut(rest, "/")
	host, err := parseHostPort(hostport)
	if err != nil {
		return URI{}, Errorf(CodeInvalidArgument, "invalid Strata URI %q: %s", s, err.Error())
	}
	path = strings.TrimSuffix(path, "/")
	if path == "" {
		return URI{Host: host, Path: RootPath}, nil
	}
	segs := strings.Split(path, "/")
	if segs[0] != RootPath {
		return URI{}, Errorf(CodeInvalidArgument, "invalid Strata URI %q: the instance path must start with /%s, as in strata://%s/%s/%s", s, RootPath, host, RootPath, path)
	}
	for _, seg := range segs[1:] {
		if !nameRe.MatchString(seg) {
			return URI{}, Errorf(CodeInvalidArgument, "invalid Strata URI %q: %q is not an instance name (1-32 lower-case letters, digits, '_' or '-')", s, seg)
		}
	}
	p := strings.Join(segs, ".")
	if err := ValidatePath(p); err != nil {
		return URI{}, Errorf(CodeInvalidArgument, "invalid Strata URI %q: %s", s, err.Error())
	}
	return URI{Host: host, Path: p}, nil
}

func parseHostPort(hp string) (string, error) {
	if hp == "" {
		return "", Errorf(CodeInvalidArgument, "no host")
	}
	h, p, err := net.SplitHostPort(hp)
	if err != nil {
		// No port: the default one.
		h, p, err = net.SplitHostPort(hp + ":" + strconv.Itoa(DefaultPort))
		if err != nil {
			return "", Errorf(CodeInvalidArgument, "%q is not HOST or HOST:PORT", hp)
		}
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 || p[0] == '+' {
		return "", Errorf(CodeInvalidArgument, "port %q is not a number from 1 to 65535", p)
	}
	if ip := net.ParseIP(h); ip != nil && !strings.Contains(h, "%") {
		h = ip.String()
	} else {
		h = strings.ToLower(h)
		if !validHostname(h) {
			return "", Errorf(CodeInvalidArgument, "%q is not a host name or IP address", h)
		}
	}
	return net.JoinHostPort(h, strconv.Itoa(port)), nil
}

// String returns the URI's text form, strata://HOST:PORT/root/physics.
func (u URI) String() string {
	return URIScheme + "://" + u.Host + "/" + strings.ReplaceAll(u.Path, ".", "/")
}

// NATSURL returns the URL of the NATS server to connect to, nats://HOST:PORT.
func (u URI) NATSURL() string { return "nats://" + u.Host }

// WithPath returns the URI of another instance on the same server.
func (u URI) WithPath(path string) URI { return URI{Host: u.Host, Path: path} }
