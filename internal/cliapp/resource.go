package cliapp

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/internal/hostlist"
)

func resourceCommand() *cli.Command {
	return &cli.Command{
		Name:  "resource",
		Usage: "show the instance's resources",
		Subcommands: []*cli.Command{{
			Name:      "list",
			Usage:     "list nodes by state, and QPU slots per backend",
			UsageText: "strata resource list [--json]",
			Description: "Groups the nodes by state (free, allocated, reserved, maint, draining, drained,\n" +
				"down) and, within a state, by the job or reservation holding them, as\n" +
				"hostlists. A node down (its health failed) or drained (by staff) takes no new\n" +
				"work; draining is drained with a job still running on it. For those the REASON\n" +
				"column says why, who drained it and since when. --json prints every node.",
			Flags:  []cli.Flag{jsonFlag()},
			Action: runResourceList,
		}, ganttCommand(), {
			Name:      "drain",
			Usage:     "take nodes out of service: running jobs finish, nothing new starts (admins)",
			UsageText: "strata resource drain HOSTLIST --reason TEXT [--json]",
			Description: "Drains the nodes, as Slurm's 'scontrol update nodename=HOSTLIST state=drain\n" +
				"reason=TEXT' and 'flux resource drain' do: jobs running there run to their end,\n" +
				"no job of any instance (the root, DATs, batch jobs) starts or is planned there,\n" +
				"and pending jobs' planned starts move to other nodes or later. The reason is\n" +
				"required; draining a drained node again replaces its reason. The state is kept\n" +
				"across broker restarts until 'strata resource undrain'. Admins only.",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "reason", Usage: "why the nodes are drained (required): shown by resource list and gantt"},
				jsonFlag(),
			},
			Action: runResourceDrain,
		}, {
			Name:        "undrain",
			Usage:       "put drained nodes back in service (admins)",
			UsageText:   "strata resource undrain HOSTLIST [--json]",
			Description: "Undrains the nodes, as 'scontrol update state=resume' and 'flux resource undrain'.\nEvery node named must be drained. Admins only.",
			Flags:       []cli.Flag{jsonFlag()},
			Action:      runResourceUndrain,
		}},
	}
}

// hostlistArg returns the one HOSTLIST argument of a drain or undrain.
func hostlistArg(c *cli.Context) (string, error) {
	if c.NArg() != 1 {
		return "", usageErr(fmt.Errorf("'%s' takes one HOSTLIST (for example node[0-3]), got %q", cmdName(c), c.Args().Slice()))
	}
	if _, err := hostlist.Parse(c.Args().First()); err != nil {
		return "", usageErr(fmt.Errorf("HOSTLIST %q: %v", c.Args().First(), err))
	}
	return c.Args().First(), nil
}

func runResourceDrain(c *cli.Context) error {
	nodes, err := hostlistArg(c)
	if err != nil {
		return err
	}
	if strings.TrimSpace(c.String("reason")) == "" {
		return usageErr(errors.New("--reason TEXT is required: say why the nodes are drained, as in --reason 'DIMM errors, ticket 42'"))
	}
	return change(c, api.OpNodeDrain, api.NodeDrainRequest{Nodes: nodes, Reason: c.String("reason")}, printDrained)
}

func runResourceUndrain(c *cli.Context) error {
	nodes, err := hostlistArg(c)
	if err != nil {
		return err
	}
	return change(c, api.OpNodeUndrain, api.NodeDrainRequest{Nodes: nodes}, printDrained)
}

// printDrained writes the nodes of a drain or undrain reply, grouped as
// resource list groups them.
func printDrained(w io.Writer, rep api.NodesReply) {
	for _, g := range groupNodes(rep.Nodes) {
		line := fmt.Sprintf("%s %s", hostlist.Format(g.names), g.state)
		if g.why != "" {
			line += ": " + g.why
		}
		fmt.Fprintln(w, line)
	}
}

