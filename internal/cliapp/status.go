package cliapp

import (
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/api"
)

// BrokerStatusCommand is 'strata broker status', for the broker program's
// 'broker' command (the front end runs that program for 'broker').
func BrokerStatusCommand() *cli.Command {
	c := &cli.Command{
		Name:  "status",
		Usage: "the broker's health: role, NATS servers, stream replicas and lag, queue, scheduling, commit latency (admins)",
		Description: "Asks the broker of --uri (or $STRATA_URI) for its health, as an admin. The same figures are\n" +
			"served to Prometheus by 'strata broker start --metrics-listen HOST:PORT' at /metrics.",
		Flags:  []cli.Flag{jsonFlag()},
		Action: runBrokerStatus,
	}
	prepare(c)
	return c
}

func runBrokerStatus(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	cl, err := dial(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	root, err := cl.At(api.RootPath)
	if err != nil {
		return err
	}
	var st api.BrokerStatus
	if err := call(c, root, api.OpStatus, nil, &st); err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, st)
	}
	t := newTable(c.App.Writer)
	lease := st.LeaseHolder
	if lease == "" {
		lease = "-"
	}
	where := "external"
	if st.NATS.Embedded {
		where = "embedded"
	}
	last := "none yet"
	if !st.LastPass.IsZero() {
		last = fmt.Sprintf("last at %s (took %s)", st.LastPass.UTC().Format(time.RFC3339), secs(st.LastPassS))
	}
	rows := [][2]string{
		{"role", st.Role},
		{"lease holder", lease},
		{"version", fmt.Sprintf("%s, started %s", st.Version, st.StartedAt.UTC().Format(time.RFC3339))},
		{"restore", secs(st.RestoreS)},
		{"NATS", fmt.Sprintf("%s, connected to %s; known: %s", where, st.NATS.Connected, strings.Join(st.NATS.Known, ", "))},
		{"queue", fmt.Sprintf("%d pending, %d running", st.Queue.Pending, st.Queue.Running)},
		{"scheduling", fmt.Sprintf("%d passes; %s", st.Passes, last)},
		{"commits", fmt.Sprintf("%d; latency p50 %s, p99 %s", st.Commits, secs(st.CommitP50S), secs(st.CommitP99S))},
	}
	for _, r := range rows {
		fmt.Fprintf(t, "%s\t%s\n", r[0], termSafe(r[1]))
	}
	fmt.Fprintln(t, "\t")
	fmt.Fprintln(t, "STREAM\tREPLICAS\tLEADER\tMSGS\tFOLLOWERS")
	for _, s := range st.Streams {
		var peers []string
		for _, p := range s.Peers {
			state := "current"
			switch {
			case p.Offline:
				state = "offline"
			case !p.Current:
				state = "behind"
			}
			peers = append(peers, fmt.Sprintf("%s %s lag %d", p.Name, state, p.Lag))
		}
		leader, fol := s.Leader, strings.Join(peers, ", ")
		if leader == "" {
			leader = "-"
		}
		if fol == "" {
			fol = "-"
		}
		fmt.Fprintf(t, "%s\t%d\t%s\t%d\t%s\n", s.Name, s.Replicas, termSafe(leader), s.Msgs, termSafe(fol))
	}
	return t.Flush()
}

// secs writes seconds as a rounded duration.
func secs(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}
