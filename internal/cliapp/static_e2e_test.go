package cliapp

import (
	"debug/elf"
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
