package zk

import (
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

// GetVersionW is GetVersion with a one-shot watch on the node.
func (c *Client) GetVersionW(p string) ([]byte, int32, <-chan gozk.Event, error) {
	a, err := c.abs(p)
	if err != nil {
		return nil, 0, nil, err
	}
	data, st, w, err := c.conn.GetW(a)
	if err != nil {
		return nil, 0, nil, opErr("get", p, err)
	}
	return data, st.Version, c.relay(w), nil
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
