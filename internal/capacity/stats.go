package capacity

import "maps"

// OpStats counts one operation on one item.
type OpStats struct {
	Requests        int     `json:"requests"`        // arrived at the proxy
	Throttled       int     `json:"throttled"`       // answered with a throttling error
	ConditionFailed int     `json:"conditionFailed"` // let through, failed their condition
	Units           float64 `json:"units"`           // capacity consumed (WCU for writes, RCU for reads)
}

// ItemStats counts the requests on one item, by operation ("GetItem",
// "UpdateItem", "PutItem", "DeleteItem").
type ItemStats struct {
	Ops        map[string]OpStats `json:"ops"`
	WriteUnits float64            `json:"wcu"`
	ReadUnits  float64            `json:"rcu"`
}

// Writes returns the write requests that arrived, throttled ones included.
func (s ItemStats) Writes() int {
	n := 0
	for op, o := range s.Ops {
		if isWrite(op) {
			n += o.Requests
		}
	}
	return n
}

// Throttled returns the throttled requests of op.
func (s ItemStats) Throttled(op string) int { return s.Ops[op].Throttled }

func (s ItemStats) clone() ItemStats {
	s.Ops = maps.Clone(s.Ops)
	return s
}

func (s *ItemStats) add(op string, f func(*OpStats)) {
	if s.Ops == nil {
		s.Ops = map[string]OpStats{}
	}
	o := s.Ops[op]
	f(&o)
	s.Ops[op] = o
}

func isWrite(op string) bool { return op == "PutItem" || op == "UpdateItem" || op == "DeleteItem" }
