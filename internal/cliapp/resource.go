package cliapp

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"

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
			Description: "Groups the nodes by state (free, allocated, reserved, maint, down) and, within a\n" +
				"state, by the job or reservation holding them, as hostlists. --json prints\n" +
				"every node.",
			Flags:  []cli.Flag{jsonFlag()},
			Action: runResourceList,
		}, ganttCommand()},
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
	names []string
}

var nodeStateOrder = []api.NodeState{api.NodeFree, api.NodeAllocated, api.NodeReserved, api.NodeMaint, api.NodeDown}

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
	}
	idx := map[key]int{}
	var groups []nodeGroup
	for _, n := range nodes {
		k := key{n.State, n.Job, n.Resv}
		i, ok := idx[k]
		if !ok {
			i = len(groups)
			idx[k] = i
			groups = append(groups, nodeGroup{state: n.State, job: n.Job, resv: n.Resv})
		}
		groups[i].names = append(groups[i].names, n.Name)
	}
	slices.SortStableFunc(groups, func(a, b nodeGroup) int {
		return cmp.Or(
			cmp.Compare(stateRank(a.state), stateRank(b.state)),
			cmp.Compare(a.state, b.state),
			cmp.Compare(a.job, b.job),
			cmp.Compare(a.resv, b.resv))
	})
	return groups
}

// printResources writes the node table and the QPU table.
func printResources(w io.Writer, r api.ResourcesReply) {
	tw := newTable(w)
	fmt.Fprintln(tw, "STATE\tNNODES\tNODES\tJOB\tRESV")
	for _, g := range groupNodes(r.Nodes) {
		job := "-"
		if g.job != 0 {
			job = g.job.String()
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
