package carrier

// fdTable is a carrier's registered fds by slot, which is what the poller
// reports their events with: a token is the slot plus one (0 is the
// carrier's eventfd) and, above, the table's generation count when the fd
// was registered or last put back on the poller (renew), so that a late
// event of a poll removed since, whether its fd's slot was reused or the
// fd was polled again, matches no entry (io_uring reports a poll's
// cancellation after the fact). It belongs to the carrier's owner.
type fdTable struct {
	fds  []*pollDesc // by slot; nil: free
	free []int32     // free slots
	gen  uint32      // bumped by every registration and renewal: tokens are unique per carrier
}

// add gives pd a slot and a generation.
func (ft *fdTable) add(pd *pollDesc) {
	if k := len(ft.free); k > 0 {
		pd.slot = ft.free[k-1]
		ft.free = ft.free[:k-1]
	} else {
		pd.slot = int32(len(ft.fds))
		ft.fds = append(ft.fds, nil)
	}
	ft.renew(pd)
	ft.fds[pd.slot] = pd
}

// renew gives pd a new generation, hence a new token: an fd that goes back
// on the poller after a remove needs one, since io_uring may still post
// the removed poll's last completion, under the old token.
func (ft *fdTable) renew(pd *pollDesc) {
	ft.gen++
	pd.gen = ft.gen
}

// drop frees pd's slot.
func (ft *fdTable) drop(pd *pollDesc) {
	ft.fds[pd.slot] = nil
	ft.free = append(ft.free, pd.slot)
}

// lookup returns the fd an event's token names, or nil when it was closed
// since the event was queued.
func (ft *fdTable) lookup(tok uint64) *pollDesc {
	slot := int(uint32(tok)) - 1
	if slot < 0 || slot >= len(ft.fds) {
		return nil
	}
	if pd := ft.fds[slot]; pd != nil && pd.gen == uint32(tok>>32) {
		return pd
	}
	return nil
}
