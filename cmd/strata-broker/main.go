// Command strata-broker is the strata command line with the commands that
// run a broker or hold its subscriptions in their own process: 'broker
// start', 'demo', 'agent' and 'qpu executor'. The strata front end runs it
// for those commands, with the same arguments (see cliapp.RunAgent); every
// other command works in it as in strata.
package main

import (
	"context"

	"github.com/strata-hpc/strata/broker/agent"
	"github.com/strata-hpc/strata/broker/qpuexec"
	"github.com/strata-hpc/strata/internal/cliapp"
)

func main() {
	cliapp.RunAgent = func(ctx context.Context, o cliapp.AgentOptions) error {
		return agent.Run(ctx, agent.Options(o))
	}
	cliapp.RunQPUExecutor = func(ctx context.Context, o cliapp.QPUExecutorOptions) error {
		return qpuexec.Run(ctx, qpuexec.Options(o))
	}
	cliapp.Main(brokerCommand(), demoCommand())
}
