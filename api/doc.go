// Package api is version 1 of Strata's wire protocol, shared by the broker and
// every client: the NATS subjects requests travel on, the reply envelope, the
// table of error codes, the instance URI, and the JSON records exchanged.
//
// It imports nothing from NATS: it is plain data and pure functions, safe for
// concurrent use, and the one place a protocol change is made.
//
// # Subjects
//
// A request from user U to the instance at path P for operation OP is
// published on
//
//	strata.v1.req.U.P.OP        e.g. strata.v1.req.alice.root.physics.submit
//
// An instance path is a dot-separated list of tokens that starts with "root"
// ("root", "root.physics", "root.physics.j17"). User names, path tokens and
// executor names match [NamePattern]; an operation is one token matching
// [OpPattern] (the last token of the subject is always the operation, so a
// subject parses without knowing which instances exist). The NATS server, not
// the payload, vouches for U: a user's credentials allow publishing only under
// strata.v1.req.U.> and receiving replies only on the inbox prefix
// [Role.InboxPrefix] ("_INBOX_U").
//
// # Replies and errors
//
// Requests are the bare JSON of a request type (or empty). Every reply is an
// [Envelope]: {"v":1,"data":...} on success, {"v":1,"error":{"code":...,
// "message":...}} on failure, with the micro framework's error headers
// (Nats-Service-Error, Nats-Service-Error-Code) set as well. Codes are stable
// strings from one table ([Code]); messages are sentences a person can act
// on. A decoded error is an [*Error]; errors.Is(err, ErrNotFound) and friends
// compare codes, so callers branch on codes, never on message text.
//
// Servers decode requests strictly with [DecodeRequest] (unknown fields and
// trailing data are invalid_argument errors); clients decode replies
// leniently, so that a newer broker may add fields.
//
// # URIs
//
// An instance is named to people by a [URI], strata://HOST:PORT/root/physics.
// The environment variable STRATA_URI ([EnvURI]) holds the URI of the instance
// a command targets; STRATA_CREDS ([EnvCreds]) the credentials file.
package api
