package cliapp

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/api"
)

func uriCommand() *cli.Command {
	return &cli.Command{
		Name:      "uri",
		Usage:     "print the URI of this instance, a job's instance, or a reservation's",
		UsageText: "strata uri [ID|RESV]",
		Description: "With no argument, prints the instance commands target (--uri, else $STRATA_URI,\n" +
			"else the local root) without contacting it. With a job ID, prints the URI of the\n" +
			"job's child instance (batch and alloc jobs); with a reservation name, the URI of\n" +
			"the reservation's instance, for example:\n\n" +
			"    STRATA_URI=$(strata uri physics) strata submit -N 8 -- ./sim",
		Action: runURI,
	}
}

// uriTarget is what the argument of uri names.
type uriTarget struct {
	job  api.JobID
	resv string
}

// parseURITarget reads the argument of uri: a job ID (digits) or a
// reservation name (which starts with a letter or '_').
func parseURITarget(arg string) (uriTarget, error) {
	if arg != "" && arg[0] >= '0' && arg[0] <= '9' {
		id, err := parseJobID(arg)
		return uriTarget{job: id}, err
	}
	if err := parseResvName(arg); err != nil {
		return uriTarget{}, fmt.Errorf("%q is neither a job ID (digits) nor a reservation name (lower-case letters, digits, '_' or '-', starting with a letter or '_')", arg)
	}
	return uriTarget{resv: arg}, nil
}

func runURI(c *cli.Context) error {
	if c.NArg() > 1 {
		return usageErr(fmt.Errorf("'strata uri' takes at most one argument, a job ID or a reservation name; got %d", c.NArg()))
	}
	u, err := instanceURI(c)
	if err != nil {
		return err
	}
	if c.NArg() == 0 {
		fmt.Fprintln(c.App.Writer, u)
		return nil
	}
	t, err := parseURITarget(c.Args().First())
	if err != nil {
		return usageErr(err)
	}
	cl, err := dial(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	if t.job != 0 {
		var j api.Job
		if err := call(c, cl, api.OpJob, api.JobRequest{ID: t.job}, &j); err != nil {
			return err
		}
		if j.URI == "" && j.Instance && j.State.Terminal() {
			return fmt.Errorf("job %d has ended (%s) and its instance is gone with it", t.job, j.State)
		}
		if j.URI == "" && j.Instance {
			return fmt.Errorf("job %d has not started yet (%s); its instance exists once it runs", t.job, j.State)
		}
		if j.URI == "" {
			return fmt.Errorf("job %d is not an instance; only batch and alloc jobs have a URI", t.job)
		}
		fmt.Fprintln(c.App.Writer, j.URI)
		return nil
	}
	var r api.Resv
	err = call(c, cl, api.OpResvShow, api.ResvRequest{Name: t.resv}, &r)
	switch {
	case isCode(err, api.CodeInvalidArgument):
		// The broker does not know the operation.
		return fmt.Errorf("reservations: not yet served by the broker at %s (%v)", u.Host, err)
	case err != nil:
		return err
	case r.URI == "":
		state := r.State
		if state == "" {
			state = "not active"
		}
		return fmt.Errorf("reservation %s is %s: it has an instance, and a URI, only from its creation until its window closes (%s to %s)",
			t.resv, state, r.Start.Local().Format(time.RFC3339), r.End.Local().Format(time.RFC3339))
	}
	fmt.Fprintln(c.App.Writer, r.URI)
	return nil
}
