package api

// Lists that can be long (jobs, reservations, QPU jobs, accounting) come a
// page at a time, so that no reply outgrows the server's maximum payload
// and a client can print the first page while it asks for the next. A
// request embeds Page; its reply carries the items and Next, the cursor of
// the page after it ("" on the last page). A client asks again with
// Cursor set to Next until Next is empty. Cursors are opaque: a client
// only hands back what the broker gave it.
//
// A page is at most Limit items, and fewer when their JSON would exceed
// MaxPageBytes (at least one item is always sent). Items added or removed
// between two pages may be missed or seen at their new place, as with any
// cursor over live data; none is seen twice.

// Page limits.
const (
	DefaultPageLimit = 500
	MaxPageLimit     = 5000
	// MaxPageBytes bounds a page's items, well under NATS's default
	// maximum payload of 1 MiB.
	MaxPageBytes = 512 << 10
)

// Page asks for one page of a list: at most Limit items (0: the
// DefaultPageLimit), starting after Cursor ("": from the beginning).
type Page struct {
	Limit  int    `json:"limit,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

// Validate checks the limit; the cursor is checked by the list that made
// it.
func (p Page) Validate() error {
	if p.Limit < 0 || p.Limit > MaxPageLimit {
		return Errorf(CodeInvalidArgument, "page limit %d is out of range: give 1 to %d, or 0 for %d", p.Limit, MaxPageLimit, DefaultPageLimit)
	}
	return nil
}

// Size is the number of items the page may hold.
func (p Page) Size() int {
	if p.Limit == 0 {
		return DefaultPageLimit
	}
	return p.Limit
}
