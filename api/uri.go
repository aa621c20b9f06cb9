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

// URI names an instance: the NATS servers to reach (HOST:PORT, or several
// servers of one cluster, comma-separated) and the instance path. Its text
// form is strata://HOST:PORT/root/physics, or
// strata://h1:4222,h2:4222,h3:4222/root/physics for a cluster: a client
// connects to any of the servers. Parsed URIs are normalised (hosts in lower
// case, ports explicit, the servers in the order given), so two URIs of the
// same instance compare equal.
type URI struct {
	// Host is host:port as net.JoinHostPort makes it ("[::1]:4222"), or
	// several, joined by commas ("h1:4222,h2:4222"); see Hosts.
	Host string
	Path string // dot-separated instance path ("root.physics")
}

// MaxURIHosts bounds the servers a URI may list.
const MaxURIHosts = 32

// Hosts returns the servers of the URI, host:port each, in order.
func (u URI) Hosts() []string { return strings.Split(u.Host, ",") }

// ParseURI parses an instance URI. Accepted forms:
//
//	""                              the default, strata://127.0.0.1:4222/root
//	strata://HOST:PORT/root/physics an instance
//	strata://HOST:PORT  HOST:PORT   the root instance there
//	strata://HOST       HOST        port 4222
//	HOST:PORT/root/physics          the scheme may be left out
//	strata://H1:P1,H2:P2/root       any of several servers of one cluster
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
	host, err := parseHosts(hostport)
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

// parseHosts parses a comma-separated list of HOST[:PORT] into normalised
// host:port items joined by commas.
func parseHosts(list string) (string, error) {
	items := strings.Split(list, ",")
	if len(items) > MaxURIHosts {
		return "", Errorf(CodeInvalidArgument, "%d servers; a URI lists at most %d", len(items), MaxURIHosts)
	}
	seen := make(map[string]bool, len(items))
	out := make([]string, 0, len(items))
	for i, it := range items {
		if it == "" && len(items) > 1 {
			return "", Errorf(CodeInvalidArgument, "server %d of %q is empty; list servers as HOST:PORT,HOST:PORT", i+1, list)
		}
		h, err := parseHostPort(it)
		if err != nil {
			return "", err
		}
		if seen[h] {
			return "", Errorf(CodeInvalidArgument, "server %s is listed twice", h)
		}
		seen[h] = true
		out = append(out, h)
	}
	return strings.Join(out, ","), nil
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

// NATSURL returns the URLs of the NATS servers to connect to,
// nats://HOST:PORT, comma-separated as nats.Connect takes them.
func (u URI) NATSURL() string {
	hosts := u.Hosts()
	for i, h := range hosts {
		hosts[i] = "nats://" + h
	}
	return strings.Join(hosts, ",")
}

// WithPath returns the URI of another instance on the same server.
func (u URI) WithPath(path string) URI { return URI{Host: u.Host, Path: path} }
