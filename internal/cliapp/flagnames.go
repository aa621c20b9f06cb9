package cliapp

import "github.com/urfave/cli/v2"

// Flag names made once. urfave/cli's Names runs a regular expression over
// each name of a flag (cli.FlagNames strips what follows a comma or a
// blank, a v1 habit), and it asks for names in loops: before every action
// runFlagActions asks IsSet of each name of each flag of the command, and
// IsSet of a flag not given looks it up by the names of every flag. So a
// command with F flags ran about F² expressions before its action: 2,471
// of the 4,148 allocations of 'strata submit' (45 flags), and 42% of its
// CPU time in process (BenchmarkParse). Strata's names hold neither commas
// nor blanks, so that the expression never changes one.
//
// quickNames wraps a flag of strata's types in one that embeds it, so that
// urfave/cli sees every interface it asks for (help, completion, required,
// actions) as before, and whose Names returns a slice made once. What
// asserts a flag's concrete type must look through unwrap. The wrappers
// are pointers: urfave/cli compares flags with == (hasFlag), which
// panics on a struct holding a slice.

type (
	quickString struct {
		*cli.StringFlag
		names []string
	}
	quickBool struct {
		*cli.BoolFlag
		names []string
	}
	quickInt struct {
		*cli.IntFlag
		names []string
	}
	quickInt64 struct {
		*cli.Int64Flag
		names []string
	}
	quickUint64 struct {
		*cli.Uint64Flag
		names []string
	}
	quickFloat64 struct {
		*cli.Float64Flag
		names []string
	}
	quickStringSlice struct {
		*cli.StringSliceFlag
		names []string
	}
)

func (f *quickString) Names() []string      { return f.names }
func (f *quickBool) Names() []string        { return f.names }
func (f *quickInt) Names() []string         { return f.names }
func (f *quickInt64) Names() []string       { return f.names }
func (f *quickUint64) Names() []string      { return f.names }
func (f *quickFloat64) Names() []string     { return f.names }
func (f *quickStringSlice) Names() []string { return f.names }

// quickNames returns f wrapped (see above), or f itself when it is of
// another type, already wrapped, or hidden: urfave/cli leaves a hidden
// *cli.BoolFlag out of completions by its concrete type.
func quickNames(f cli.Flag) cli.Flag {
	if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() {
		return f
	}
	primary, aliases, ok := fieldNames(f)
	if !ok {
		return f
	}
	names := append([]string{primary}, aliases...)
	switch f := f.(type) {
	case *cli.StringFlag:
		return &quickString{f, names}
	case *cli.BoolFlag:
		return &quickBool{f, names}
	case *cli.IntFlag:
		return &quickInt{f, names}
	case *cli.Int64Flag:
		return &quickInt64{f, names}
	case *cli.Uint64Flag:
		return &quickUint64{f, names}
	case *cli.Float64Flag:
		return &quickFloat64{f, names}
	case *cli.StringSliceFlag:
		return &quickStringSlice{f, names}
	}
	return f // already wrapped
}

// fieldNames returns the name and aliases of a flag of strata's types (f
// or the flag it wraps) from its fields, without the regular expression
// of urfave/cli's Names; ok is false for another type.
func fieldNames(f cli.Flag) (primary string, aliases []string, ok bool) {
	switch f := unwrap(f).(type) {
	case *cli.StringFlag:
		return f.Name, f.Aliases, true
	case *cli.BoolFlag:
		return f.Name, f.Aliases, true
	case *cli.IntFlag:
		return f.Name, f.Aliases, true
	case *cli.Int64Flag:
		return f.Name, f.Aliases, true
	case *cli.Uint64Flag:
		return f.Name, f.Aliases, true
	case *cli.Float64Flag:
		return f.Name, f.Aliases, true
	case *cli.StringSliceFlag:
		return f.Name, f.Aliases, true
	}
	return "", nil, false
}

// quickBefore returns a Before for a command that wraps its flags with
// quickNames, then runs before (if any). urfave/cli parses the command
// line, then runs Before, then runFlagActions and the action, so that the
// flags of the one command a process runs are wrapped just before the
// lookups they save, and building the command tree wraps none.
func quickBefore(before cli.BeforeFunc) cli.BeforeFunc {
	return func(c *cli.Context) error {
		quickAll(c.Command.Flags)
		if before != nil {
			return before(c)
		}
		return nil
	}
}

// quickAll wraps each of flags with quickNames, in place, and returns them.
func quickAll(flags []cli.Flag) []cli.Flag {
	for i, f := range flags {
		flags[i] = quickNames(f)
	}
	return flags
}

// unwrap returns the flag quickNames wrapped in f, or f.
func unwrap(f cli.Flag) cli.Flag {
	switch f := f.(type) {
	case *quickString:
		return f.StringFlag
	case *quickBool:
		return f.BoolFlag
	case *quickInt:
		return f.IntFlag
	case *quickInt64:
		return f.Int64Flag
	case *quickUint64:
		return f.Uint64Flag
	case *quickFloat64:
		return f.Float64Flag
	case *quickStringSlice:
		return f.StringSliceFlag
	}
	return f
}
