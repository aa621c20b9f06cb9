// Package qpuexec is the QPU executor: the process that connects a device
// to a Strata broker over NATS. It registers for one backend, pulls the
// next job whenever its device is idle (the broker answers a pull as soon as
// a job is due, so nothing polls), sends heartbeats while it lives, and
// reports each job's measured device time and result.
//
// Its credentials have the executor role: the NATS server lets it publish
// only under its own name in the executor protocol's subjects and read only
// its own inbox, so it can neither submit work nor read anyone's replies.
//
// The device is either simulated (Options.Sim: package qpu's SimDevice, a
// state-vector simulator of OpenQASM 2.0 and of a compact form, "h q0; cx
// q0 q1"; a payload it cannot read fails the QPU job at once, with the
// line and the reason) or a program (Options.Command) that reads the
// payload on its standard input, finds the shot count in
// STRATA_QPU_SHOTS, and prints the histogram as JSON ({"counts": {"00":
// 512, ...}}) on its standard output.
package qpuexec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/qpu"
)

// Options configure an executor.
type Options struct {
	URL, Creds string // the broker's URI (strata://HOST:PORT/...) or a nats:// URL, and executor credentials
	Backend    string
	Sim        bool          // a simulated device
	SimBase    time.Duration // default 200ms
	SimPerShot time.Duration // default 100µs
	Seed       int64
	// Command runs each job on a real device's driver instead (see the
	// package documentation).
	Command []string
	Log     *slog.Logger
}

// Run serves jobs until ctx is cancelled. It returns an error only for a
// configuration it cannot run with; a broker that goes away is waited for.
func Run(ctx context.Context, o Options) error {
	if o.Backend == "" {
		return errors.New("qpu executor: no backend: give --backend NAME (see 'strata qpu status')")
	}
	if !o.Sim && len(o.Command) == 0 {
		return errors.New("qpu executor: no device: give --sim for a simulated device, or --command for a device driver")
	}
	if o.SimBase == 0 {
		o.SimBase = 200 * time.Millisecond
	}
	if o.SimPerShot == 0 {
		o.SimPerShot = 100 * time.Microsecond
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	name, err := credsName(o.Creds)
	if err != nil {
		return err
	}
	url := o.URL
	if url == "" {
		url = os.Getenv(api.EnvURI)
	}
	if !strings.HasPrefix(url, "nats://") && !strings.HasPrefix(url, "tls://") {
		u, err := api.ParseURI(url)
		if err != nil {
			return err
		}
		url = u.NATSURL()
	}
	e := &executor{o: o, name: name, log: o.Log.With("executor", name, "backend", o.Backend)}
	e.nc, err = nats.Connect(url,
		nats.Name("strata-qpu-executor-"+name),
		nats.UserCredentials(o.Creds),
		nats.CustomInboxPrefix(api.RoleExecutor.InboxPrefix(name)),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250*time.Millisecond),
	)
	if err != nil {
		return fmt.Errorf("qpu executor: cannot connect to %s: %w", url, err)
	}
	defer e.nc.Close()
	return e.run(ctx)
}

// credsName returns the executor name in a .creds file, refusing a user's.
func credsName(path string) (string, error) {
	if path == "" {
		path = os.Getenv(api.EnvCreds)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("qpu executor: cannot read credentials: %w (make them with 'strata user add NAME --executor')", err)
	}
	tok, err := jwt.ParseDecoratedJWT(b)
	if err != nil {
		return "", fmt.Errorf("qpu executor: %s is not a NATS credentials file: %w", path, err)
	}
	uc, err := jwt.DecodeUserClaims(tok)
	if err != nil {
		return "", fmt.Errorf("qpu executor: %s holds no valid JWT: %w", path, err)
	}
	if !uc.Tags.Contains(api.RoleTag + string(api.RoleExecutor)) {
		return "", fmt.Errorf("qpu executor: %s holds credentials for %q that are not an executor's; make them with 'strata user add NAME --executor'", path, uc.Name)
	}
	return uc.Name, nil
}

type executor struct {
	o    Options
	name string
	nc   *nats.Conn
	log  *slog.Logger

	mu     sync.Mutex
	job    uint64             // on the device now
	cancel context.CancelFunc // lets go of it
	hb     time.Duration
	wait   time.Duration
}

// call sends one request of the executor protocol and decodes the reply.
func (e *executor) call(ctx context.Context, op string, req, resp any) error {
	data, err := json.Marshal(req)
	if err != nil {
		return err
	}
	msg, err := e.nc.RequestWithContext(ctx, api.ExecSubject(e.name, op), data)
	if err != nil {
		return err
	}
	return api.DecodeReply(msg.Data, resp)
}

