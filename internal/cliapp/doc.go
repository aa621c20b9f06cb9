// Package cliapp is the strata command line (urfave/cli/v2), shared by the
// two programs that run it:
//
//   - cmd/strata, the front end people and scripts run for every command.
//     It links no server code, so that a command starts, connects, makes
//     its request and exits quickly: scripts call it in loops.
//   - cmd/strata-broker, the same command line plus the commands that run
//     a broker in their own process ('broker start', 'demo'), which link
//     package broker and the NATS server it embeds. The front end runs it
//     for those commands (see BrokerProgram).
//
// The commands talk to a broker only through package client. The
// end-to-end tests build both programs and drive them as a person would;
// BenchmarkCommands times everyday commands as whole processes.
package cliapp
