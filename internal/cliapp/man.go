package cliapp

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// writeMan writes the manual page of app (roff, man macros) from its
// commands and flags, so that it never lags behind them: the name, the
// synopsis, the global options, then every visible command as a section
// (.SH) and its subcommands as subsections (.SS), each with its usage,
// usage line, description and options, and last what the exit codes mean
// (the app's description carries the same text to --help).
//
// It is strata's own rather than urfave/cli's App.ToMan, which renders
// Markdown through blackfriday: that package's initialisation (about half
// a millisecond, and 200 kB of allocations) ran at the start of every
// command, and the front end is built without it (FrontEndTags).
func writeMan(w io.Writer, app *cli.App) error {
	m := &manWriter{w: w}
	m.line(".nh")
	m.line(".TH " + app.Name + " " + manSection + " \"\" \"" + roffQuoted(app.Name+" "+app.Version) + "\"")
	m.line(".nh") // again: the man macros' .TH turns hyphenation back on
	m.line(".SH NAME")
	m.text(app.Name + " - " + app.Usage)
	m.line(".SH SYNOPSIS")
	m.line(`\fB` + roffEscape(app.Name) + `\fR [\fIGLOBAL OPTIONS\fR] \fIcommand\fR [\fICOMMAND OPTIONS\fR] [\fIARGUMENTS\fR...]`)
	if flags := app.VisibleFlags(); len(flags) > 0 {
		m.line(".SH GLOBAL OPTIONS")
		m.flags(flags)
	}
	m.line(".SH COMMANDS")
	m.commands(app.VisibleCommands(), 0)
	m.line(".SH EXIT STATUS")
	m.block(exitCodes)
	return m.err
}

// manSection is the section of the page: 1, user commands. strata is
// the program users type (submit, jobs, run, resv ...), and its admin
// verbs are subcommands of that same program, as Slurm keeps scontrol
// and sacctmgr, admin verbs and all, in section 1, and Flux all of
// flux(1) down to flux-broker(1); both use section 8 only for daemons
// the system starts on their own (slurmctld(8), slurmd(8)), and
// strata's broker is not a program of its own but 'strata broker start'.
const manSection = "1"

// manWriter writes roff lines, keeping the first error.
type manWriter struct {
	w   io.Writer
	err error
}

// line writes one line of roff as it is (a request or escaped text).
func (m *manWriter) line(s string) {
	if m.err == nil {
		_, m.err = io.WriteString(m.w, s+"\n")
	}
}

// text writes prose, filled by the formatter: each line escaped.
func (m *manWriter) text(s string) {
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		m.line(roffEscape(l))
	}
}

// block writes text whose line breaks and indentation are its own (usage
// lines, descriptions with examples), unfilled.
func (m *manWriter) block(s string) {
	m.line(".PP")
	m.line(".nf")
	m.text(strings.Trim(s, "\n"))
	m.line(".fi")
}

// commands writes cmds and, one level down, their subcommands. The help
// commands urfave/cli adds are left out: the page is the help.
func (m *manWriter) commands(cmds []*cli.Command, level int) {
	for _, c := range cmds {
		if c.Name == "help" {
			continue
		}
		heading := ".SH "
		if level > 0 {
			heading = ".SS "
		}
		m.line(heading + roffEscape(strings.Join(c.Names(), ", ")))
		if c.Usage != "" {
			m.text(c.Usage)
		}
		if c.UsageText != "" {
			m.block(c.UsageText)
		}
		if c.Description != "" {
			m.block(c.Description)
		}
		m.flags(c.VisibleFlags())
		m.commands(c.VisibleCommands(), level+1)
	}
}

// flags writes a tagged paragraph per flag, sorted by name: its names, its
// value, what it does, its default and the environment variables it reads.
func (m *manWriter) flags(flags []cli.Flag) {
	type entry struct{ key, tag, body string }
	var entries []entry
	for _, f := range flags {
		names := f.Names()
		if len(names) == 0 || names[0] == "help" {
			continue
		}
		var tag []string
		for _, n := range names {
			dash := "--"
			if len(n) == 1 {
				dash = "-"
			}
			tag = append(tag, `\fB`+roffEscape(dash+n)+`\fR`)
		}
		e := entry{key: names[0], tag: strings.Join(tag, ", ")}
		if d, ok := f.(cli.DocGenerationFlag); ok {
			body := d.GetUsage()
			if d.TakesValue() {
				e.tag += ` \fIvalue\fR`
				def := d.GetDefaultText()
				if def == "" {
					def = d.GetValue()
				}
				if def != "" {
					body += " (default: " + def + ")"
				}
			}
			if env := d.GetEnvVars(); len(env) > 0 {
				body += " (environment: " + strings.Join(env, ", ") + ")"
			}
			e.body = body
		}
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	for _, e := range entries {
		m.line(".TP")
		m.line(e.tag)
		if e.body != "" {
			m.text(e.body)
		} else {
			m.line(`\&`)
		}
	}
}

// roffEscape makes one line of text safe as roff input: backslashes
// print as themselves, a dash as the ASCII hyphen-minus that options are
// typed with, and a line that would begin with a control character (a
// dot or an apostrophe) as text.
func roffEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// roffQuoted escapes s for a double-quoted macro argument.
func roffQuoted(s string) string {
	return strings.ReplaceAll(roffEscape(s), `"`, `\(dq`)
}

// manAction is 'strata man'.
func manAction(c *cli.Context) error {
	if c.NArg() != 0 {
		return usageErr(fmt.Errorf("'strata man' takes no arguments; got %s", strings.Join(c.Args().Slice(), " ")))
	}
	if err := writeMan(c.App.Writer, c.App); err != nil {
		return fmt.Errorf("writing the manual page: %w", err)
	}
	return nil
}