// retry calls op until it succeeds, ctx ends, or the broker refuses for a
// reason a retry cannot fix.
func (e *executor) retry(ctx context.Context, op string, req, resp any) error {
	for {
		err := e.call(ctx, op, req, resp)
		var ae *api.Error
		if err == nil || ctx.Err() != nil || errors.As(err, &ae) && ae.Code != api.CodeUnavailable {
			return err
		}
		e.log.Warn("the broker did not answer; retrying", "op", op, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (e *executor) run(ctx context.Context) error {
	var w api.ExecWelcome
	if err := e.retry(ctx, api.OpExecRegister, api.ExecHello{Backend: e.o.Backend, Sim: e.o.Sim}, &w); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("qpu executor: register for %s: %w", e.o.Backend, err)
	}
	e.hb, e.wait = time.Duration(w.HeartbeatMS)*time.Millisecond, time.Duration(w.PullWaitMS)*time.Millisecond
	if e.hb <= 0 {
		e.hb = time.Second
	}
	if e.wait <= 0 {
		e.wait = 10 * time.Second
	}
	e.log.Info("registered", "heartbeat", e.hb)
	abort, err := e.nc.Subscribe(api.RoleExecutor.InboxPrefix(e.name)+".abort", func(m *nats.Msg) {
		var t api.ExecTask
		if json.Unmarshal(m.Data, &t) == nil {
			e.letGo(t.ID)
		}
	})
	if err != nil {
		return fmt.Errorf("qpu executor: %w", err)
	}
	defer abort.Unsubscribe()
	go e.heartbeats(ctx)
	for ctx.Err() == nil {
		var t api.ExecTask
		pctx, cancel := context.WithTimeout(ctx, e.wait+5*time.Second)
		err := e.call(pctx, api.OpExecPull, api.ExecPullRequest{Backend: e.o.Backend, WaitMS: e.wait.Milliseconds()}, &t)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				e.log.Debug("pull failed; retrying", "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(250 * time.Millisecond):
				}
			}
			continue
		}
		if t.ID == 0 {
			continue
		}
		e.execute(ctx, t)
	}
	return nil
}

// letGo cancels job id if it is on the device.
func (e *executor) letGo(id uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.job == id && e.cancel != nil {
		e.log.Info("letting go of a job", "job", id)
		e.cancel()
	}
}

func (e *executor) heartbeats(ctx context.Context) {
	t := time.NewTicker(e.hb)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		e.mu.Lock()
		job := e.job
		e.mu.Unlock()
		var rep api.ExecHeartbeatReply
		hctx, cancel := context.WithTimeout(ctx, e.hb)
		err := e.call(hctx, api.OpExecHeartbeat, api.ExecHeartbeat{Backend: e.o.Backend, Job: job}, &rep)
		cancel()
		if err == nil && rep.Cancel && job != 0 {
			e.letGo(job)
		}
	}
}

// execute runs one job on the device and reports it.
func (e *executor) execute(ctx context.Context, t api.ExecTask) {
	jctx, cancel := context.WithCancel(ctx)
	e.mu.Lock()
	e.job, e.cancel = t.ID, cancel
	e.mu.Unlock()
	start := time.Now()
	counts, log, derr := e.device(jctx, t)
	elapsed := time.Since(start)
	cancel()
	e.mu.Lock()
	e.job, e.cancel = 0, nil
	e.mu.Unlock()
	rep := api.ExecReport{Job: t.ID, ExecMS: elapsed.Milliseconds(), Counts: counts, Log: log}
	if derr != nil {
		rep.Error = derr.Error()
	}
	if ctx.Err() != nil {
		return // shutting down: the broker requeues the job when our heartbeats stop
	}
	if err := e.retry(ctx, api.OpExecResult, rep, nil); err != nil {
		e.log.Warn("result not accepted", "job", t.ID, "err", err)
		return
	}
	e.log.Info("job done", "job", t.ID, "shots", t.Shots, "exec", elapsed.Round(time.Millisecond), "err", rep.Error)
}

// device runs a job on the simulated device or the driver command.
func (e *executor) device(ctx context.Context, t api.ExecTask) (map[string]int, string, error) {
	if e.o.Sim {
		// The device's time is its model's (Duration), not the host's: the
		// simulation runs while the timer does.
		d := qpu.SimDevice{Base: e.o.SimBase, PerShot: e.o.SimPerShot, Seed: uint64(e.o.Seed)}
		log := fmt.Sprintf("simulated device, seed %d", e.o.Seed)
		timer := time.NewTimer(d.Duration(t.Shots))
		defer timer.Stop()
		counts, err := d.Run(t.ID, t.Payload, t.Shots)
		if err != nil { // refused at once, as a device's compiler would
			return nil, log, fmt.Errorf("the simulated device cannot run this circuit: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil, log, errors.New("let go before the end")
		case <-timer.C:
		}
		return counts, log, nil
	}
	cmd := exec.CommandContext(ctx, e.o.Command[0], e.o.Command[1:]...)
	cmd.Stdin = bytes.NewReader(t.Payload)
	cmd.Env = append(os.Environ(), "STRATA_QPU_SHOTS="+strconv.Itoa(t.Shots), "STRATA_QPU_JOB="+strconv.FormatUint(t.ID, 10))
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	log := func() string { return tail(stderr.String(), 4096) }
	if err := cmd.Run(); err != nil {
		return nil, log(), fmt.Errorf("the device driver %s failed: %v", e.o.Command[0], err)
	}
	var res struct {
		Counts map[string]int `json:"counts"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return nil, log(), fmt.Errorf("the device driver %s printed no JSON histogram ({\"counts\": {...}}): %v", e.o.Command[0], err)
	}
	return res.Counts, log(), nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
