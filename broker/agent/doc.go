// Package agent is the node agent ('strata agent') and the broker's side
// of the agent protocol, Remote. An agent serves one or more nodes from
// the host they name: it registers them with the broker, sends
// heartbeats, and starts, signals and reaps the jobs placed on them with
// an executor.Local, whose keeper keeps their exit statuses across an
// agent restart. Remote is the executor.Executor the broker uses with
// --no-local-agent: it runs each job on the agent of its first node
// (executor.Spec.Nodes), as Slurm runs a batch script on the first node
// of its allocation.
//
// # Protocol
//
// Agent NAME sends requests about node NODE on strata.v1.agent.NAME.NODE.OP
// (register, heartbeat, exit); the broker sends commands for NODE on
// strata.v1.node.NODE.OP (start, signal, release). Agent credentials
// ('strata user add NAME --agent --nodes HOSTLIST') allow exactly those
// subjects for their nodes, plus one reply to each command; only the
// broker's full-rights connection, which answers no request, publishes
// commands. So the NATS server enforces who speaks for which node, and
// no payload names its sender.
//
// A registration carries a session ID that the agent keeps in its state
// directory: a restarted agent takes its nodes back at once, while a
// second agent (another state directory) claiming a node whose agent was
// heard from within the node timeout is refused. Heartbeats list the jobs
// the agent runs on the node; the broker answers with those it does not
// know as running there (it ended them while the agent was away, or never
// recorded their start), and the agent kills them. A node whose agent is
// silent for the node timeout is down (RemoteOptions.NodesDown).
//
// # Persist, then act
//
// Start returns the agent's Record (with Node set), which the broker
// persists like any executor's. An exit is reported until the broker
// acknowledges it, delivered on Exits, persisted by the broker, and only
// then released on the agent, which then forgets it: an exit survives a
// crash of either side. Signals to a job whose agent is away wait in the
// Remote and go out, in order, when the agent is heard from again.
//
// # Where a job's records live, and why
//
// The agent writes each started job's Record to STATE_DIR/jobs/ID.json
// and removes it at release; a restarted agent adopts every recorded job
// (executor.Local.Adopt: running ones are watched, ended ones' statuses
// read from the keeper's status files) before it registers, and lists
// them. The broker holds the same Records, but the agent's own copy also
// finds a job the agent started whose start the broker never recorded (a
// start reply lost with a broker crash): it is listed, unknown to the
// broker, and killed, instead of running on unseen.
package agent
