package cliapp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// Batch script directives. A script submitted with 'strata batch' (or with
// 'strata submit' when the command is a script file) may carry its options
// in comment lines at its top, as Slurm's sbatch reads them:
//
//	#!/bin/sh
//	#STRATA -N 4 --qpu qpu0:2
//	#SBATCH --time=1:00:00 --job-name=sim
//	./sim
//
// Directives are read from the start of the file (after a "#!" line) up to
// the first line that is neither blank nor a comment: Slurm's rule, so
// that a "#SBATCH" further down, after a command, is only a comment. On a
// directive line, a word that starts with an unquoted '#' begins a comment.
// "#STRATA" lines take every option of submit, and an unknown one is an
// error that names the line. "#SBATCH" lines take the options Strata shares
// with Slurm (sbatchOptions); any other is warned about on stderr and
// skipped, so that a script written for Slurm runs without edits, and
// never silently loses an option. Options given on the command line win
// over the script's; --verbose says which directive each one overrode.

// Directive prefixes.
const (
	prefixStrata = "#STRATA"
	prefixSbatch = "#SBATCH"
)

// maxDirectiveBytes bounds how much of a script is read for directives: a
// directive block is a few lines, and a binary file must not be read whole.
const maxDirectiveBytes = 1 << 20

// dirOption is an option a directive may give: its one-letter and long
// names (either may be empty), the submit flag it sets, and whether it
// takes no value.
type dirOption struct {
	short, long string
	flag        string
	boolean     bool
}

// sbatchOptions are the sbatch options Strata understands in #SBATCH
// lines, and the submit flag each sets.
var sbatchOptions = []dirOption{
	{"N", "nodes", "nodes", false},
	{"w", "nodelist", "nodelist", false},
	{"x", "exclude", "exclude", false},
	{"n", "ntasks", "ntasks", false},
	{"t", "time", "time", false},
	{"J", "job-name", "name", false},
	{"o", "output", "output", false},
	{"e", "error", "error", false},
	{"D", "chdir", "chdir", false},
	{"", "begin", "begin", false},
	{"d", "dependency", "dependency", false},
	{"", "reservation", "resv", false},
	{"a", "array", "array", false},
	{"H", "hold", "hold", true},
	{"", "requeue", "requeue", true},
	{"", "export", "export", false},
	{"", "nice", "nice", false},
	{"", "signal", "signal", false},
	{"", "deadline", "deadline", false},
}

// strataOptions are the options of #STRATA lines: every flag of submit,
// by each of its names, except --verbose, which is about the command
// rather than the job.
func strataOptions() []dirOption {
	var opts []dirOption
	for _, f := range jobFlags() {
		names := f.Names()
		if names[0] == "verbose" {
			continue
		}
		_, boolean := unwrap(f).(*cli.BoolFlag)
		for _, n := range names {
			o := dirOption{flag: names[0], boolean: boolean}
			if len(n) == 1 {
				o.short = n
			} else {
				o.long = n
			}
			opts = append(opts, o)
		}
	}
	return opts
}

// directive is one option given by a directive line.
type directive struct {
	line  int    // 1-based line number in the script
	text  string // the directive line, trimmed, for messages
	opt   string // the option as written: "-N" or "--nodes"
	flag  string // the submit flag it sets
	value string // "true" for a boolean option
}

// String is how messages show the directive: "line 3 (#SBATCH -N 4)".
func (d directive) String() string { return fmt.Sprintf("line %d (%s)", d.line, d.text) }

// parseDirectives reads the directives at the top of a script. It returns
// the options they give, in order, and a warning for each unknown #SBATCH
// option; an unknown #STRATA option, a missing value or unbalanced quotes
// are errors naming the line.
func parseDirectives(r io.Reader) ([]directive, []string, error) {
	sc := bufio.NewScanner(io.LimitReader(r, maxDirectiveBytes))
	sc.Buffer(make([]byte, 0, 4096), maxDirectiveBytes)
	var dirs []directive
	var warns []string
	strata := strataOptions()
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), " \t\r")
		if n == 1 && strings.HasPrefix(line, "#!") {
			continue
		}
		trimmed := strings.TrimSpace(line)
		var prefix string
		var opts []dirOption
		switch {
		case hasPrefixWord(line, prefixStrata):
			prefix, opts = prefixStrata, strata
		case hasPrefixWord(line, prefixSbatch):
			prefix, opts = prefixSbatch, sbatchOptions
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
			continue
		default:
			return dirs, warns, nil // the first command: directives end
		}
		words, err := splitWords(line[len(prefix):])
		if err != nil {
			return nil, nil, fmt.Errorf("line %d (%s): %w", n, trimmed, err)
		}
		ds, ws, err := lineDirectives(n, trimmed, prefix, opts, words)
		if err != nil {
			return nil, nil, err
		}
		dirs = append(dirs, ds...)
		warns = append(warns, ws...)
	}
	if err := sc.Err(); err != nil && !errors.Is(err, bufio.ErrTooLong) {
		return nil, nil, fmt.Errorf("reading directives: %w", err)
	}
	return dirs, warns, nil
}

// hasPrefixWord reports whether line starts with prefix as a word of its
// own: "#SBATCH -N 2" and "#SBATCH" do, "#SBATCHED" does not.
func hasPrefixWord(line, prefix string) bool {
	rest, ok := strings.CutPrefix(line, prefix)
	return ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t')
}

