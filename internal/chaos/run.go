package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/herdlock/herdlock/lockcore"
)

// table is the lock table's name in Dynoxide.
const table = "chaos-locks"

// proc is one worker process.
type proc struct {
	slot, inc int
	cmd       *exec.Cmd
	done      chan struct{}
	frozen    bool
	killed    bool
}

// parent is the state of a run in the parent process.
type parent struct {
	cfg      Config
	rec      *recorder
	res      *resource
	prox     []*proxy
	opProxy  *proxy    // the operator's
	op       *operator // force-releases in storm phases
	ops      sync.WaitGroup
	capacity *capacityModel // between the proxies and Dynoxide
	specs    workerSpec     // template; Slot and Inc set per spawn
	end      int64

	mu      sync.Mutex // guards the fields below
	rng     *rand.Rand
	procs   []*proc
	holding map[int]string // slot -> key held, from the workers' events
	heldAt  map[int]int64  // slot -> Mono when its current hold was acquired
	killed  map[string]bool
	pending []action
	stderr  []string // last stderr lines, for diagnostics
}

// action is something the scheduler must do at Mono time At.
type action struct {
	At int64
	Do func()
}

// Run runs the harness described by cfg and returns its report. It starts
// Dynoxide, the proxies, the resource and the workers, injects faults
// through the phases, stops everything, and runs the checks. ctx can stop
// the run early; the checks then run on what was recorded.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	for i := range cfg.Phases {
		if cfg.Phases[i].Kind == Herd && cfg.Phases[i].Dur == 0 {
			cfg.Phases[i].Dur = cfg.herdDur()
		}
	}
	rec, err := newRecorder(cfg.LogPath)
	if err != nil {
		return nil, err
	}
	defer rec.close()

	dyn, err := startServer(ctx)
	if err != nil {
		return nil, err
	}
	defer dyn.Close()
	if err := lockcore.CreateTable(ctx, serverClient(dyn.Endpoint()), table); err != nil {
		return nil, err
	}

	capModel, err := startCapacity(dyn.Endpoint())
	if err != nil {
		return nil, err
	}
	defer capModel.close()

	p := &parent{cfg: cfg, rec: rec, capacity: capModel, rng: rand.New(rand.NewPCG(uint64(cfg.Seed), 0xc4a05)),
		holding: map[int]string{}, heldAt: map[int]int64{}, killed: map[string]bool{}}
	p.res, err = newResource(rec)
	if err != nil {
		return nil, err
	}
	defer p.res.close()
	p.res.onFetch = p.onFetch
	p.res.failing = p.failing
	p.res.onFreeze = p.onFreeze
	drops := &dropCycle{}
	for slot := range cfg.Workers {
		px, err := newProxy(slot, cfg.Seed, capModel.URL(), rec, cfg.Faults, cfg.hangFor(), cfg.Storm.DropScale, drops)
		if err != nil {
			return nil, err
		}
		defer px.close()
		p.prox = append(p.prox, px)
	}
	if p.opProxy, err = newProxy(cfg.Workers, cfg.Seed, capModel.URL(), rec, cfg.Faults, cfg.hangFor(), cfg.Storm.DropScale, drops); err != nil {
		return nil, err
	}
	defer p.opProxy.close()
	// The operator's client is a command line's, not a lock's: it waits
	// out a brownout.
	opStore, err := lockcore.NewDynamoStore(lockClient(p.opProxy.URL(), operatorAttemptTimeout, 3, cfg.MaxBackoff), table)
	if err != nil {
		return nil, err
	}
	p.op = &operator{store: intentStore{inner: opStore, operator: true}, rec: rec, timeout: 5 * time.Second}

	// The timeline: phases start after the workers have had time to start.
	origin := Mono() + int64(1500*time.Millisecond)
	t := origin
	for i := range cfg.Phases {
		cfg.Phases[i].Start = t
		t += int64(cfg.Phases[i].Dur)
		cfg.Phases[i].End = t
	}
	p.cfg = cfg
	p.end = t
	rec.note("config", cfg)
	p.specs = p.template(origin)
	rec.note("herd", p.specs.Herd)

	p.procs = make([]*proc, cfg.Workers)
	for slot := range cfg.Workers {
		if err := p.spawn(slot, 0); err != nil {
			p.stopAll()
			return nil, err
		}
	}
	p.schedule(ctx)
	p.ops.Wait()
	p.stopAll()
	// A proxy may still hold a request that its worker gave up on (a
	// delayed answer, a hang): it is history too, and a check that read
	// the records without it would find a read missing. Shutdown waits
	// for the proxies' requests in flight.
	for _, px := range p.prox {
		px.close()
	}
	p.opProxy.close()
	p.progress("run finished; checking the recorded history")
	rep := check(&p.cfg, rec, p.killed, time.Now().UnixNano()-Mono())
	rep.LogPath = cfg.LogPath
	return rep, nil
}

