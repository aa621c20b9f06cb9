// Command strata-broker is the strata command line with the commands that
// run a broker in its own process: 'broker start' and 'demo'. The strata
// front end runs it for those two commands, with the same arguments; every
// other command works in it as in strata.
package main

import "github.com/strata-hpc/strata/internal/cliapp"

func main() { cliapp.Main(brokerCommand(), demoCommand()) }
