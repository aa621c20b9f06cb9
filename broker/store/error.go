package store

import "fmt"

// Error is a record that cannot be read: its bucket and key, and why.
type Error struct {
	Bucket, Key string
	Err         error
}

func (e *Error) Error() string {
	return fmt.Sprintf("store: record %s/%s: %v", e.Bucket, e.Key, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// ErrFuture is a record written by a newer broker than this one.
var ErrFuture = fmt.Errorf("written by a newer version of Strata (this broker reads versions up to %d): run the newer broker, or restore the state directory from a backup made by this version", Version)

// Version is the record format this broker writes.
const Version = 2

// recordError wraps err as the error of record bucket/key.
func recordError(bucket, key string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Bucket: bucket, Key: key, Err: err}
}

// version reads a record's "v" (0 when absent) and checks it is not from
// the future.
func checkVersion(v int) error {
	if v > Version {
		return fmt.Errorf("version %d %w", v, ErrFuture)
	}
	if v < 0 {
		return fmt.Errorf("version %d is not a version", v)
	}
	return nil
}