func runResourceList(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	return show(c, api.OpResources, nil,
		func(rep *api.ResourcesReply) any { rep.Nodes = nonNil(rep.Nodes); return rep },
		func(w io.Writer, rep *api.ResourcesReply) error { printResources(w, *rep); return nil })
}

// nodeGroup is one line of the node table: the nodes in one state held by
// the same job or reservation.
type nodeGroup struct {
	state api.NodeState
	job   api.JobID
	resv  string
	why   string // for a node down or drained: why, who and since when
	names []string
}

var nodeStateOrder = []api.NodeState{api.NodeFree, api.NodeAllocated, api.NodeReserved, api.NodeMaint, api.NodeDraining, api.NodeDrained, api.NodeDown}

// outText says why a node is out of service: "agent silent (down since
// 2026-12-03 13:20); disk (drained by admin since ...)".
func outText(o *api.NodeOut) string {
	if o == nil {
		return ""
	}
	var parts []string
	if o.Down {
		parts = append(parts, fmt.Sprintf("%s (down since %s)", oneLine(o.DownReason), fmtTime(o.DownSince)))
	}
	if o.Drained {
		parts = append(parts, fmt.Sprintf("%s (drained by %s since %s)", oneLine(o.DrainReason), oneLine(o.DrainedBy), fmtTime(o.DrainSince)))
	}
	return strings.Join(parts, "; ")
}

func stateRank(s api.NodeState) int {
	if i := slices.Index(nodeStateOrder, s); i >= 0 {
		return i
	}
	return len(nodeStateOrder) // states this client does not know, last
}

// groupNodes groups nodes by state, then job, then reservation, in that
// order (unknown states last, by name), keeping node order within a group.
func groupNodes(nodes []api.NodeStatus) []nodeGroup {
	type key struct {
		state api.NodeState
		job   api.JobID
		resv  string
		why   string
	}
	idx := map[key]int{}
	var groups []nodeGroup
	for _, n := range nodes {
		k := key{n.State, n.Job, n.Resv, outText(n.Out)}
		i, ok := idx[k]
		if !ok {
			i = len(groups)
			idx[k] = i
			groups = append(groups, nodeGroup{state: n.State, job: n.Job, resv: n.Resv, why: k.why})
		}
		groups[i].names = append(groups[i].names, n.Name)
	}
	slices.SortStableFunc(groups, func(a, b nodeGroup) int {
		return cmp.Or(
			cmp.Compare(stateRank(a.state), stateRank(b.state)),
			cmp.Compare(a.state, b.state),
			cmp.Compare(a.job, b.job),
			cmp.Compare(a.resv, b.resv),
			cmp.Compare(a.why, b.why))
	})
	return groups
}

// printResources writes the node table and the QPU table. The REASON
// column is there only when a node is down or drained.
func printResources(w io.Writer, r api.ResourcesReply) {
	groups := groupNodes(r.Nodes)
	reasons := slices.ContainsFunc(groups, func(g nodeGroup) bool { return g.why != "" })
	tw := newTable(w)
	if reasons {
		fmt.Fprintln(tw, "STATE\tNNODES\tNODES\tJOB\tRESV\tREASON")
	} else {
		fmt.Fprintln(tw, "STATE\tNNODES\tNODES\tJOB\tRESV")
	}
	for _, g := range groups {
		job := "-"
		if g.job != 0 {
			job = g.job.String()
		}
		if reasons {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", g.state, len(g.names), hostlist.Format(g.names), job, cell(g.resv), cell(g.why))
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", g.state, len(g.names), hostlist.Format(g.names), job, cell(g.resv))
	}
	tw.Flush()
	if len(r.QPUs) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw = newTable(w)
	fmt.Fprintln(tw, "QPU\tTOTAL\tUSED\tAVAILABLE")
	for _, q := range r.QPUs {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", q.Name, q.Total, q.Used, strconv.Itoa(q.Available))
	}
	tw.Flush()
}