func (p *parent) progress(format string, args ...any) {
	if p.cfg.Progress != nil {
		fmt.Fprintf(p.cfg.Progress, "chaos: "+format+"\n", args...)
	}
}

// template builds the workers' spec: skews per slot and phase, herd rounds.
func (p *parent) template(origin int64) workerSpec {
	c := p.cfg
	s := workerSpec{Seed: c.Seed, Variant: c.Variant, Resource: p.res.URL(), Table: table, Phases: c.Phases,
		Origin: origin, End: p.end, Keys: c.Keys, Epoch: c.Epoch,
		Lease: c.Lease, Poll: c.Poll, MaxWait: c.MaxWait, MaxHold: c.MaxHold, MaxAttempts: c.MaxAttempts,
		ClockAllowance: c.ClockAllowance, Drift: c.Drift,
		AttemptTimeout: c.AttemptTimeout, ClientTimeout: c.clientTimeout(), Attempts: c.Attempts, MaxBackoff: c.MaxBackoff,
		WorkMedian: c.WorkMedian, LongWorkP: c.LongWorkP, LongWorkMin: c.LongWorkMin, LongWorkMax: c.LongWorkMax,
		FreezeAfterReturnP: c.Faults.FreezeAfterReturnP, NearMaxHoldP: c.Storm.NearMaxHoldP, FreshSuccess: c.Storm.FreshSuccess,
		IdemP: c.Storm.Idempotent, IdemMismatchP: c.Storm.IdemMismatch}
	for i, ph := range c.Phases {
		if ph.Kind != Herd {
			continue
		}
		for r := range c.HerdRounds {
			s.Herd = append(s.Herd, herdRound{Key: fmt.Sprintf("herd.p%d.r%d", i, r), Phase: i,
				At: ph.Start + int64(500*time.Millisecond) + int64(r)*int64(c.HerdGap), Kill: r%2 == 1, Fail: r%4 == 2})
		}
	}
	return s
}

// skews draws slot's clock for every phase.
func (p *parent) skews(slot int) map[int]*Skew {
	rng := rand.New(rand.NewPCG(uint64(p.cfg.Seed), uint64(slot)+0x5eed))
	out := map[int]*Skew{}
	for i, ph := range p.cfg.Phases {
		r := p.cfg.skewRange(ph.Kind)
		sk := &Skew{OffsetMs: rng.Int64N(2*r.OffsetMs+1) - r.OffsetMs, DriftPPM: (2*rng.Float64() - 1) * r.DriftPPM}
		for range r.Steps {
			sk.Steps = append(sk.Steps, Step{At: ph.Start + rng.Int64N(int64(ph.Dur)), DeltaMs: rng.Int64N(2*r.StepMs+1) - r.StepMs})
		}
		out[i] = sk
	}
	return out
}

func (p *parent) spawn(slot, inc int) error {
	spec := p.specs
	spec.Slot, spec.Inc = slot, inc
	spec.Proxy = p.prox[slot].URL()
	spec.Skews = p.skews(slot)
	b, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	if inc == 0 {
		p.rec.note("skew", map[string]any{"w": slot, "skews": spec.Skews})
	}
	cmd := exec.Command(p.cfg.WorkerCommand[0], p.cfg.WorkerCommand[1:]...)
	cmd.Env = append(os.Environ(), WorkerEnv+"="+string(b), "GOMAXPROCS=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("chaos: start worker %d: %w", slot, err)
	}
	pr := &proc{slot: slot, inc: inc, cmd: cmd, done: make(chan struct{})}
	p.mu.Lock()
	p.procs[slot] = pr
	p.mu.Unlock()
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var e Event
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue // a line cut short by SIGKILL
			}
			p.rec.event(e)
			p.track(e)
		}
	}()
	go func() {
		defer readers.Done()
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.rec.note("stderr", map[string]any{"w": slot, "inc": inc, "line": line})
			p.mu.Lock()
			p.stderr = append(p.stderr, fmt.Sprintf("w%d.%d: %s", slot, inc, line))
			if len(p.stderr) > 20 {
				p.stderr = p.stderr[1:]
			}
			p.mu.Unlock()
		}
	}()
	go func() {
		readers.Wait()
		_ = cmd.Wait()
		close(pr.done)
	}()
	return nil
}