// lineDirectives reads the options of one directive line.
func lineDirectives(n int, text, prefix string, opts []dirOption, words []string) ([]directive, []string, error) {
	var dirs []directive
	var warns []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		o, name, value, hasValue := lookupOption(opts, w)
		if o == nil {
			if prefix == prefixStrata {
				if !strings.HasPrefix(w, "-") {
					return nil, nil, fmt.Errorf("line %d (%s): %q is not an option: #STRATA lines hold options only, as '#STRATA -N 4 -t 1h'", n, text, w)
				}
				return nil, nil, fmt.Errorf("line %d (%s): unknown option %s: see 'strata submit --help' for the options", n, text, w)
			}
			skipped := w
			// An unknown "-p debug": the next word is its value.
			if strings.HasPrefix(w, "-") && !strings.Contains(w, "=") && i+1 < len(words) && !strings.HasPrefix(words[i+1], "-") {
				i++
				skipped += " " + words[i]
			}
			warns = append(warns, fmt.Sprintf("line %d: %s %s ignored: Strata has no such option", n, prefix, skipped))
			continue
		}
		switch {
		case o.boolean && hasValue:
			return nil, nil, fmt.Errorf("line %d (%s): %s takes no value", n, text, name)
		case o.boolean:
			value = "true"
		case !hasValue:
			if i+1 >= len(words) {
				return nil, nil, fmt.Errorf("line %d (%s): %s needs a value, as in '%s %s VALUE'", n, text, name, prefix, name)
			}
			i++
			value = words[i]
		}
		dirs = append(dirs, directive{line: n, text: text, opt: name, flag: o.flag, value: value})
	}
	return dirs, warns, nil
}

// lookupOption finds the option word w gives: "--long", "--long=VALUE",
// "-X", "-XVALUE" or "-X=VALUE". It returns nil if w is none of opts'.
func lookupOption(opts []dirOption, w string) (o *dirOption, name, value string, hasValue bool) {
	if long, ok := strings.CutPrefix(w, "--"); ok {
		long, value, hasValue = strings.Cut(long, "=")
		for i := range opts {
			if opts[i].long != "" && opts[i].long == long {
				return &opts[i], "--" + long, value, hasValue
			}
		}
		return nil, "", "", false
	}
	if len(w) < 2 || w[0] != '-' {
		return nil, "", "", false
	}
	for i := range opts {
		if opts[i].short == w[1:2] {
			rest := strings.TrimPrefix(w[2:], "=")
			return &opts[i], w[:2], rest, len(w) > 2
		}
	}
	return nil, "", "", false
}

// splitWords splits a directive line's text into words as a shell would
// for plain words and quotes: blanks separate words, '...' and "..." quote
// (a backslash escapes the next character outside single quotes), and an
// unquoted '#' at the start of a word begins a comment.
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '#' && !inWord:
			return words, nil
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("a ' quote is not closed")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("a \" quote is not closed")
			}
			inWord = true
		case c == '\\':
			if i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			}
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// scriptFile returns the path of the script the command's first word
// names, relative to cwd, when it is a regular file that starts with "#!";
// "" otherwise (a program found in PATH, a binary).
func scriptFile(arg, cwd string) string {
	if arg == "" {
		return ""
	}
	path := arg
	if !filepath.IsAbs(path) {
		path = filepath.Join(cwd, arg)
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	head := make([]byte, 2)
	if _, err := io.ReadFull(f, head); err != nil || !bytes.Equal(head, []byte("#!")) {
		return ""
	}
	return path
}

// applyDirectives reads the directives of the script the command names
// (if it names one) and sets the flags they give that the command line
// did not set. Warnings, and with --verbose each directive the command
// line overrode, go to c.App.ErrWriter.
func applyDirectives(c *cli.Context, cwd string) error {
	script := scriptFile(c.Args().First(), cwd)
	if script == "" {
		return nil
	}
	f, err := os.Open(script)
	if err != nil {
		return fmt.Errorf("cannot read the directives of %s: %w", c.Args().First(), err)
	}
	defer f.Close()
	name := c.Args().First()
	dirs, warns, err := parseDirectives(f)
	if err != nil {
		return usageErr(fmt.Errorf("script %s: %w", name, err))
	}
	errw := c.App.ErrWriter
	for _, w := range warns {
		fmt.Fprintf(errw, "strata: warning: script %s: %s\n", name, w)
	}
	// What the command line set, before any directive sets more.
	cmdline := map[string]bool{}
	for _, d := range dirs {
		cmdline[d.flag] = c.IsSet(d.flag)
	}
	for _, d := range dirs {
		if !slices.ContainsFunc(c.Command.Flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), d.flag) }) {
			return usageErr(fmt.Errorf("script %s: %s: %s is not supported yet by '%s'", name, d, d.opt, cmdName(c)))
		}
		if cmdline[d.flag] {
			if c.Bool("verbose") {
				fmt.Fprintf(errw, "strata: script %s: %s overridden by the command line's --%s\n", name, d, d.flag)
			}
			continue
		}
		if err := c.Set(d.flag, d.value); err != nil {
			// urfave's reason names its parser ("parse error"): say it as
			// the flag's own would be said.
			return usageErr(fmt.Errorf("script %s: %s: %s %q: not a number", name, d, d.opt, d.value))
		}
	}
	return nil
}
