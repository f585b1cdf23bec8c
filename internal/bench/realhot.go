package bench

import (
	"context"
	"time"

	"github.com/herdlock/herdlock/internal/capacity"
)

// RealHotModes are the modes of the real-server hot herd: those of
// figure 8 (see HotModes).
func RealHotModes() []HotMode { return HotModes() }

// RunRealHot runs the real-server hot herds: n invocations over
// HotArrival, the holder working HerdWork, each with its own SDK client,
// through the capacity model at DynamoDB's per-item limits in front of
// env's Dynoxide, in real time: for each mode of RealHotModes, on a warm key
// (WarmHolds holds, then WarmPause) and on a cold one. On a small machine
// the herd is CPU-bound (thousands of SDK clients, the model and the server
// share the cores), so its latencies say more about the machine than the
// protocol; its request counts do not depend on speed as much.
func RunRealHot(ctx context.Context, env *Env, n int) ([]HotResult, error) {
	hot, err := StartRealHotEnv(ctx, env.Server.Endpoint(), capacity.Config{})
	if err != nil {
		return nil, err
	}
	modes, err := selectedModes(RealHotModes())
	if err != nil {
		return nil, err
	}
	var rs []HotResult
	for _, warm := range []int{WarmHolds, 0} {
		for _, mode := range modes {
			rs = append(rs, RunHotScenario(ctx, hot, mode, HotScenario{N: n, Arrival: HotArrival, Work: HerdWork, Warm: warm}))
			time.Sleep(HotSettle)
		}
	}
	return rs, nil
}
