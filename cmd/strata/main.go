// Command strata is the command-line interface of the Strata resource
// broker: the front end people and scripts run for every command.
//
// It does not link the broker (package broker and the NATS server it
// embeds), so that a command starts in about a millisecond less than Go
// takes to initialise the server's packages; 'strata broker' and 'strata
// demo' run the strata-broker program, found next to this one or on PATH.
package main

import "github.com/strata-hpc/strata/internal/cliapp"

func main() { cliapp.Main() }
