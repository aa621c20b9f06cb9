package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"syscall"

	"github.com/nats-io/nats.go"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker/executor"
)

// The messages of the agent protocol (api.AgentSubject, api.NodeSubject).
// Requests are JSON; replies are api envelopes, so that errors carry their
// codes. Job IDs are the executor's (the broker's job IDs as text).

// Hello registers an agent session for one node. Jobs are the jobs the
// agent runs on that node (started and not yet exited), so that the broker
// can tell it which of them it no longer knows as running.
type Hello struct {
	Session string   `json:"session"`
	Jobs    []string `json:"jobs,omitempty"`
	Version string   `json:"version,omitempty"`
}

// Welcome accepts a Hello: how often to send heartbeats, and the jobs to
// kill.
type Welcome struct {
	HeartbeatMS int64    `json:"heartbeat_ms"`
	Kill        []string `json:"kill,omitempty"`
}

// Heartbeat says the session still serves the node, running Jobs.
type Heartbeat struct {
	Session string   `json:"session"`
	Jobs    []string `json:"jobs,omitempty"`
}

// HeartbeatReply names the jobs to kill: the broker does not know them as
// running on the node (it declared them lost while the agent was away, or
// never recorded their start).
type HeartbeatReply struct {
	Kill []string `json:"kill,omitempty"`
}

// ExitReport is how a job on the node ended.
type ExitReport struct {
	Session string        `json:"session"`
	Exit    executor.Exit `json:"exit"`
}

// ExitReply acknowledges an exit. Release says the broker has no use for
// it (it does not know the job): the agent forgets it at once. Otherwise
// the broker sends OpNodeRelease once the exit is durable.
type ExitReply struct {
	Release bool `json:"release,omitempty"`
}

// StartRequest starts a job. The Spec travels whole, so that what the
// executor learns to do with a Spec (its user, say) the agent does too.
type StartRequest struct {
	Spec executor.Spec `json:"spec"`
}

// StartReply is the started job's Record (with Node set), or why it could
// not start.
type StartReply struct {
	Record executor.Record `json:"record"`
	Fail   *StartFailure   `json:"fail,omitempty"`
}

// StartFailure is an executor.StartError on the wire.
type StartFailure struct {
	Op      string `json:"op"`
	Path    string `json:"path"`
	Message string `json:"message"`
}

// SignalRequest signals a job's process group.
type SignalRequest struct {
	ID     string `json:"id"`
	Signal int    `json:"signal"`
}

// ReleaseRequest says a job's exit is durable.
type ReleaseRequest struct {
	ID string `json:"id"`
}

// Reply bodies of signal and release: empty on success; a signal of a job
// that is not running fails with api.CodeNotFound.

// startFailure turns a start error into its wire form.
func startFailure(err error) *StartFailure {
	var se *executor.StartError
	if errors.As(err, &se) {
		return &StartFailure{Op: se.Op, Path: se.Path, Message: se.Err.Error()}
	}
	return &StartFailure{Op: "exec", Message: err.Error()}
}

// startErr turns a StartFailure back into the error the executor gave.
func (f *StartFailure) startErr(id, node string) error {
	return &executor.StartError{ID: id, Op: f.Op, Path: f.Path, Err: fmt.Errorf("%s (on %s)", f.Message, node)}
}

// respond answers m with the api envelope of v or err. A request sent
// without a reply subject (a release) is not answered.
func respond(m *nats.Msg, v any, err error) error {
	if m.Reply == "" {
		return nil
	}
	data, eErr := api.EncodeReply(v)
	if err != nil || eErr != nil {
		data = api.EncodeError(errors.Join(err, eErr))
	}
	return m.Respond(data)
}

// call sends one request and decodes its reply envelope into resp.
func call(ctx context.Context, nc *nats.Conn, subject string, req, resp any) error {
	data, err := json.Marshal(req)
	if err != nil {
		return err
	}
	msg, err := nc.RequestWithContext(ctx, subject, data)
	if err != nil {
		return err
	}
	return api.DecodeReply(msg.Data, resp)
}

// signalName is sig's name for logs: "SIGTERM", or its number.
func signalName(sig syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT", syscall.SIGKILL: "SIGKILL",
		syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2", syscall.SIGTERM: "SIGTERM", syscall.SIGCONT: "SIGCONT", syscall.SIGSTOP: "SIGSTOP",
	}
	if s, ok := names[sig]; ok {
		return s
	}
	return fmt.Sprint("signal ", int(sig))
}
