// Command strata-broker is the strata command line with the commands that
// run a broker or hold its subscriptions in their own process: 'broker
// start', 'demo', 'agent' and 'qpu executor', 'nats init', which mints
// keys with the nkeys and jwt packages, and 'sim', the trace replay. The
// strata front end runs it for those commands, with the same arguments
// (see cliapp.RunAgent, cliapp.RunNatsInit and cliapp.SimCommand); every
// other command works in it as in strata.
package main

import (
	"context"

	"github.com/strata-hpc/strata/broker/agent"
	"github.com/strata-hpc/strata/broker/qpuexec"
	"github.com/strata-hpc/strata/internal/cliapp"
	"github.com/strata-hpc/strata/internal/natssetup"
	"github.com/strata-hpc/strata/internal/simcli"
)

func main() {
	cliapp.RunAgent = func(ctx context.Context, o cliapp.AgentOptions) error {
		return agent.Run(ctx, agent.Options(o))
	}
	cliapp.RunQPUExecutor = func(ctx context.Context, o cliapp.QPUExecutorOptions) error {
		return qpuexec.Run(ctx, qpuexec.Options(o))
	}
	cliapp.RunNatsInit = natsInit
	cliapp.SimCommand = simcli.Command
	cliapp.Main(brokerCommand(), demoCommand())
}

// natsInit is natssetup.Init for cliapp.RunNatsInit.
func natsInit(dir, stateDir string) (cliapp.NatsInitResult, error) {
	r, err := natssetup.Init(dir, stateDir)
	return cliapp.NatsInitResult{
		Dir: r.Dir, StateDir: r.StateDir,
		Operator: r.Operator, System: r.System, Account: r.Account, Signing: r.Signing,
		Files:    r.Files,
		Fragment: natssetup.Fragment, BrokerCreds: natssetup.BrokerCreds, OperatorKey: natssetup.OperatorKey,
	}, err
}
