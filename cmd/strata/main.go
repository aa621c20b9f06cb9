// Command strata is the command-line interface of the Strata resource
// broker: the front end people and scripts run for every command.
//
// It does not link the broker (package broker and the NATS server it
// embeds), so that a command starts in about a millisecond less than Go
// takes to initialise the server's packages; 'strata broker' and 'strata
// demo' run the strata-broker program, found next to this one or on PATH.
//
// Nor does it link nats.go: it speaks NATS through internal/natsconn, and
// 'strata agent' and 'strata qpu executor', which hold subscriptions
// through nats.go, run in strata-broker too (cliapp.RunAgent). nats.go
// brought in encoding/gob, compress/flate, net/http's HTTP/2 header
// tables and nuid, all initialised before main. Measured on a loaded
// 2-core machine (load 7-11), interleaved: the binary 17.5 -> 11.8 MB;
// the sum of package initialisation of 'strata version'
// (GODEBUG=inittrace=1, median of 30) 11.7 -> 8.2 ms and 187 -> 75 kB;
// BenchmarkCommands, 16 commands, 6 rounds: -21% (geomean of the whole
// process, 35.8 -> 28.3 ms), start (to main) -20 to -32%. The handshake
// takes as many round trips as nats.go's (INFO; CONNECT and PING, then
// PONG; the reply subscription with the first request, then its reply)
// in one write fewer.
//
// Nor does it link nkeys and nats-io/jwt/v2 (issue 16): package client
// finds the JWT and the seed in a .creds file and decodes the seed itself
// (client/seed.go, checked against both packages by FuzzParseCreds), and
// 'strata nats init', which mints keys, runs in strata-broker
// (cliapp.RunNatsInit); 'strata run' expands output paths with
// internal/outpath, not broker/executor. TestFrontEndLinks keeps them
// out. Measured interleaved on the 2-core machine: the binary 11.9 ->
// 10.8 MB; 70 -> 58 packages initialised, their initialisation
// (GODEBUG=inittrace=1 of 'strata version', median of 30) 3.93 -> 3.55 ms
// and 74 -> 43 kB; 'strata version' runs 1.77 -> 1.55 million
// instructions (valgrind --tool=callgrind, GOMAXPROCS=1 and
// asyncpreemptoff=1, median of 5: -12%) with 376 -> 342 page faults
// (perf stat -r 30). BenchmarkCommands, 6 rounds at load 1-1.7: the
// geometric mean of the 16 commands' medians 15.8 -> 14.7 ms (-7%; start
// -8%, connect -9%, request -5%), though few commands alone are beyond
// the noise; at load 10-12 the difference drowns in it.
//
// What is left at start-up is mostly the runtime's and urfave/cli's:
// urfave/cli compiles a regular expression when initialised (now the
// process's first, so it pays regexp's first-use cost: 0.6 ms of the
// inittrace above), and runs it over every flag name it looks up
// (cli.FlagNames: 12% of the instructions of 'strata version'). A
// connected command waits on the server twice: for INFO, then for the
// reply to its first request, which it sends with CONNECT and PING,
// before the PONG (client.WithPipelinedConnect); credentials the server
// refuses fail that request with client.Dial's error. On loopback that
// saves only the client's turn-around at the PONG (0.59 -> 0.48 ms from
// CONNECT to the reply of a whoami, median of 100, a warm process), but
// on a network it saves a round trip.
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
//
// The runtime runs on its defaults, measured (issue 16; rusage medians of
// 40-60 runs interleaved on a loaded 2-core machine):
//   - GC off (debug.SetGCPercent(-1) under a memory limit) gains nothing
//     for an everyday command, which never reaches the first collection
//     at 4 MB ('jobs' with 300 jobs: GODEBUG=gctrace=1 prints nothing),
//     and costs a large listing more in fresh pages than the collections
//     it saves: 'jobs --json' with a 3,000-task array, 115 -> 148 ms of
//     CPU, 2,243 -> 6,263 page faults.
//   - runtime.GOMAXPROCS(1) in main cuts voluntary context switches by
//     about 15% but not CPU, and adds page faults (resource list: 94 -> 79
//     switches, 24.6 -> 24.9 ms, 573 -> 631 faults). GOMAXPROCS=1 in the
//     environment pays (22.5 ms, 69 switches), but only the environment
//     can set it before the runtime starts.
//   - GODEBUG containermaxprocs=0, updatemaxprocs=0, decoratemappings=0,
//     asyncpreemptoff=1 (the //go:debug candidates): no change.
//   - The NATS client (natsconn) starts one goroutine, its reader; its
//     ping timer is only a timer.
package main

import "github.com/strata-hpc/strata/internal/cliapp"

func main() { cliapp.Main() }
