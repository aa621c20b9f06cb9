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
// A Client is safe for concurrent use.
package client