// track follows which worker holds which key, to aim freezes and kills.
func (p *parent) track(e Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case e.Kind == EvWait && e.Outcome == "ACQUIRED":
		p.holding[e.Worker] = e.Key
		p.heldAt[e.Worker] = e.T2
	case e.Kind == EvRelease, e.Kind == EvStart:
		delete(p.holding, e.Worker)
	}
}

// signal sends sig to slot's current process.
func (p *parent) signalLocked(slot int, sig syscall.Signal) bool {
	pr := p.procs[slot]
	if pr == nil || pr.killed || pr.cmd.Process == nil {
		return false
	}
	return pr.cmd.Process.Signal(sig) == nil
}

// kill SIGKILLs slot's process and schedules its respawn.
func (p *parent) killLocked(slot int, detail string) bool {
	if !p.signalLocked(slot, syscall.SIGKILL) {
		return false
	}
	pr := p.procs[slot]
	pr.killed = true
	delete(p.holding, slot)
	p.rec.fault(Fault{T: Mono(), Worker: slot, Kind: FaultKill, Detail: detail})
	inc := pr.inc + 1
	at := Mono() + int64(p.cfg.Faults.RespawnAfter)
	if at < p.end-int64(time.Second) {
		p.pending = append(p.pending, action{At: at, Do: func() {
			<-pr.done
			if err := p.spawn(slot, inc); err != nil {
				p.rec.note("error", err.Error())
			}
		}})
	}
	return true
}

// freezeLocked SIGSTOPs slot for d and schedules the SIGCONT.
func (p *parent) freezeLocked(slot int, d time.Duration, kind string) bool {
	pr := p.procs[slot]
	if pr == nil || pr.frozen || !p.signalLocked(slot, syscall.SIGSTOP) {
		return false
	}
	pr.frozen = true
	now := Mono()
	p.rec.fault(Fault{T: now, Worker: slot, Kind: kind, Until: now + int64(d), Detail: d.String()})
	p.pending = append(p.pending, action{At: now + int64(d), Do: func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.procs[slot] == pr {
			p.signalLocked(slot, syscall.SIGCONT)
			pr.frozen = false
		}
	}})
	return true
}

// failing reports whether key is the key of a failing herd round.
func (p *parent) failing(key string) bool {
	for _, r := range p.specs.Herd {
		if storeKey(r.Key) == key {
			return r.Fail
		}
	}
	return false
}

