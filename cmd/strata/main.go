// Command strata is the command-line interface of the Strata resource broker.
package main

import (
	"fmt"
	"os"
)

func main() {
	app := newApp()
	if err := app.Run(permuteArgs(app, os.Args)); err != nil {
		fmt.Fprintln(os.Stderr, "strata:", termSafe(err.Error()))
		os.Exit(exitCode(err))
	}
}
