// Package when reads times and durations as people type them on a command
// line (strata submit -t 1-12:00, strata resv create --start 17:00
// --duration 8h), and writes durations back compactly.
//
// # Durations
//
// ParseDuration reads, besides Go durations (90m, 1h30m, 1.5h, 300ms):
//
//	2d, 1d12h, 1.5d        a day is 24 hours, whatever the calendar
//	D-HH:MM:SS, D-HH:MM, D-HH
//	HH:MM:SS, MM:SS        Slurm's forms (sbatch -t)
//	90                     a bare integer is minutes, as in Slurm
//
// In the colon forms the first field may be any size (120:00:00 is 120
// hours); the fields after it are 0-59, and hours after a day count are
// 0-23. Durations are never negative; 0 is allowed and means zero (not
// "unlimited", as Slurm's -t 0 does). FormatDuration writes the compact
// form (1d2h3m, 45s, 0s, 1.5s) that ParseDuration reads back exactly.
//
// # Times
//
// ParseTime reads an instant relative to a given now, which the caller
// passes (the broker its clock, the simulator its virtual time, the CLI
// time.Now(), tests a fixed value); the package never reads the wall clock.
// It reads what Slurm's --begin reads, weekday names, and RFC 3339:
//
//	now, now+1hour, now-30min  now, plus or minus a count and a unit (seconds,
//	now+2days, now+90          minutes, hours, days, weeks, abbreviated or not);
//	                           a bare count is seconds, as in Slurm
//	now+1h30m, +30m, -30m      or any duration ParseDuration reads
//	17:00, 9:30 PM             the next such wall-clock time: today, or
//	                           tomorrow if today's is not after now
//	midnight, noon, elevenses, the next 00:00, 12:00, 11:00, 15:00, 16:00
//	fika, teatime
//	today, tomorrow            midnight at the start of that day
//	tue, tuesday 09:00         the next such day whose time is still ahead
//	12/08, 12/08/27, 120827    MM/DD[/YY], MMDDYY: without a year, the next one
//	2026-12-03T17:00[:00]      no zone; 2026-12-03 is midnight
//	2026-12-03T17:00:00Z       RFC 3339, with a zone (fractional seconds allowed)
//
// A day and a time of day combine in either order (tomorrow 09:00, noon
// fri, 12/08 17:00, 12/08-17:00). Every form without a zone is a wall-clock
// time in now's location; RFC 3339 keeps the zone written. Wall-clock times
// that a daylight-saving change skips or repeats resolve as time.Date
// resolves them. Results outside years 0-9999 are refused.
//
// # Errors
//
// Every error is a *Error naming what was being read and the input as
// given, with a reason when there is a more precise one, and listing the
// accepted forms:
//
//	when: cannot read time "02/30": February has no day 30; use now, now+1hour, ...
//	when: cannot read duration "-5m": durations cannot be negative; use 90m, 1h30m, ...
//
// Its Err is ErrSyntax, ErrNegative or ErrRange, for errors.Is.
//
// # Thread safety
//
// Every function is pure and safe for concurrent use.
package when
