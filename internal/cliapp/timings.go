package cliapp

import (
	"fmt"
	"os"
	"time"
)

// EnvTimings names a file to which a command appends, as it ends, one line
// "main=NS connected=NS": when main began and when the command had
// connected to the broker (0 if it did not), in Unix nanoseconds. Measured
// against when its parent started the process and when it ended, these
// split a command's time into start-up, connect, and the requests and
// output (BenchmarkCommands).
const EnvTimings = "STRATA_TIMINGS"

var (
	mainAt      time.Time // when Main began
	connectedAt time.Time // when dial first connected
)

// writeTimings appends the line of EnvTimings, if it is set. It is called
// once, as the command ends; a failure is reported but changes no exit code.
func writeTimings() {
	path := os.Getenv(EnvTimings)
	if path == "" {
		return
	}
	var conn int64
	if !connectedAt.IsZero() {
		conn = connectedAt.UnixNano()
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		_, err = fmt.Fprintf(f, "main=%d connected=%d\n", mainAt.UnixNano(), conn)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "strata: %s: %v\n", EnvTimings, err)
	}
}
