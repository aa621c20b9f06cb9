package cliapp

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

func TestRoffEscape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain words", "plain words"},
		{"strata man | man -l -", `strata man | man \-l \-`},
		{"--uri", `\-\-uri`},
		{`C:\path`, `C:\epath`},
		{".hidden starts with a dot", `\&.hidden starts with a dot`},
		{"'quoted' at the start", `\&'quoted' at the start`},
		{"a . and a ' inside", "a . and a ' inside"},
		{"", ""},
	} {
		if got := roffEscape(tc.in); got != tc.want {
			t.Errorf("roffEscape(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestManRenders formats 'strata man' with groff, as man does: no warning
// (-ww), and the text shows every command's usage and every option of
// every command, as typed (ASCII dashes).
func TestManRenders(t *testing.T) {
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Skip("groff is not installed: nothing to render the page with")
	}
	page, code, err := runStrata("man")
	if code != 0 {
		t.Fatalf("strata man: exit %d, %v", code, err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(groff, "-man", "-Tascii", "-P-cbou", "-ww", "-rLL=200n")
	cmd.Stdin, cmd.Stderr = strings.NewReader(page), &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("groff: %v\n%s", err, &stderr)
	}
	text := strings.Join(strings.Fields(string(out)), " ")
	has := func(what, s string) {
		t.Helper()
		if s = strings.Join(strings.Fields(s), " "); !strings.Contains(text, s) {
			t.Errorf("the rendered page lacks %s %q", what, s)
		}
	}
	has("the name line", "strata - a hierarchical resource broker")
	has("the header, in section 1 (user commands)", "strata(1)")
	has("the exit codes", "EXIT STATUS 0 the command did what it was asked 1 it failed")
	has("the usage exit code", "2 usage: an unknown command or flag")
	var walk func(path string, cmds []*cli.Command)
	walk = func(path string, cmds []*cli.Command) {
		for _, c := range cmds {
			if c.Hidden {
				continue
			}
			name := strings.TrimSpace(path + " " + c.Name)
			has("the usage of "+name, c.Usage)
			if c.UsageText != "" {
				has("the usage line of "+name, c.UsageText)
			}
			for _, f := range c.Flags {
				if vf, ok := f.(cli.VisibleFlag); ok && !vf.IsVisible() {
					continue
				}
				n := f.Names()[0]
				if len(n) > 1 {
					has("an option of "+name, "--"+n)
				}
				if d, ok := f.(cli.DocGenerationFlag); ok {
					has("the usage of "+name+" --"+n, d.GetUsage())
				}
			}
			walk(name, c.Subcommands)
		}
	}
	walk("", newApp().Commands)
}
