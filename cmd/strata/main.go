// Command strata is the command-line interface of the Strata resource
// broker: the front end people and scripts run for every command.
//
// It does not link the broker (package broker and the NATS server it
// embeds), so that a command starts in about a millisecond less than Go
// takes to initialise the server's packages; 'strata broker' and 'strata
// demo' run the strata-broker program, found next to this one or on PATH.
//
// Build it without cgo and with cliapp.BuildTags, as the README does:
//
//	CGO_ENABLED=0 go build -tags urfave_cli_no_docs ./cmd/strata
//
// (The tag leaves out urfave/cli's Markdown renderer, whose package
// initialisation every command paid for; see cliapp.BuildTags.)
//
// With cgo, a Go program that imports net (as the NATS client does) is
// linked dynamically against the C library, for a DNS resolver and user
// lookups the front end does not need; the dynamic loader and cgo's
// thread start-up then cost every command about a millisecond of CPU
// ('perf stat -r 40 strata resource list': 6.4-6.7 ms of CPU with cgo,
// 5.5-6.0 without). Without cgo, the login name under which credentials
// are looked for comes from /etc/passwd, else $USER.
package main

import "github.com/strata-hpc/strata/internal/cliapp"

func main() { cliapp.Main() }
