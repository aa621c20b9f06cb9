// Package clitest runs a strata command line in-process, for the tests of
// the packages that define its commands (cliapp, simcli).
package clitest

import (
	"bytes"
	"testing"

	"github.com/urfave/cli/v2"
)

// Run runs app with args (after the program name "strata") and returns
// its stdout, its stderr followed by the error's text, and the exit code
// exitCode gives the error (0 without one), as cliapp.Main would exit.
// urfave/cli's exit handler is turned off, so that no error exits the
// test.
func Run(t testing.TB, app *cli.App, exitCode func(error) int, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errb
	app.ExitErrHandler = func(*cli.Context, error) {}
	if err := app.Run(append([]string{"strata"}, args...)); err != nil {
		errb.WriteString(err.Error())
		code = exitCode(err)
	}
	return out.String(), errb.String(), code
}
