// Package resv holds reservations (DATs, dedicated access times): what staff
// ask for (Spec), its validation, access lists, lifecycle states, overlap
// modes and recurrence. It decides nothing about nodes by itself: the
// scheduling core (package instance) places a validated Spec on its
// timeline. Like the core, it reads no clock and does no I/O: the current
// time is always an argument.
package resv
