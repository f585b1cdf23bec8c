package bench

// Results is everything one run of cmd/bench measured, as written to its
// JSON output.
type Results struct {
	Machine     Machine     `json:"machine"`
	StartedAt   string      `json:"startedAt"`
	WallSeconds float64     `json:"wallSeconds"`
	Settings    Settings    `json:"settings"`
	Requests    []OpCount   `json:"requestsPerOperation"`
	Uncontended Uncontended `json:"uncontended"`
	// UncontendedDynalite is figure 2 again on dynalite, whose own
	// expression parsing dominates its figures (issue 23's note).
	UncontendedDynalite *Uncontended   `json:"uncontendedDynalite,omitempty"`
	BaselineAR          BaselineUncont `json:"baselineUncontended"`
	Herds               []HerdResult   `json:"herds"`
	Hot                 []HotResult    `json:"hotKey"`
	// RealHot is figure 10: the hot-key herd on real servers (issue 23).
	RealHot []HotResult `json:"realHotKey,omitempty"`
	// Handoffs is figure 11: handoffs to a few waiters on Dynoxide.
	Handoffs []HandoffResult `json:"handoffs,omitempty"`
	// Brownout is figure 12: herds on a table that answers slowly (see
	// BrownoutAnswers), on Dynoxide and simulated, and BrownoutHolds its
	// long holds.
	Brownout      []HotResult          `json:"brownout,omitempty"`
	BrownoutHolds []BrownoutHoldResult `json:"brownoutHolds,omitempty"`
	// Issue23 is issue 23's target table, as the run ends with it.
	Issue23   []TargetRow       `json:"issue23Targets,omitempty"`
	Abandoned []AbandonedResult `json:"abandoned"`
	Failing   []FailingResult   `json:"failingUpstream"`
	ColdStart ColdStart         `json:"coldStart"`
	CPU       CPU               `json:"cpu"`
	// ProcessHerds is figure 7: same-key herds in one process.
	ProcessHerds []ProcessHerdResult `json:"processHerds,omitempty"`
	// Idempotency is figure 13: duplicates that wait (herdlock's
	// idempotency) against duplicates that raise (Powertools-style).
	Idempotency []IdempotencyResult `json:"idempotency,omitempty"`
	// Cost is figure 14: the cost of a burst on one key, per side.
	Cost []CostResult `json:"cost,omitempty"`
}

// Settings are the lock settings of the run.
type Settings struct {
	PollMs         float64 `json:"pollMs"`
	HerdLeaseMs    float64 `json:"herdLeaseMs"`
	MaxReadRate    float64 `json:"maxReadRate"`
	HerdWorkMs     float64 `json:"herdWorkMs"`
	AbandonLeaseMs float64 `json:"abandonedLeaseMs"`
	BaselinePollMs float64 `json:"baselineHerdPollMs"`
	Server         string  `json:"server"` // the DynamoDB-API server and its version
}

// Machine describes where the run happened.
type Machine struct {
	NumCPU    int    `json:"nproc"`
	CPUModel  string `json:"cpuModel"`
	GoVersion string `json:"goVersion"`
	OS        string `json:"os"`
	// LoadAvg is /proc/loadavg at the start and at the end of the run:
	// the machine may be shared.
	LoadAvgStart string `json:"loadavgStart"`
	LoadAvgEnd   string `json:"loadavgEnd"`
}
