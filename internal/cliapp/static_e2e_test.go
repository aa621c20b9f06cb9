package cliapp

import (
	"debug/buildinfo"
	"debug/elf"
	"strings"
	"testing"
)

// TestFrontEndStatic checks that the front end, built as the README builds
// it (CGO_ENABLED=0, see cmd/strata), is a static executable: no program
// interpreter and no shared libraries, so that every command is spared the
// dynamic loader and cgo's thread start-up.
func TestFrontEndStatic(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the strata programs; skipped with -short")
	}
	f, err := elf.Open(e2eBinary(t))
	if err != nil {
		t.Skipf("not an ELF executable (%v): nothing to check on this system", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the strata front end has a program interpreter: it is linked dynamically (built with cgo?)")
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	if len(libs) > 0 {
		t.Errorf("the strata front end needs shared libraries %q: it is linked dynamically (built with cgo?)", libs)
	}
}

// TestFrontEndLinks reads the build information of the front end, built as
// the README builds it: built with BuildTags, and linking none of the
// modules whose initialisation every command would pay for and none uses:
// the NATS server and the Prometheus client (the broker's), nats.go (its
// encoders, WebSocket and compression support; the front end speaks NATS
// through package natsconn, and its daemons run in strata-broker), and
// the Markdown renderers of urfave/cli's ToMan ('strata man' is writeMan),
// nkeys and jwt (package client reads .creds files itself; 'strata nats
// init', which mints keys, runs in strata-broker). Nor does it link any
// package of the broker, broker/executor included ('strata run' expands
// output paths with internal/outpath): buildinfo lists modules, so those
// are looked for in the symbol table.
func TestFrontEndLinks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the strata programs; skipped with -short")
	}
	bi, err := buildinfo.ReadFile(e2eBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	tags := ""
	for _, s := range bi.Settings {
		if s.Key == "-tags" {
			tags = s.Value
		}
	}
	if tags != BuildTags {
		t.Errorf("the front end was built with tags %q, want %q", tags, BuildTags)
	}
	for _, d := range bi.Deps {
		for _, unwanted := range []string{"github.com/nats-io/nats-server", "github.com/nats-io/nats.go", "github.com/nats-io/nuid", "github.com/nats-io/nkeys", "github.com/nats-io/jwt", "github.com/klauspost/compress", "github.com/prometheus/", "github.com/russross/blackfriday", "github.com/cpuguy83/go-md2man", "golang.org/x/crypto"} {
			if strings.HasPrefix(d.Path, unwanted) {
				t.Errorf("the front end links %s %s", d.Path, d.Version)
			}
		}
	}

	f, err := elf.Open(e2eBinary(t))
	if err != nil {
		t.Skipf("not an ELF executable (%v): cannot look for the broker's packages", err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Skipf("no symbol table (%v): cannot look for the broker's packages", err)
	}
	linked := map[string]bool{}
	for _, s := range syms {
		name := strings.TrimPrefix(s.Name, "type:")
		for _, p := range []string{"github.com/strata-hpc/strata/broker.", "github.com/strata-hpc/strata/broker/", "github.com/strata-hpc/strata/internal/natssetup.",
			// 'strata sim' runs in strata-broker (SimCommand).
			"github.com/strata-hpc/strata/sim.", "github.com/strata-hpc/strata/internal/simcli.", "github.com/strata-hpc/strata/internal/swf.", "compress/gzip.", "compress/flate."} {
			if strings.HasPrefix(name, p) {
				pkg, _, _ := strings.Cut(strings.TrimPrefix(name, "github.com/strata-hpc/strata/"), ".")
				linked[pkg] = true
			}
		}
	}
	for pkg := range linked {
		t.Errorf("the front end links package %s", pkg)
	}
}
