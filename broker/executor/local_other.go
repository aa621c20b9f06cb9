//go:build !linux

package executor

import (
	"errors"
	"syscall"
	"time"
)

// LocalOptions configure a Local executor; see the Linux version.
type LocalOptions struct {
	StateDir     string
	PollInterval time.Duration
	StatusWait   time.Duration
}

// Local runs jobs as local processes. It needs Linux (process groups,
// pidfds, /proc); elsewhere NewLocal fails.
type Local struct{}

var errNotLinux = errors.New("executor: the local executor needs Linux")

// NewLocal fails: the local executor needs Linux.
func NewLocal(LocalOptions) (*Local, error) { return nil, errNotLinux }

func (*Local) Start(Spec) (Record, error)            { return Record{}, errNotLinux }
func (*Local) Signal(string, syscall.Signal) error   { return errNotLinux }
func (*Local) Terminate(string, time.Duration) error { return errNotLinux }
func (*Local) Exits() <-chan Exit                    { return nil }
func (*Local) Adopt(Record) error                    { return errNotLinux }
func (*Local) Release(string) error                  { return errNotLinux }
func (*Local) Close() error                          { return nil }

var _ Executor = (*Local)(nil)
