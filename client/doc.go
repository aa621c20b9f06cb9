// Package client is the Go client of a Strata broker, used by the strata CLI
// and any program that talks to Strata.
//
//	c, err := client.Dial("")          // $STRATA_URI, else strata://127.0.0.1:4222/root
//	defer c.Close()
//	var job api.Job
//	err = c.Call(ctx, api.OpSubmit, api.SubmitRequest{...}, &job)
//	if errors.Is(err, api.ErrPermissionDenied) { ... }
//
// # Credentials
//
// Dial connects with a NATS .creds file, the first of:
//
//  1. the file given with WithCreds;
//  2. the file named by $STRATA_CREDS;
//  3. DefaultCredsPath: $XDG_CONFIG_HOME/strata/LOGIN.creds (on Linux
//     ~/.config/strata/LOGIN.creds), where LOGIN is the operating-system
//     login name. Save the output of 'strata user add NAME' there.
//
// The Strata user name is the name in the credentials' JWT, not the login
// name; the client sets its inbox prefix to _INBOX_NAME, the only inbox the
// server lets that user read.
//
// # Errors
//
// Every error from Dial and Call is an *api.Error: replies' errors keep the
// broker's code and message; an unreachable broker is unavailable, refused
// credentials unauthenticated, a publish the server refuses
// permission_denied (at once, not after a timeout), no reply in time
// deadline_exceeded. errors.Is(err, api.ErrNotFound) and the like work.
//
// # Clusters and retries
//
// A URI may list several servers of one NATS cluster
// (strata://h1:4222,h2:4222/root); Dial connects to any of them, and a lost
// server is replaced by another at once. A call that gets no answer
// (unavailable, deadline_exceeded: the server was lost, a JetStream leader
// election or a broker taking over held the broker up) is sent again after
// a jittered exponential backoff, 100ms growing to 5s, until its context's
// deadline (WithTimeout, default 30s). Changes (api.IsChange) send every
// attempt with one idempotency key (api.HeaderRequestKey), so the broker
// makes a change once and answers every attempt alike. An answer, error
// or not, is never retried. "No responders" for an instance other than
// the root makes the client ask the root whether its broker is up: if it
// answers, the instance does not exist (not_found, at once); if not, no
// broker serves the tree yet (a standby taking over) and the call is sent
// again like any other without an answer.
//
// A Client is safe for concurrent use.
package client
