// Package hostlist reads and writes the compressed host lists HPC people
// type every day: node[0-15], node[0-3,8,10-12], rack1-n[001-128],
// a[1-2],b3, n[1-2]-ib.
//
// # Syntax
//
// A hostlist is one or more elements separated by commas. An element is a
// host name in which any number of bracket groups stand for numbers:
//
//	node7              one name
//	node[0-3,8]        node0 node1 node2 node3 node8
//	n[1-2]-ib          n1-ib n2-ib
//	rack[1-2]-n[1-2]   rack1-n1 rack1-n2 rack2-n1 rack2-n2 (leftmost slowest)
//
// A bracket group holds comma-separated items, each a number (7) or an
// ascending range (3-5, both ends included). Zero padding is exact: an item
// is written with the width of its first number, so n[001-010] is n001 ...
// n010 and n[8-10] is n8 n9 n10. The second number of a range may be
// written without padding (001-10) but, if it has leading zeros, with the
// same width as the first (001-010, not 1-010). n01 and n1 are different
// hosts. Numbers have at most 18 digits.
//
// Host names are made of ASCII letters, digits, '-', '_' and '.'. Spaces
// and tabs are ignored around elements and around the items of a bracket
// group ("node[1, 3], node7"); anywhere else they are an error.
//
// # Errors
//
// Parse and Count return a *Error naming the input, the byte offset and the
// text of the offending part, and a sentence saying what is wrong and, when
// it can, how to write it instead:
//
//	hostlist: "node[3-1]": range 3-1 is descending; write node[1-3]
//
// Its Err field is ErrSyntax, ErrDuplicate or ErrTooLarge, which callers
// test with errors.Is. Refused: empty input or elements (a,,b), unclosed,
// unbalanced, nested or empty brackets, items that are not numbers or
// ranges (node[a-b]), descending ranges, padding that disagrees within a
// range, characters outside the host name alphabet, duplicate names
// (Parse only), and lists over the limits MaxNames, MaxNameLen and
// MaxBytes. The limits are checked by arithmetic on the parsed syntax
// before anything is expanded: node[0-999999999] fails at once, without
// allocating its names.
//
// # Canonical form
//
// Format writes a set of names in one canonical form: each name is split
// into prefix, number and suffix at one of its runs of digits; names are
// grouped by prefix, suffix and zero-padding width; each group is written
// as prefix[ranges]suffix with its numbers sorted and compressed into
// ranges (or as the plain name when the group has one name); groups are
// ordered by prefix, then suffix, then width. Names without digits are
// written as they are. Format depends only on the set of names, so
// Parse(Format(x)) is x as a set in canonical order and
// Format(Parse(Format(x))) == Format(x).
//
// # Thread safety
//
// Every function is pure and safe for concurrent use.
package hostlist
