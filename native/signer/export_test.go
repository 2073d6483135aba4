package signer

import "time"

// SetClock makes g sign as if the time were now().
func SetClock(g *Signer, now func() time.Time) { g.now = now }
