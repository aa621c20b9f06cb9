package broker

import (
	"fmt"
	"testing"
)

func TestStepLayout(t *testing.T) {
	nodes := []string{"n0", "n1", "n2"}
	for _, tc := range []struct {
		ntasks, perNode int
		want            string // node/nodeid/localid per rank
	}{
		{0, 0, "n0/0/0 n1/1/0 n2/2/0"},
		{0, 1, "n0/0/0 n1/1/0 n2/2/0"},
		{0, 2, "n0/0/0 n0/0/1 n1/1/0 n1/1/1 n2/2/0 n2/2/1"},
		{1, 0, "n0/0/0"},
		{2, 0, "n0/0/0 n1/1/0"},
		{4, 0, "n0/0/0 n0/0/1 n1/1/0 n2/2/0"},
		{5, 0, "n0/0/0 n0/0/1 n1/1/0 n1/1/1 n2/2/0"},
		{6, 0, "n0/0/0 n0/0/1 n1/1/0 n1/1/1 n2/2/0 n2/2/1"},
	} {
		got := ""
		for i, p := range stepLayout(nodes, tc.ntasks, tc.perNode) {
			if i > 0 {
				got += " "
			}
			got += fmt.Sprintf("%s/%d/%d", p.Node, p.NodeID, p.LocalID)
		}
		if got != tc.want {
			t.Errorf("stepLayout(-n %d, --tasks-per-node %d) = %s, want %s", tc.ntasks, tc.perNode, got, tc.want)
		}
	}
}