// onFetch kills the holder of a kill round at its upstream fetch.
func (p *parent) onFetch(slot int, key string) bool {
	for _, r := range p.specs.Herd {
		if storeKey(r.Key) != key || !r.Kill {
			continue
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.killed[key] {
			return false
		}
		if p.killLocked(slot, "herd holder "+key) {
			p.killed[key] = true
			return true
		}
	}
	return false
}

// onFreeze freezes a worker that returned without releasing.
func (p *parent) onFreeze(slot int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.cfg.Faults
	d := f.FreezeAfterReturnMin + time.Duration(p.rng.Int64N(int64(f.FreezeAfterReturnMax-f.FreezeAfterReturnMin)+1))
	p.freezeLocked(slot, d, FaultFreezeReturned)
}

// expGap draws an exponential gap with the given mean.
func (p *parent) expGap(mean time.Duration) int64 {
	return int64(float64(mean) * -math.Log(1-p.rng.Float64()))
}

// firstGap draws the gap to a fault's first occurrence in phase idx: as
// expGap, but within the first quarter of a storm phase, so that every
// storm, however short, has each of its faults.
func (p *parent) firstGap(mean time.Duration, idx int) int64 {
	g := p.expGap(mean)
	if idx >= 0 && p.cfg.Phases[idx].Kind == Storm {
		g = min(g, int64(p.cfg.Phases[idx].Dur/4))
	}
	return g
}

// schedule drives the run until its end: proxy modes per phase, then
// partitions, freezes and kills in the A, B and storm phases, the storm
// faults (storm.go), and the pending SIGCONTs and respawns.
func (p *parent) schedule(ctx context.Context) {
	f := p.cfg.Faults
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	cur := -1
	var nextPart, nextFreeze, nextKill int64
	var storm stormDue
	for now := Mono(); now < p.end; now = Mono() {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		idx := phaseIndex(p.cfg.Phases, now)
		if now < p.cfg.Phases[0].Start {
			idx = -1
		}
		if idx != cur {
			cur = idx
			mode := modeOff
			if idx >= 0 {
				switch p.cfg.Phases[idx].Kind {
				case SmallSkew, LargeSkew:
					mode = modeFull
				case Storm:
					mode = modeStorm
				case Herd, Throttled:
					mode = modeLight
				}
				ph := p.cfg.Phases[idx]
				p.capacity.setPhase(ph.Kind, p.cfg.Throttle)
				p.progress("phase %d (%s, %v) begins", idx, ph.Kind, ph.Dur)
				p.rec.note("phase", map[string]any{"i": idx, "kind": ph.Kind, "t": now})
			}
			for _, px := range p.allProxies() {
				px.setMode(mode)
				if mode < modeFull {
					px.partition(0, false) // faults of a phase end with it
				}
			}
			if mode < modeFull {
				p.thawAll()
			}
			p.mu.Lock()
			nextPart, nextFreeze, nextKill = now+p.firstGap(f.PartitionEvery, idx), now+p.firstGap(f.FreezeEvery, idx), now+p.firstGap(f.KillEvery, idx)
			storm = p.endStorm(now, idx)
			p.mu.Unlock()
		}
		p.mu.Lock()
		var due []action
		keep := p.pending[:0]
		for _, a := range p.pending {
			if a.At <= now {
				due = append(due, a)
			} else {
				keep = append(keep, a)
			}
		}
		p.pending = keep
		kind := PhaseKind("")
		if idx >= 0 {
			kind = p.cfg.Phases[idx].Kind
		}
		faulty := kind == SmallSkew || kind == LargeSkew || kind == Storm
		if kind == Storm {
			p.stormLocked(now, &storm)
		}
		if faulty && f.PartitionEvery > 0 && now >= nextPart {
			nextPart = now + p.expGap(f.PartitionEvery)
			slot := p.rng.IntN(p.cfg.Workers)
			d := f.PartitionMin + time.Duration(p.rng.Int64N(int64(f.PartitionMax-f.PartitionMin)+1))
			respOnly := p.rng.IntN(2) == 0
			p.prox[slot].partition(now+int64(d), respOnly)
			p.rec.fault(Fault{T: now, Worker: slot, Kind: FaultPartition, Until: now + int64(d), Detail: fmt.Sprintf("%v responsesOnly=%v", d, respOnly)})
		}
		if faulty && f.FreezeEvery > 0 && now >= nextFreeze {
			// A freeze that is due waits for a holder to freeze.
			if slot, ok := p.pickHolderLocked(); ok {
				d := time.Duration((f.FreezeMin + (f.FreezeMax-f.FreezeMin)*p.rng.Float64()) * float64(p.cfg.Lease))
				if p.freezeLocked(slot, d, FaultFreeze) {
					nextFreeze = now + p.expGap(f.FreezeEvery)
				}
			}
		}
		if faulty && f.KillEvery > 0 && now >= nextKill {
			nextKill = now + p.expGap(f.KillEvery)
			slot, ok := p.pickHolderLocked()
			if !ok {
				slot = p.rng.IntN(p.cfg.Workers)
			}
			p.killLocked(slot, "scheduled")
		}
		p.mu.Unlock()
		for _, a := range due {
			a.Do()
		}
	}
}

// pickHolderLocked picks a worker that holds a lock, if any.
func (p *parent) pickHolderLocked() (int, bool) {
	var slots []int
	for slot := range p.cfg.Workers {
		if _, ok := p.holding[slot]; ok && p.procs[slot] != nil && !p.procs[slot].frozen && !p.procs[slot].killed {
			slots = append(slots, slot)
		}
	}
	if len(slots) == 0 {
		return 0, false
	}
	return slots[p.rng.IntN(len(slots))], true
}

// thawAll SIGCONTs every frozen worker now.
func (p *parent) thawAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pr := range p.procs {
		if pr != nil && pr.frozen {
			p.signalLocked(pr.slot, syscall.SIGCONT)
			pr.frozen = false
		}
	}
}

// stopAll thaws every worker, gives them time to finish their cycle, and
// kills those still running.
func (p *parent) stopAll() {
	p.mu.Lock()
	p.pending = nil
	procs := append([]*proc(nil), p.procs...)
	for _, pr := range procs {
		if pr != nil && pr.frozen {
			p.signalLocked(pr.slot, syscall.SIGCONT)
			pr.frozen = false
		}
	}
	p.mu.Unlock()
	grace := time.NewTimer(p.cfg.MaxWait + p.cfg.LongWorkMax + 3*time.Second)
	defer grace.Stop()
	for _, pr := range procs {
		if pr == nil {
			continue
		}
		select {
		case <-pr.done:
		case <-grace.C:
			grace.Reset(0)
			_ = pr.cmd.Process.Kill()
			<-pr.done
		}
	}
}
