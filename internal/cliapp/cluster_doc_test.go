package cliapp

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// docBlock is a fenced code block of a document: its language and lines.
type docBlock struct {
	lang  string
	lines []string
	line  int // of the opening fence, 1-based
}

// docBlocks returns the fenced code blocks of a Markdown text.
func docBlocks(text string) []docBlock {
	var blocks []docBlock
	var cur *docBlock
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(l, "```"):
			cur = &docBlock{lang: strings.TrimSpace(strings.TrimPrefix(l, "```")), line: n}
		case cur != nil && strings.TrimSpace(l) == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, l)
		}
	}
	return blocks
}

// docHosts maps the first line of a block ("# on the broker host") to the
// hosts it runs on.
func docHosts(first string) []string {
	switch {
	case strings.HasPrefix(first, "# on the admin's workstation"):
		return []string{"admin"}
	case strings.HasPrefix(first, "# on each of h1, h2 and h3"):
		return []string{"h1", "h2", "h3"}
	case strings.HasPrefix(first, "# on the broker host"):
		return []string{"broker"}
	}
	return nil
}

// docCluster runs the commands of docs/cluster.md with each host a
// directory under root and its ports on 127.0.0.1.
type docCluster struct {
	t       *testing.T
	root    string
	bin     string // strata, strata-broker and nats-server
	client  map[string]int
	route   map[string]int
	daemons []*exec.Cmd
}

var (
	hostPortRe = regexp.MustCompile(`\b(h[1-3]):(4222|6222)\b`)
	scpHostRe  = regexp.MustCompile(`\b(h[1-3]|broker):/`)
	hostPathRe = regexp.MustCompile(`(^|[\s=])(/etc/nats|/var/lib/nats|/etc/strata|/var/lib/strata)`)
)

// mapLine rewrites a line of the document for host: host names and ports
// to 127.0.0.1 and the mapped ports, absolute paths and scp targets to the
// host directories, scp to cp.
func (d *docCluster) mapLine(host, l string) string {
	l = hostPortRe.ReplaceAllStringFunc(l, func(m string) string {
		h, p, _ := strings.Cut(m, ":")
		if p == "4222" {
			return "127.0.0.1:" + strconv.Itoa(d.client[h])
		}
		return "127.0.0.1:" + strconv.Itoa(d.route[h])
	})
	l = strings.ReplaceAll(l, "0.0.0.0:4222", "127.0.0.1:"+strconv.Itoa(d.client[host]))
	l = strings.ReplaceAll(l, "0.0.0.0:6222", "127.0.0.1:"+strconv.Itoa(d.route[host]))
	l = hostPathRe.ReplaceAllStringFunc(l, func(m string) string {
		i := strings.IndexByte(m, '/')
		owner := host
		if strings.HasSuffix(m, "strata") {
			owner = "broker"
		}
		return m[:i] + filepath.Join(d.root, owner) + m[i:]
	})
	l = scpHostRe.ReplaceAllStringFunc(l, func(m string) string {
		return filepath.Join(d.root, strings.TrimSuffix(m, ":/")) + "/"
	})
	if strings.HasPrefix(l, "scp ") {
		l = "cp " + strings.TrimPrefix(l, "scp ")
	}
	// On a real site alice has an account on every node; here she has
	// none, so the test's broker runs her job as the test's own account
	// (TestE2ERunAsUser covers jobs run as their users).
	if strings.HasPrefix(l, "strata broker start ") {
		l += " --run-as-self"
		if os.Geteuid() == 0 {
			l += " --allow-root-jobs"
		}
	}
	return l
}

func (d *docCluster) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "STRATA_") && !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return append(env, "PATH="+d.bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// runScript runs lines with sh -e on host and returns their output.
func (d *docCluster) runScript(host string, lines []string, at int) string {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-e", "-x", "-c", strings.Join(lines, "\n"))
	cmd.Dir = filepath.Join(d.root, host)
	cmd.Env = d.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		d.t.Fatalf("docs/cluster.md, block at line %d, on %s: %v\n%s", at, host, err, out)
	}
	return string(out)
}

