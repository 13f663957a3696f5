package zk

import (
	"errors"
	"fmt"

	gozk "github.com/go-zookeeper/zk"
)

// GetVersion returns the data of a node and its version, for a later conditional SetVersion.
func (c *Client) GetVersion(p string) ([]byte, int32, error) {
	a, err := c.abs(p)
	if err != nil {
		return nil, 0, err
	}
	data, st, err := c.conn.Get(a)
	if err != nil {
		return nil, 0, opErr("get", p, err)
	}
	return data, st.Version, nil
}

// GetCreated returns the data of a node and the zxid of the transaction that created it (its czxid): a
// broker registration's epoch (Broker.Epoch).
func (c *Client) GetCreated(p string) ([]byte, int64, error) {
	a, err := c.abs(p)
	if err != nil {
		return nil, 0, err
	}
	data, st, err := c.conn.Get(a)
	if err != nil {
		return nil, 0, opErr("get", p, err)
	}
	return data, st.Czxid, nil
}

// SetVersion replaces the data of a node only if its version is still version, and returns the new version.
// Someone else's change in between is ErrBadVersion (wrapped).
func (c *Client) SetVersion(p string, data []byte, version int32) (int32, error) {
	a, err := c.abs(p)
	if err != nil {
		return 0, err
	}
	st, err := c.conn.Set(a, data, version)
	if err != nil {
		return 0, opErr("set", p, err)
	}
	return st.Version, nil
}

// ErrFenced: a fenced write found its fence node changed (replication's controller: a newer controller has
// been elected since, docs/PROTOCOL.md §10).
var ErrFenced = errors.New("zk: fenced: the fence node has changed")

// SetVersionFenced is SetVersion done only while fence still has version fenceVersion, atomically (one
// ZooKeeper multi-operation); create makes the node instead (version ignored). A changed fence is ErrFenced.
func (c *Client) SetVersionFenced(p string, data []byte, version int32, create bool, fence string, fenceVersion int32) (int32, error) {
	a, err := c.abs(p)
	if err != nil {
		return 0, err
	}
	f, err := c.abs(fence)
	if err != nil {
		return 0, err
	}
	var op any = &gozk.SetDataRequest{Path: a, Data: data, Version: version}
	if create {
		op = &gozk.CreateRequest{Path: a, Data: data, Acl: gozk.WorldACL(gozk.PermAll)}
	}
	res, err := c.conn.Multi(&gozk.CheckVersionRequest{Path: f, Version: fenceVersion}, op)
	if len(res) == 2 && res[0].Error != nil {
		return 0, fmt.Errorf("%w: %s is no longer at version %d (%v); %s not written", ErrFenced, fence, fenceVersion, res[0].Error, p)
	}
	if len(res) == 2 && res[1].Error != nil {
		return 0, opErr("set", p, res[1].Error)
	}
	if err != nil {
		return 0, opErr("multi", p, err)
	}
	if create {
		return 0, nil
	}
	return res[1].Stat.Version, nil
}
