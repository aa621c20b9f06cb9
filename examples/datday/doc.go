// Package datday is a DAT day for a class, as a shell script an HPC centre
// can copy (datday.sh): staff create a DAT for the listed students a few
// minutes ahead, students queue work into it by its URI before it starts,
// a job of another user in its way is killed at its start, the students'
// jobs run inside the DAT, and staff read 'strata acct --resv' after.
//
// The test runs the script against a real broker on a free port with a
// DAT that starts a few seconds ahead.
package datday