// startDaemon starts a long-running command of the document in the
// background, as its service manager would.
func (d *docCluster) startDaemon(host, line string, at int) {
	d.t.Helper()
	logPath := filepath.Join(d.root, host, fmt.Sprintf("daemon-%d.log", len(d.daemons)))
	logf, err := os.Create(logPath)
	if err != nil {
		d.t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command("sh", "-c", "exec "+line)
	cmd.Dir = filepath.Join(d.root, host)
	cmd.Env = d.env()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	d.daemons = append(d.daemons, cmd)
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	d.t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		if d.t.Failed() {
			log, _ := os.ReadFile(logPath)
			d.t.Logf("%s on %s:\n%s", line, host, log)
		}
	})
	ready := func() bool {
		if strings.HasPrefix(line, "nats-server") {
			c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(d.client[host]), time.Second)
			if err == nil {
				c.Close()
			}
			return err == nil
		}
		admin := filepath.Join(d.root, "broker", "var", "lib", "strata", "admin.creds")
		if _, err := os.Stat(admin); err != nil {
			return false
		}
		w := exec.Command(filepath.Join(d.bin, "strata"), "whoami", "--creds", admin, "--uri", "strata://127.0.0.1:"+strconv.Itoa(d.client["h1"])+"/root")
		w.Env = d.env()
		return w.Run() == nil
	}
	deadline := time.Now().Add(90 * time.Second)
	for !ready() {
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			d.t.Fatalf("docs/cluster.md, block at line %d, on %s: %q exited:\n%s", at, host, line, log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			d.t.Fatalf("docs/cluster.md, block at line %d, on %s: %q not ready within 90s:\n%s", at, host, line, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var (
	natsServerOnce sync.Once
	natsServerErr  error
)

// buildNatsServer builds the nats-server program of the module's own
// dependency into dir, once per test process.
func buildNatsServer(t *testing.T, dir string) {
	t.Helper()
	natsServerOnce.Do(func() {
		out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "nats-server"), "github.com/nats-io/nats-server/v2").CombinedOutput()
		if err != nil {
			natsServerErr = fmt.Errorf("go build nats-server: %v\n%s", err, out)
		}
	})
	if natsServerErr != nil {
		t.Fatal(natsServerErr)
	}
}

// TestClusterDoc runs every command of docs/cluster.md: nats init, three
// real nats-server processes from the configuration the page shows, the
// broker with --replicas 3, a user and a job. The page and Strata must
// agree: a command that fails, or a configuration the servers refuse,
// fails the test.
func TestClusterDoc(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test; skipped with -short")
	}
	text, err := os.ReadFile("../../docs/cluster.md")
	if err != nil {
		t.Fatal(err)
	}
	d := &docCluster{t: t, root: t.TempDir(), bin: filepath.Dir(strataBinary(t)), client: map[string]int{}, route: map[string]int{}}
	buildNatsServer(t, d.bin)
	for _, h := range []string{"admin", "h1", "h2", "h3", "broker"} {
		if err := os.Mkdir(filepath.Join(d.root, h), 0o755); err != nil {
			t.Fatal(err)
		}
		d.client[h], d.route[h] = freePort(t), freePort(t)
	}
	var output strings.Builder
	var ran, confs int
	for _, b := range docBlocks(string(text)) {
		if len(b.lines) == 0 {
			continue
		}
		switch b.lang {
		case "conf":
			// "# /etc/nats/nats.conf on h1 (...)": written on every server.
			path, _, _ := strings.Cut(strings.TrimPrefix(b.lines[0], "# "), " ")
			for _, h := range []string{"h1", "h2", "h3"} {
				var conf []string
				for _, l := range b.lines {
					if strings.HasPrefix(l, "server_name: ") {
						l = "server_name: " + h
					}
					conf = append(conf, d.mapLine(h, l))
				}
				dst := d.mapLine(h, path)
				if err := os.WriteFile(dst, []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
					t.Fatalf("docs/cluster.md, block at line %d: %v", b.line, err)
				}
			}
			confs++
		case "sh":
			hosts := docHosts(b.lines[0])
			if hosts == nil {
				t.Fatalf("docs/cluster.md, block at line %d: the first line %q does not say where it runs ('# on the admin's workstation', '# on each of h1, h2 and h3', '# on the broker host')", b.line, b.lines[0])
			}
			for _, h := range hosts {
				var script []string
				for _, l := range b.lines {
					l = strings.TrimSpace(l)
					if l == "" || strings.HasPrefix(l, "#") {
						continue
					}
					l = d.mapLine(h, l)
					if strings.HasPrefix(l, "nats-server ") || strings.HasPrefix(l, "strata broker start ") {
						if len(script) > 0 {
							output.WriteString(d.runScript(h, script, b.line))
							script = nil
						}
						d.startDaemon(h, l, b.line)
					} else {
						script = append(script, l)
					}
					ran++
				}
				if len(script) > 0 {
					output.WriteString(d.runScript(h, script, b.line))
				}
			}
		default:
			t.Fatalf("docs/cluster.md, block at line %d: language %q; the test runs sh and conf blocks only", b.line, b.lang)
		}
	}
	if confs != 1 || len(d.daemons) != 4 {
		t.Fatalf("docs/cluster.md: %d server configurations, %d daemons started; want 1 and 3 servers and a broker", confs, len(d.daemons))
	}
	if !strings.Contains(output.String(), "hello from the cluster") {
		t.Errorf("the user's job did not print its greeting:\n%s", output.String())
	}

	// The servers take the operator's accounts: nobody gets in without
	// credentials.
	for _, h := range []string{"h1", "h2", "h3"} {
		if nc, err := nats.Connect("nats://127.0.0.1:" + strconv.Itoa(d.client[h])); err == nil {
			nc.Close()
			t.Errorf("server %s lets a client in without credentials: is the fragment included?", h)
		}
	}
	// The state has three replicas, on the three servers.
	creds := filepath.Join(d.root, "admin", "strata-nats", "broker.creds")
	nc, err := nats.Connect("nats://127.0.0.1:"+strconv.Itoa(d.client["h2"]), nats.UserCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, name := range []string{"KV_strata_users", "KV_strata_jobs"} {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatalf("stream %s: %v", name, err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.Config.Replicas != 3 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
			t.Errorf("stream %s: %d replicas, cluster %+v; want 3", name, info.Config.Replicas, info.Cluster)
		}
	}
	// Only what the page says goes to the broker host is there.
	var files []string
	filepath.Walk(filepath.Join(d.root, "broker"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && strings.HasSuffix(p, ".nk") {
			files = append(files, filepath.Base(p))
		}
		return nil
	})
	if !bytes.Equal([]byte(strings.Join(files, " ")), []byte("signing.nk")) {
		t.Errorf("keys on the broker host: %v, want signing.nk alone", files)
	}
	t.Logf("ran %d commands of docs/cluster.md", ran)
}
