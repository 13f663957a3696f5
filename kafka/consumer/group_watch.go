package consumer

import (
	"errors"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// What triggers a rebalance (docs/PROTOCOL.md §6): a change of the group's consumer registry, of the broker registry or of
// a subscribed topic's broker list, a new ZooKeeper session, and the start. §3.2: "each consumer registers a
// Zookeeper watcher on both the broker registry and the consumer registry, and will be notified whenever a
// change in the broker set or the consumer group occurs."

// requestRebalance asks the rebalance loop for a rebalance; requests made while one is pending coalesce.
func (g *GroupConsumer) requestRebalance() {
	select {
	case g.trigger <- struct{}{}:
	default:
	}
}

// startWatches starts one watch goroutine per registry path and one for new sessions.
func (g *GroupConsumer) startWatches() {
	paths := []string{zk.ConsumerIDsPath(g.cfg.GroupID), zk.BrokerIDsPath}
	for t := range g.topics {
		paths = append(paths, zk.BrokerTopicPath(t))
	}
	for _, p := range paths {
		g.wg.Add(1)
		go g.watchChildren(p)
	}
	g.wg.Add(1)
	go g.watchSessions()
}

// watchChildren keeps a children watch on p (or an existence watch while p does not exist) and asks for a
// rebalance each time it fires. ZooKeeper watches are one-shot, so each is set again before the rebalance it
// triggers reads the registries: no change can slip between the two.
func (g *GroupConsumer) watchChildren(p string) {
	defer g.wg.Done()
	for {
		_, ch, err := g.zk.ChildrenW(p)
		if errors.Is(err, zk.ErrNoNode) {
			var exists bool
			exists, ch, err = g.zk.ExistsW(p)
			if err == nil && exists {
				continue // created meanwhile: watch its children
			}
		}
		if err != nil {
			if !g.pause(g.cfg.rebalanceBackoff()) {
				return
			}
			continue
		}
		select {
		case <-g.closing:
			return
		case ev, ok := <-ch:
			if ok {
				g.log.Debug("registry changed", "path", p, "event", ev.Type.String())
			}
			g.requestRebalance()
		}
	}
}

// watchSessions re-registers the consumer and rebalances when ZooKeeper gives it a new session after the old
// one expired: its ephemeral registration and owner nodes died with the old session (0.7's handleNewSession).
func (g *GroupConsumer) watchSessions() {
	defer g.wg.Done()
	ch, cancel := g.zk.NewSessions()
	defer cancel()
	for {
		select {
		case <-g.closing:
			return
		case <-ch:
			g.log.Warn("new ZooKeeper session; registering again and rebalancing")
			g.mu.Lock()
			// The owner nodes went with the old session and others may own and commit those partitions by
			// now: forget them without committing (as 0.7 did), so that neither their owner nodes nor their
			// offsets are touched. What was handed out since the last commit may come again: at-least-once.
			g.stopFetchers()
			g.gen++
			for _, ss := range g.streams {
				for _, s := range ss {
					s.reset(g.gen)
				}
			}
			if len(g.owned) > 0 {
				g.ownershipChanged()
			}
			g.owned = nil
			err := g.register()
			g.mu.Unlock()
			if err != nil {
				g.log.Warn("registering again failed; the rebalance will retry", "err", err)
			}
			g.requestRebalance()
		}
	}
}

// rebalanceLoop serves rebalance requests until Close or a failed rebalance.
func (g *GroupConsumer) rebalanceLoop() {
	defer g.wg.Done()
	for {
		select {
		case <-g.closing:
			return
		case <-g.trigger:
		case <-g.relayout:
			g.relayoutFetchers()
			continue
		}
		err := g.syncedRebalance("registry change")
		if errors.Is(err, ErrGroupClosed) {
			return
		}
		if err != nil {
			g.fail(err)
			return
		}
	}
}

// pause waits d or until Close; it reports false on Close.
func (g *GroupConsumer) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-g.closing:
		return false
	case <-t.C:
		return true
	}
}
