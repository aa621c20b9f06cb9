package api

import "time"

// User lifecycle operations (root only, admins only).
const (
	// OpUserDel: UserRequest → User (the record as it was). The user's
	// record is deleted and their credentials revoked: a connected
	// client is cut off at once, and a fresh connect is refused.
	OpUserDel = "user-del"
	// OpUserRevoke: UserRequest → User (as it is after). The user's
	// credentials are revoked; the user stays known and can be given new
	// ones with user-add and force.
	OpUserRevoke = "user-revoke"
)

// UserRequest names a user.
type UserRequest struct {
	Name string `json:"name"`
}

// MaxCredsLife bounds UserAddRequest.ExpiresS: ten years.
const MaxCredsLife = 10 * 366 * 24 * time.Hour
