package broker_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/broker"
)

// TestStateDirLock: a second broker on a state directory in use refuses
// to start and says why; once the first is gone, it starts.
func TestStateDirLock(t *testing.T) {
	dir := t.TempDir()
	first := startBroker(t, dir)
	_, err := broker.New(broker.Options{Listen: "127.0.0.1:0", StateDir: dir, Logger: testLogger()})
	if err == nil || !strings.Contains(err.Error(), "in use by another broker (pid") || !strings.Contains(err.Error(), "--state-dir") {
		t.Fatalf("second broker on %s: %v, want a refusal naming the holder", dir, err)
	}
	first.Shutdown()
	second := startBroker(t, dir)
	second.Shutdown()
}

// TestMissingKeysRefused: a state directory with state but without its
// keys is not given new keys, which would lock every user out.
func TestMissingKeysRefused(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, dir)
	b.Shutdown()
	if err := os.RemoveAll(filepath.Join(dir, "keys")); err != nil {
		t.Fatal(err)
	}
	_, err := broker.New(broker.Options{Listen: "127.0.0.1:0", StateDir: dir, Logger: testLogger()})
	if err == nil || !strings.Contains(err.Error(), "keys are missing") || !strings.Contains(err.Error(), "restore") {
		t.Fatalf("broker without keys: %v, want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "keys", "account.nk")); err == nil {
		t.Errorf("a new account key was minted")
	}
}
