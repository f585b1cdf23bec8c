/*
 * herdlock.pml: the corrected lock protocol (docs/protocol.md,
 * lockcore/store.go) with 3 processes in one burst.
 * Read README.md first. Build: spin -a [-DNAME=value ...] herdlock.pml
 *
 * Switches (0/1): WALLPATH (default 1: the wall-clock branch of the acquire
 * condition), FIX_SELF (default 0; 1: a waiter that reads the item held by
 * an earlier revision of its own, an attempt that landed late, takes it as
 * ACQUIRED within that attempt's validity and frees it past it, as
 * lockcore's wait does (lockcore/ownattempt.go), README.md "Findings"), FIX_OPREL (default 0; 1: a release never
 * applies over an operator's release, README.md "Findings"). UPFAIL: the
 * upstream the holders call (0 answers, 1 fails, 2 fails with or without a
 * not-before). MAXATT: WithMaxAttempts. ANN (default 0; 1: release
 * announcements, lockcore/announce.go, with ANNK = 1 or 2 shards, and an
 * earlier episode: the item starts released with an old success, announced
 * on every shard); NTHROT: first acquires the store throttles (ANN).
 * With ANN a waiter takes a success, read on the lock item or announced,
 * only when it is the burst's (OURS, lockcore's waiter.ours).
 * RFIRST (default 0; 1: a worker's first request may be a strongly
 * consistent read instead of the acquire, as a store's first call, a hot
 * key or WithReadFirst make it, lockcore/readfirst.go: a held item is
 * waited for, a success the wait takes (OURS with ANN) is RELEASED, and
 * anything else, a lost answer too, goes on to the first acquire).
 * PRED (default 0; 1: predictive waiting, lockcore/predict.go: after a
 * read of a held item a waiter may sleep to any tick up to the guessed end,
 * acquiredAt + PCAP on its wall clock, cut at its deadline); WDL: the
 * wait's deadline, monotonic units after the call began (0: beyond the
 * horizon), with Property 11 (no waiter asleep past its deadline).
 * MAXCHECK (default 1, lockcore since 0dacace: validity is also capped at
 * the hold's monotonic deadline, acquire's send + MAXD*(1-rho), and once it
 * has reached it the keeper's turn is a consistent read, which ends the
 * hold when the item is no longer ours; 0: renewals to the end, the cap on
 * the lease only, as the model had it before). ENV (default 0: every call
 * in its own environment; 1: the three calls share one environment's
 * memory, HotKeys, and a wait that reads the item held by an acquire that
 * another call of it gave up as it returned frees it and races,
 * lockcore/lostattempt.go). The release condition is lockcore's since
 * f5d7268: #rev = :rev AND #rel = :false, a refused retry of an applied
 * release answered as applied (releasedAlready).
 *
 * Mutants (each removes one guard of lockcore; each must give a
 * counterexample, see check.sh): MUT_HELD (1: the failure guard on the
 * #rel branch only, 2: no failure guard), MUT_FRESH (1: the fresh-success
 * guard on the #rel branch only, 2: none), MUT_RENEW (1: a renewal may
 * shorten the lease), MUT_FREE (1: no free of
 * a possible ghost hold, 2: the free writes an empty failure episode),
 * MUT_OPR (1: a renewal refused on its own, released revision is retried as
 * transient), MUT_GUARDD (1: no guard (D) #rev <> :newRev, a revision may be
 * acquired twice), MUT_ANN (1: a waiter accepts any announced success, no
 * fence or time check), MUT_STALE (1: a waiter takes any success it reads
 * on the lock item, as lockcore did before 6a722f2: Finding 4), MUT_ALLOW
 * (1: rule (d) of OURS with twice the clock allowance), MUT_PRED (1: a
 * predicted sleep is not cut at the wait's deadline), MUT_REL (1: the
 * release condition before f5d7268, #rev = :rev AND (#rel = :false OR
 * #result = :result), with FIX_OPREL's clause when FIX_OPREL), MUT_MAXCHK
 * (1: no turn once validity reached the hard maximum, lockcore before
 * 0dacace), MUT_ENV (1: the environment's memory also frees the revision
 * a returned call holds; 2: the waiters do not consult it). OLDREL (ANN) moves
 * the earlier episode's release time. EPS, TAKE and MARGIN can be overridden to check mutants
 * too.
 */
#include "common.pml"

#ifndef WALLPATH
#define WALLPATH 1
#endif
#ifndef FIX_SELF
#define FIX_SELF 0
#endif
#ifndef FIX_OPREL
#define FIX_OPREL 0
#endif
#ifndef RFIRST
#define RFIRST 0
#endif
#ifndef UPFAIL
#define UPFAIL 0
#endif
#ifndef MAXATT
#define MAXATT 2                         /* WithMaxAttempts (the default) */
#endif
#ifndef NBD
#define NBD 8                            /* a failure's not-before: now + NBD units (2 ticks) */
#endif
#ifndef MUT_HELD
#define MUT_HELD 0
#endif
#ifndef MUT_FRESH
#define MUT_FRESH 0
#endif
#ifndef MUT_RENEW
#define MUT_RENEW 0
#endif
#ifndef MUT_FREE
#define MUT_FREE 0
#endif
#ifndef MUT_OPR
#define MUT_OPR 0
#endif
#ifndef MUT_GUARDD
#define MUT_GUARDD 0
#endif
#ifndef MUT_REL
#define MUT_REL 0
#endif
#ifndef MAXCHECK
#define MAXCHECK 1
#endif
#ifndef ENV
#define ENV 0
#endif
#ifndef MUT_ENV
#define MUT_ENV 0
#endif
#ifndef GHOSTT
#define GHOSTT 3                         /* ENV: ticks a waiter of the environment may take to free a ghost */
#endif
/* ENV: the revision r is one a call of the environment gave up as it
   returned (HotKeys, lostattempt.go): its owner returned (RELEASED,
   FAILED, or ACQUIRED with another revision) and r is not the one it
   holds; MUT_ENV=1: any revision of a call that returned, the held one
   too (the memory not checked against the revision it holds); MUT_ENV=2:
   the waiters do not consult the memory (Property 6 still allows its
   ghosts GHOSTT ticks: the mutant shows that bound is a property) */
#define RETURNED(o) (ph[o] == D_REL || ph[o] == D_FAIL || ph[o] == HOLD || ph[o] == D_ACQ)
#define LOST(r) (ENV && (r) != 0 && RETURNED(OWNER(r)) && \
                 (MUT_ENV == 1 || !((ph[OWNER(r)] == HOLD || ph[OWNER(r)] == D_ACQ) && (r) == hrev[OWNER(r)])))
/* the item in i's response is held by a revision another call of i's
   environment gave up */
#define ENVLOST(i) (ENV && MUT_ENV != 2 && sex[i] && !srel[i] && OWNER(srev[i]) != i && LOST(srev[i]))
#ifndef MUT_MAXCHK
#define MUT_MAXCHK 0
#endif
#if MAXCHECK
/* the holder's monotonic deadline, lockcore's hold.deadline: the send
   time of the acquire + maxHold*(1-rho) */
#define HDL(rv) (amono[rv] + MAXD - MAXD*(RMAX-U)/U)
/* validity has reached the hard maximum: a renewal would extend nothing,
   so the turn is a check (a consistent read) */
#define ATMAX(i) (vu[i] >= hdl[i])
#else
#define ATMAX(i) false
#endif
/* the keeper takes turns (MUT_MAXCHK: none once validity reached the
   maximum, lockcore before 0dacace) */
#define TURNS(i) (!(MUT_MAXCHK && ATMAX(i)))
#ifndef ANN
#define ANN 0
#endif
#ifndef ANNK
#define ANNK 1                           /* announcement shards: 1 or 2 */
#endif
#ifndef NTHROT
#define NTHROT 0
#endif
#ifndef MUT_ANN
#define MUT_ANN 0
#endif
#ifndef MUT_STALE
#define MUT_STALE 0
#endif
#ifndef MUT_ALLOW
#define MUT_ALLOW 0
#endif
#ifndef PRED
#define PRED 0
#endif
#ifndef PCAP
#define PCAP 24                          /* PRED: acquiredAt + PCAP (wall units) bounds the guessed end
                                            plus wakeDevs deviations: mean + 0.75 dev of the item's
                                            history (6 ticks, 1.5 leases) */
#endif
#ifndef WDL
#define WDL 0                            /* the wait's deadline: monotonic units after the call began;
                                            0: beyond the horizon (no deadline) */
#endif
#ifndef MUT_PRED
#define MUT_PRED 0
#endif
#define DL(i) (rate[i]*start[i] + WDL)   /* i's deadline on its monotonic clock */
#define DLTICK(i) TICK_AT(i, DL(i))      /* the first tick its clock reads it */
#if ANN
#define OLDF 1                           /* the earlier episode's fence */
#ifndef OLDREL
#define OLDREL (-40)                     /* ... and its release time, wall units (10 ticks before t=0) */
#endif
#else
#define OLDF 0
#endif
/* fresh (WithFreshSuccess): the window outlasts the horizon, so every
   success of the run is fresh and the earlier episode's is not (fresh_ in
   apply) */
#define FRESH(f) ((f) > OLDF)
#define TSTART(i) (wst[i] - off[i])      /* ghost: true time (units) when i's call began (ANN) */

#ifndef EPS
#define EPS (2*OFF)                      /* clock allowance: >= the largest offset difference */
#endif
#ifndef TAKE
#define TAKE (LEASE + LEASE*(RMAX-U)/U + POLLI)  /* clock-free takeover: lease*(1+rho)+poll */
#endif

/* worker phases below D_ACQ */
#define IDLE 0
#define ACQ 1      /* acquire sent */
#define AREAD 2    /* consistent read after an acquire of unknown outcome */
#define WAIT 3     /* sleeping until the next poll */
#define POLL 4     /* consistent GetItem sent */
#define HOLD 5     /* returned ACQUIRED */
#define FREE 6     /* freeing a possible ghost hold: the settling read failed */
#define APOLL 7    /* GetAnnouncement sent (ANN) */
#define FREEOWN 8  /* freeing a late copy of its own acquire, past that attempt's validity (FIX_SELF) */
/* holder sub-states */
#define H_WORK 0
#define H_WRITING 1
#define H_RELEASING 2

/* the lock item. Time is abstract for the failure window and the
   fresh-success window: both outlast the horizon, so "recent" is a flag that
   a failure release sets and a success or the operator clears. */
bool iex, irel;
byte irev, ifence, ibeat, ires, iresf;
short ilu, iexp;
byte ifail;              /* failures: failed attempts without a not-before in the episode */
short inb;               /* notBeforeMs (wall units), 0: none */
bool irec;               /* failRecentUntilMs > now: the failure is recent */
bool iopr;               /* failReason = operator_release */
byte maxissued;          /* ghost: highest fence ever issued (Property 1) */
int succmask;            /* ghost: bit f set when success was published for fence f */
byte oprev;              /* ghost: the revision the operator released, 0: none */
byte oprt;               /* ghost: the tick it did (Property 12) */
/* ghost: the failure episode as the upstream saw it (Property 7) */
byte efail;              /* failures without a not-before published in the episode */
bool elastnb;            /* the episode's last failure carried a not-before */
short enbv;              /* ... this one */
byte ecalls;             /* upstream calls since the episode's last failure */

/* waiter state */
byte nrev[NP], myrev[NP];
short amono[NP*NREV+1];  /* monotonic send time of each acquire attempt */
bool initial[NP], hasobs[NP];
bool rfirst[NP];          /* its first request is a read, still unanswered (RFIRST) */
byte obsrev[NP], obsbeat[NP];
short t0[NP];
/* holder state */
byte hrev[NP], hfence[NP], hst[NP], hres[NP], relatt[NP], wdue[NP], rdue[NP];
short vu[NP], hexp[NP], rnmono[NP], rnlease[NP];
#if MAXCHECK
short hdl[NP];           /* the monotonic deadline of the hold (hold.deadline) */
#endif
byte hfail[NP];          /* the episode's failures in the acquired item */
bool hrec[NP];           /* ... and whether its failure was recent */
short hnb[NP];           /* the not-before of this holder's failure, 0: none */
/* the item's failure fields in the response */
byte sfail[NP];
short snb[NP];
bool srec[NP], sopr[NP];

#if ANN
/* release announcements (lockcore/announce.go) */
short irelat;            /* the item's relAt: the releasing holder's wall clock (successes only) */
short srelat[NP];
byte annf[ANNK];         /* shard s: the announced fence (0: none) */
short annrel[ANNK];      /* ... and its release time */
byte apf[NP];            /* an Announce in flight from waiter i: its fence (0: none) */
short aprel[NP];
byte apsh[NP], aps[NP];  /* its shard and send tick */
bool apfan[NP];          /* it is the copy to the other shard, after the first applied */
byte shard[NP];          /* waiter i's shard */
byte minf[NP];           /* minFence: the highest fence i saw holding the lock */
byte seenf[NP];          /* seenFence: the highest fence i saw on the lock item; the item always
                            exists in ANN runs (fence >= 1), so seenf > 0 is lockcore's seen */
short wst[NP];           /* startMs: i's wall clock when its call began */
int smask0[NP];          /* ghost: succmask when i's call began (Property 10) */
byte sannf[NP];          /* the shard read's answer: fence (0: none) and release time */
short sannrel[NP];
byte nthrot;
hidden byte s_;
hidden byte ours_;
#endif

hidden byte ok, got;
hidden byte fresh_, held_, open_;
hidden byte op_, st_, rv_;
hidden short nv_;
hidden byte pw_;
#if WDL > 0
#define WAITING(i) && MONO(i) < DL(i)
#else
#define WAITING(i)
#endif

#define HOLDER_ACK(i) (ph[i] == HOLD && hst[i] == H_WRITING && wack[i] != 0)
/* a holder whose lock the operator released believes it holds it until its
   next renewal: the operator's act, excepted from Property 3 */
#define INSIDE(j) (ph[j] == HOLD && hst[j] != H_RELEASING && MONO(j) < vu[j] && hrev[j] != oprev)
/* Property 6: the item is held by a revision of a live process that has
   finished without ever having been told it holds it, or that was told the
   operator released it (guard D: that revision is never held again) */
#define GHOST(i) (ph[i] >= D_ACQ && ph[i] != CRASHED && iex && !irel && OWNER(irev) == i && (irev != hrev[i] || irev == oprev))
#ifndef CHECK_P6
#define CHECK_P6 1
#endif
/* Property 11: no waiter is asleep once its monotonic clock has reached its
   deadline (its next read, or its return, is due by then; a pause holds a
   due wake, never a future one) */
#if WDL > 0
#define LATE(i) (ph[i] == WAIT && due[i] > now && MONO(i) >= DL(i))
#define INV11 ; ASSERTN(11, p11, !LATE(0) && !LATE(1) && !LATE(2))
#define CLOCK11 ASSERTN(11, p11, !LATE(0) && !LATE(1) && !LATE(2)); /* also at every tick */
#else
#define INV11
#define CLOCK11
#endif
/* Property 12 (not in the default CHECKS: it needs runs without pauses,
   losses or delays): a holder whose lock the operator released learns it
   at its next turn, a renewal or, at the hard maximum, a check. It is not
   inside its validity (INSIDE without the operator's exception) once its
   monotonic clock reads a renewal interval and a tick (the turn's
   rounding to a tick) past the operator's release. */
#define BLIND(j) (ph[j] == HOLD && hst[j] != H_RELEASING && MONO(j) < vu[j] && oprev != 0 && \
                  hrev[j] == oprev && MONO(j) >= rate[j]*oprt + RENEWI + rate[j])
#define INV12 ; ASSERTN(12, p12, !BLIND(0) && !BLIND(1) && !BLIND(2))
#if ENV
/* Property 6 with an environment's memory (ENV): the item held by a
   revision the environment gave up (a late copy that landed after its call
   returned) is a ghost that the environment's waiters free: it is not
   flagged at once, but it must not last GHOSTT ticks while a call of the
   environment waits (gw: since when it has). Any other ghost is
   flagged at once, as without ENV. */
byte gw = NEVER;
#define WAITER(j) (ph[j] >= ACQ && ph[j] <= FREEOWN && ph[j] != HOLD && !paused[j])
#define LOSTHELD (iex && !irel && LOST(irev) && irev != oprev)   /* guard D's ghost is never excused */
#define GHOSTX(i) (GHOST(i) && !(LOST(irev) && irev != oprev))
inline env_inv() {
  if
  :: LOSTHELD && (WAITER(0) || WAITER(1) || WAITER(2)) -> if :: gw == NEVER -> gw = now :: else fi
  :: else -> gw = NEVER
  fi;
  ASSERTN(6, p6, gw == NEVER || now < gw + GHOSTT)
}
#define ENV_INV env_inv();
#else
#define GHOSTX(i) GHOST(i)
#define ENV_INV
#endif
#define CLOCK_INV CLOCK11 ENV_INV ASSERTN(12, p12, !BLIND(0) && !BLIND(1) && !BLIND(2))
#if CHECK_P6
#define INV ENV_INV ASSERTN(6, p6, !GHOSTX(0) && !GHOSTX(1) && !GHOSTX(2)) INV11 INV12
#else
#define INV skip INV11 INV12
#endif

/* Property 5 */
#define CRASHED_HOLDS (iex && !irel && ph[OWNER(irev)] == CRASHED)
#define SOME_WAITER (ph[0] < HOLD || ph[1] < HOLD || ph[2] < HOLD)
#define TAKEN ((irel && ires == SUCC) || (iex && !irel && ph[OWNER(irev)] == HOLD))
#ifdef LIVENESS
ltl p5 { [] ((CRASHED_HOLDS && SOME_WAITER) -> <> TAKEN) }
#endif

inline snap(j) {
  sex[j] = iex; srel[j] = irel; srev[j] = irev; sbeat[j] = ibeat; sfence[j] = ifence;
  sres[j] = ires; sresf[j] = iresf; slu[j] = ilu; sexp[j] = iexp;
  sfail[j] = ifail; snb[j] = inb; srec[j] = irec; sopr[j] = iopr;
#if ANN
  srelat[j] = irelat;
#endif
  skip
}

/* the episode as the upstream saw it starts again */
inline episode_reset() {
  efail = 0; elastnb = 0; enbv = 0; ecalls = 0
}

/* The Store contract of lockcore/store.go, one atomic step per request. */
inline apply(op, rev, anow, alu, aexp, ahas, aobr, aobb, ares, akind, afail, anb, j, resp) {
  if
  :: op == OP_ACQ ->
     /* absent OR ((#rel OR lapsed OR observed) AND NOT fresh AND NOT held
        back): acquireCondition in lockcore/dynamostore.go, acquirable in
        memstore.go. Every acquire of the model comes from
        TryAcquireElseWaitForRelease (the fresh-success guard is on) with
        MaxAttempts = MAXATT. */
     fresh_ = irel && ires == SUCC && iresf > OLDF;  /* the earlier episode's success is not fresh */
     held_ = irel && ires == FAIL && irec && (inb > anow || ifail >= MAXATT);
     open_ = (WALLPATH && (iexp < anow - EPS || ilu < anow - EPS)) || (ahas && irev == aobr && ibeat == aobb);
     ok = (!iex ||
           (irel && !(MUT_FRESH < 2 && fresh_) && !(MUT_HELD < 2 && held_)) ||
           (open_ && !(MUT_FRESH == 0 && fresh_) && !(MUT_HELD == 0 && held_)));
#if !MUT_GUARDD
     /* (D) AND #rev <> :newRev: a revision is acquired at most once, so a
        late copy of an applied acquire cannot take the item again after
        its revision was released (by its holder, by settle's free, or by
        the operator) */
     ok = ok && !(iex && irev == rev);
#endif
     if
     :: ok -> iex = 1; irel = 0; irev = rev; ifence++;
              ASSERTN(1, p1, ifence > maxissued);   /* P1 */
              maxissued = ifence; ibeat = 0; ilu = alu; iexp = aexp; ires = 0; iresf = 0; iopr = 0
              /* the failure episode stays: the new holder counts its attempt from it */
     :: else
     fi;
     ok = ok || (iex && irev == rev && !irel)        /* an earlier attempt was applied (and not released since) */
  :: op == OP_REN ->
     /* #rev = :rev AND #rel = :false AND #lu <= :leaseUntil; when only the
        last part fails, DynamoStore's second write (#rev = :rev AND
        #rel = :false) moves the beat alone: together, one atomic step that
        never shortens the lease (MemoryStore's max). A late SDK attempt
        (resp = 0) is the first write alone: nobody sends its second. */
     ok = (iex && irev == rev && !irel);
     if
     :: MUT_RENEW == 1 -> skip                       /* mutant: the lease may move back */
     :: MUT_RENEW != 1 && !resp -> ok = ok && ilu <= alu
     :: else
     fi;
     if
     :: ok && (MUT_RENEW == 1 || ilu <= alu) -> ilu = alu; ibeat++
     :: ok && !(MUT_RENEW == 1 || ilu <= alu) -> ibeat++   /* beat-only */
     :: else
     fi
  :: op == OP_REL ->
#if MUT_REL
     /* mutant, lockcore before f5d7268: #rev = :rev AND (#rel = :false OR
        #result = :result): a retry rewrites its own release, and a
        failure release lands on any failure of its revision */
     ok = (iex && irev == rev && (!irel || ires == ares));
#if FIX_OPREL
     ok = ok && !(irel && iopr);                     /* never over an operator's release */
#endif
#else
     /* releaseCond: #rev = :rev AND #rel = :false (a holder's release and
        a free alike; the operator's is operator_release below) */
     ok = (iex && irev == rev && !irel);
#endif
     if
     :: ok && akind == 1 ->                          /* freeing a possible ghost hold */
        if
        :: !irel -> irel = 1; ires = FAIL; iresf = ifence;
#if MUT_FREE == 2
           ifail = 0; inb = 0; irec = 0              /* mutant: the episode is erased */
#else
           skip                                      /* the episode stays as the item has it */
#endif
        :: else                                      /* already released: nothing changes */
        fi
     :: ok && akind == 0 ->
        ASSERTN(9, p9, !(irel && iopr));             /* P9: no operator release overwritten */
        if
        :: !irel && ares == FAIL && anb != 0 -> elastnb = 1; enbv = anb; ecalls = 0
        :: !irel && ares == FAIL && anb == 0 -> efail++; elastnb = 0; ecalls = 0
        :: else
        fi;
        irel = 1; ires = ares; iresf = ifence;
        if
        :: ares == SUCC -> succmask = succmask | (1 << ifence); ifail = 0; inb = 0; irec = 0; episode_reset();
#if ANN
           irelat = anow;
#endif
           skip
        :: else -> ifail = afail; inb = anb; irec = 1
        fi
     :: else
     fi;
#if !MUT_REL
     /* releasedAlready: refused on its own revision released with its
        result, not a failure over an operator's release (overOperator):
        an earlier attempt was applied; answered as applied, the item
        unchanged (its releasedAtMs stands) */
     ok = ok || (iex && irev == rev && irel && ires == ares && !(ares == FAIL && iopr))
#else
     skip
#endif
  :: op == OP_GET -> ok = 1
#if ANN
  :: op == OP_AGET -> ok = 1;                       /* GetAnnouncement of shard akind */
     if :: resp -> sannf[j] = annf[akind]; sannrel[j] = annrel[akind] :: else fi;
     printf("t=%d store: shard %d announces fence %d released at %d\n", now, akind, annf[akind], annrel[akind])
#endif
  fi;
  printf("t=%d store: %e rev=%d %d -> item exists=%d rev=%d fence=%d beat=%d released=%d result=%d lu=%d exp=%d failures=%d nb=%d recent=%d\n",
         now, OPNAME(op), rev, ok, iex, irev, ifence, ibeat, irel, ires, ilu, iexp, ifail, inb, irec);
  if
  :: resp && op != OP_AGET -> snap(j); rstat[j] = (ok -> R_OK : R_CF)
  :: resp && op == OP_AGET -> rstat[j] = R_OK
  :: else
  fi
}

#define STORE_APPLY(j) apply(rqop[j], rqrev[j], rqnow[j], rqlu[j], rqexp[j], rqhasobs[j], rqobr[j], rqobb[j], rqres[j], rqkind[j], rqfail[j], rqnb[j], j, 1)
#define DUP_APPLY apply(dop, drev, dnow, dlu, dexp, dhasobs, dobr, dobb, dres, dkind, dfail, dnb, down, 0)

/* herdlock release GROUP ID --revision R (cmd/herdlock): a failure release
   conditioned on the revision the operator read, with no hold-back
   (failRecentUntilMs 0, reason operator_release), the failures kept; on a
   held item, or on a recent failure (to clear it). */
#define OPERATOR_CAN (nopr < NOPREL && now <= TOPR && iex && (!irel || (ires == FAIL && irec && !iopr)))
byte nopr;
inline operator_release() {
  nopr++; irel = 1; ires = FAIL; iresf = ifence; inb = 0; irec = 0; iopr = 1; oprev = irev;
#if (CHECKS >> 12) & 1
  oprt = now;                                       /* only for Property 12: it splits states by the tick */
#endif
  episode_reset();
  printf("t=%d the operator releases rev=%d (fence %d)\n", now, irev, ifence)
}

inline check_p3(i) {
  if
  :: MONO(i) < vu[i] && hrev[i] != oprev ->
     ASSERTN(3, p3, (i == 0 || !INSIDE(0)) && (i == 1 || !INSIDE(1)) && (i == 2 || !INSIDE(2)))  /* P3 */
  :: else
  fi
}

inline observe(i) {
  hasobs[i] = sex[i]; obsrev[i] = srev[i]; obsbeat[i] = sbeat[i]; t0[i] = MONO(i)
}

/* the ordinary pace: the next read a poll interval later, or at the
   deadline (lockcore's sleep: min(wake, deadline)) */
#if WDL > 0
inline to_wait(i) {
  ph[i] = WAIT; due[i] = TICK_AT(i, MONO(i) + POLLI);
  if :: due[i] > DLTICK(i) -> due[i] = (DLTICK(i) < now -> now : DLTICK(i)) :: else fi
}
#else
inline to_wait(i) {
  ph[i] = WAIT; due[i] = TICK_AT(i, MONO(i) + POLLI)
}
#endif

/* after a read of an item held by another (the read in the response
   snapshot): with PRED, predictive waiting (next and predict in lockcore).
   The item's history (holdMeanMs, holdDevMs) is any; PCAP bounds the
   guessed end plus wakeDevs deviations after the item's acquiredAt (the
   acquire's :now, iexp - MAXD). While that end lies ahead (or at most two
   dense reads, a poll interval each, behind), the next read comes at any
   tick from the next one to max(the ordinary pace, the guessed end on the
   waiter's clocks), cut at its deadline: a wake at the guess, a dense read,
   the ordinary pace (no history, or an erratic one), or anything between.
   After it, the ordinary pace. */
#if PRED
inline pred_wait(i) {
  to_wait(i);
  if
  :: sex[i] && !srel[i] && OWNER(srev[i]) != i ->
     nv_ = sexp[i] - MAXD + PCAP - WALL(i);        /* the guessed end, from now */
     if
     :: nv_ + 2*POLLI > 0 ->
        pw_ = due[i];
        if :: nv_ > 0 && TICK_AT(i, MONO(i) + nv_) > pw_ -> pw_ = TICK_AT(i, MONO(i) + nv_) :: else fi;
#if WDL > 0 && !MUT_PRED
        if :: pw_ > due[i] && pw_ > DLTICK(i) -> pw_ = (due[i] > DLTICK(i) -> due[i] : DLTICK(i)) :: else fi;
#endif
        if
        :: pw_ > now ->
           due[i] = now + 1;
           do
           :: due[i] < pw_ -> due[i]++
           :: break
           od;
           printf("t=%d P%d sleeps until t=%d (predictive waiting: any tick up to t=%d)\n", now, i, due[i], pw_)
        :: else
        fi
     :: else
     fi
  :: else
  fi
}
#else
#define pred_wait(i) to_wait(i)
#endif

/* RELEASED with the success of fence f; wait: from the waiting loop (not
   the first acquire's fresh success) */
inline released(i, f, wait) {
  ASSERTN(4, p4, (succmask >> f) & 1);          /* P4 */
#if ANN
  /* P10: the burst's success: one published after the call began, or
     still fresh (FRESH: every success of this run), or one released at
     most the clock allowance before the call began, in true time: EPS on
     the waiter's clock plus 2*OFF, the most two clocks differ (the earlier
     episode's success was released at true time OLDREL); never an older
     episode's */
  if :: wait -> ASSERTN(10, p10, (((succmask & ~smask0[i]) >> f) & 1) || FRESH(f) ||
                                 (f == OLDF && OLDREL >= TSTART(i) - EPS - 2*OFF)) :: else fi;
#endif
  ph[i] = D_REL; printf("t=%d P%d RELEASED (result fence %d)\n", now, i, f)
}

#if ANN
/* the waiter had the item back from the store (a read, a refused write):
   minFence, the highest fence it saw holding the lock (observe in
   wait.go), and seenFence, the highest fence it saw on the item at all
   (saw in wait.go) */
inline saw(i) {
  if :: sex[i] && !srel[i] && sfence[i] > minf[i] -> minf[i] = sfence[i] :: else fi;
  if :: sex[i] && sfence[i] > seenf[i] -> seenf[i] = sfence[i] :: else fi
}
/* relay: the success just read on the lock item goes to the waiter's shard */
inline relay(i) {
  apf[i] = sresf[i]; aprel[i] = srelat[i]; apsh[i] = shard[i]; apfan[i] = 0; aps[i] = now;
  printf("t=%d P%d relays fence %d to shard %d\n", now, i, sresf[i], shard[i])
}
/* Announce: attribute_not_exists(#lockKey) OR #announcedFence < :fence; the
   first applied copy goes on to the other shard */
inline ann_put(j) {
  s_ = apsh[j];
  if
  :: annf[s_] < apf[j] ->
     annf[s_] = apf[j]; annrel[s_] = aprel[j];
     printf("t=%d shard %d announces fence %d (released at %d)\n", now, s_, apf[j], aprel[j]);
     if
     :: ANNK > 1 && !apfan[j] -> apfan[j] = 1; apsh[j] = (s_ + 1) % ANNK; aps[j] = now
     :: else -> apf[j] = 0
     fi
  :: else -> apf[j] = 0;
     printf("t=%d shard %d refuses fence %d (has %d)\n", now, s_, apf[j], annf[s_])
  fi
}
#define ANN_READY(j) (apf[j] != 0)
#define ANN_URG(j) (apf[j] != 0 && now >= aps[j] + DMAX)
#define ANN_PUT(j) ann_put(j)
/* ours (wait.go), for a success at fence f released at rel (the
   releaser's wall clock), read on the lock item (on_poll) or announced
   (accepts, on_apoll): (a) with a holder seen, f >= minFence; else (b) the
   item seen and f above every fence seen on it; else (c) fresh; else (d)
   released no more than the clock allowance before the call began */
#define OURS(i, f, rel) (minf[i] > 0 -> (f) >= minf[i] : \
                         ((seenf[i] > 0 && (f) > seenf[i]) || FRESH(f) || (rel) >= wst[i] - EPS*(1+MUT_ALLOW)))
#if MUT_ANN == 1
#define ACCEPTS(i) true
#else
#define ACCEPTS(i) OURS(i, sannf[i], sannrel[i])
#endif
inline on_apoll(i) {
  if
  :: sannf[i] != 0 && ACCEPTS(i) -> printf("t=%d P%d takes the announced fence %d\n", now, i, sannf[i]); released(i, sannf[i], 1)
  :: else -> to_wait(i)
  fi
}
/* an earlier episode: the item released with a success long ago (not
   fresh), announced on every shard */
#define INIT_ITEM iex = 1; irel = 1; ires = SUCC; irev = 0; ifence = 1; iresf = 1; maxissued = 1; \
  succmask = 2; ilu = OLDREL; iexp = OLDREL; irelat = OLDREL; \
  annf[0] = 1; annrel[0] = OLDREL; annf[ANNK-1] = 1; annrel[ANNK-1] = OLDREL
/* waiter i's shard (rand.IntN in wait.go), chosen with its clock profile so
   that the symmetry reduction of init covers every assignment */
#define KEYX(i) shard[i]
#define choose_x(i) if :: ANNK > 1 -> shard[i] = 1 :: true fi
#else
#define saw(i) skip
#endif

/* heldBack in lockcore/wait.go, on an item released with failure: when the
   failure is recent and the episode has used its attempts, FAILED
   (ErrHolderFailed); when its not-before lies ahead, sleep until then on the
   monotonic clock; otherwise acquire (take) or poll again (!take). */
inline held_back(i, take) {
  if
  :: srec[i] && sfail[i] >= MAXATT ->
     ph[i] = D_FAIL; printf("t=%d P%d FAILED: the holders of this burst failed\n", now, i)
  :: srec[i] && sfail[i] < MAXATT && snb[i] > WALL(i) ->
#if WDL > 0
     if
     :: MONO(i) + snb[i] - WALL(i) >= DL(i) ->      /* the not-before is past the deadline */
        ph[i] = D_FAIL; printf("t=%d P%d FAILED: the not-before is past its deadline\n", now, i)
     :: else ->
#endif
     ph[i] = WAIT; due[i] = TICK_AT(i, MONO(i) + snb[i] - WALL(i))
#if WDL > 0
     fi
#endif
  :: else ->
     if :: take -> acquire(i, 0) :: else -> to_wait(i) fi
  fi
}

inline acquire(i, withobs) {
  if
  :: nrev[i] >= NREV -> ph[i] = D_FAIL               /* model bound, see README */
  :: else ->
     initial[i] = (ph[i] == IDLE || rfirst[i]);      /* the first acquire, after a first read too */
     rv_ = i*NREV + nrev[i] + 1; nrev[i]++; myrev[i] = rv_; amono[rv_] = MONO(i);
     rqrev[i] = rv_; rqnow[i] = WALL(i); rqlu[i] = rqnow[i] + LEASE; rqexp[i] = rqnow[i] + MAXD;
     rqhasobs[i] = withobs; rqobr[i] = obsrev[i]; rqobb[i] = obsbeat[i]; rqres[i] = 0; rqkind[i] = 0;
     send(i, OP_ACQ); ph[i] = ACQ
  fi
}

/* ACQUIRED for revision rv, with the item in the response snapshot */
inline grant(i, rv) {
  ph[i] = HOLD; hrev[i] = rv; hfence[i] = sfence[i]; hexp[i] = sexp[i]; hst[i] = H_WORK; relatt[i] = 0;
  hfail[i] = sfail[i]; hrec[i] = srec[i]; hnb[i] = 0;
  vu[i] = amono[rv] + LEASE - MARGIN;               /* validity from the first send */
#if MAXCHECK
  hdl[i] = HDL(rv); vu[i] = MIN(vu[i], hdl[i]);     /* never past the deadline (lockcore's begin) */
#endif
  rdue[i] = TICK_AT(i, amono[rv] + RENEWI);
  if
  :: wdue[i] = now + 1
  :: wdue[i] = now + WLONG
  fi;
  printf("t=%d P%d ACQUIRED rev=%d fence=%d, valid until mono %d (mono now %d)\n", now, i, rv, hfence[i], vu[i], MONO(i));
  check_p3(i)
}

inline on_poll(i) {
#if ANN
  /* judge: the verdict on this read (ours with what the wait saw before
     it), then the wait notes what it saw */
  ours_ = (sex[i] && srel[i] && sres[i] == SUCC && (MUT_STALE || OURS(i, sresf[i], srelat[i])));
  saw(i);
#endif
  if
  :: !sex[i] -> acquire(i, 0)
  :: else ->
     if
     :: srel[i] && sres[i] == SUCC ->
#if ANN
        if
        :: ours_ -> relay(i); released(i, sresf[i], 1)
        :: else -> acquire(i, 0)                     /* old news: the lock is free, race for it */
        fi
#else
        released(i, sresf[i], 1)                     /* no earlier episode: every success is the burst's */
#endif
     :: srel[i] && sres[i] != SUCC -> held_back(i, 1)
     :: else ->                                      /* held */
        if
        :: OWNER(srev[i]) == i ->
#if FIX_SELF
           own_late(i)                               /* our own attempt was applied late */
#else
           ASSERTN(6, p6, false)                    /* P6: waiting on its own revision */
#endif
        :: ENVLOST(i) -> env_free(i)                 /* a late copy of an attempt the environment gave up */
        :: OWNER(srev[i]) != i && !ENVLOST(i) ->
           if
           :: !hasobs[i] || srev[i] != obsrev[i] || sbeat[i] != obsbeat[i] -> observe(i); pred_wait(i)
           :: else ->
              if
              :: MONO(i) - t0[i] >= TAKE -> acquire(i, 1)
              :: else ->
                 if
                 :: WALLPATH && (slu[i] < WALL(i) - EPS || sexp[i] < WALL(i) - EPS) -> acquire(i, 0)
                 :: else -> pred_wait(i)
                 fi
              fi
           fi
        fi
     fi
  fi
}

/* a late copy of an earlier acquire attempt of i holds the item (FIX_SELF,
   waiter.own): within that attempt's validity the wait holds it; past it,
   it frees it (a failure release of that revision keeping the episode, as
   settle's) and races again */
inline own_late(i) {
  if
  :: MONO(i) < amono[srev[i]] + LEASE - MARGIN -> grant(i, srev[i])
  :: else ->
     rqrev[i] = srev[i]; rqres[i] = FAIL; rqkind[i] = 1; rqnow[i] = WALL(i); send(i, OP_REL); ph[i] = FREEOWN
  fi
}

/* a late copy of an acquire that another call of the environment gave
   up holds the item (ENV, waiter.own with HotKeys.gaveUp): the call that
   sent it has returned, so nobody holds it: free it (a failure release
   conditioned on that revision, keeping the episode) and race for the
   lock */
inline env_free(i) {
  printf("t=%d P%d frees rev=%d, an acquire its environment gave up\n", now, i, srev[i]);
  rqrev[i] = srev[i]; rqres[i] = FAIL; rqkind[i] = 1; rqnow[i] = WALL(i); send(i, OP_REL); ph[i] = FREEOWN
}

/* a conditional acquire was refused over the item in the response: a
   first acquire that meets a fresh success returns RELEASED; a failure
   holds back as heldBack says; otherwise wait for the next poll */
inline refused(i) {
  saw(i);
  if
  :: FIX_SELF && sex[i] && !srel[i] && OWNER(srev[i]) == i && srev[i] != myrev[i] -> own_late(i)
  :: ENVLOST(i) -> env_free(i)
  :: sex[i] && srel[i] && sres[i] == SUCC && initial[i] -> released(i, sresf[i], 0)
  :: sex[i] && srel[i] && sres[i] != SUCC -> held_back(i, 0)
  :: else ->
     if :: initial[i] -> observe(i) :: else fi;
     pred_wait(i)
  fi
}

/* an acquire whose outcome stayed unknown: a first acquire ends FAILED
   (the store's error), a waiter goes on waiting */
inline unsettled(i) {
  if
  :: initial[i] -> ph[i] = D_FAIL; printf("t=%d P%d FAILED: store error\n", now, i)
  :: else -> to_wait(i)
  fi
}

/* the holder calls the upstream (and writes the resource with its fence
   when the call answers): Properties 7 and 8, except for a holder whose
   lock the operator released (the operator's act) */
inline upstream_call(i) {
  if
  :: hrev[i] != oprev ->
     ASSERTN(8, p8, (succmask >> (OLDF+1)) == 0);  /* P8: a published success is read, not redone
                                                      (the earlier episode's is not fresh) */
     ASSERTN(7, p7, efail < MAXATT && !(elastnb && (ecalls > 0 || WALL(i) < enbv)));  /* P7 */
     if :: ecalls < 2 -> ecalls++ :: else fi
  :: else
  fi
}

inline on_resp(i) {
  op_ = rqop[i]; got = rdel[i]; st_ = rstat[i];
  clear_rq(i);
  if
  :: ph[i] == ACQ ->
     if
     :: got && st_ == R_OK -> grant(i, srev[i])
     :: got && st_ == R_CF -> refused(i)
     :: !got -> rqrev[i] = 0; send(i, OP_GET); ph[i] = AREAD
     fi
  :: ph[i] == AREAD ->
     if
     :: got && sex[i] && !srel[i] && srev[i] == myrev[i] -> grant(i, srev[i])
     :: got && sex[i] && !srel[i] && FIX_SELF && OWNER(srev[i]) == i && srev[i] != myrev[i] -> own_late(i)
     :: got && !(sex[i] && !srel[i] && (srev[i] == myrev[i] || (FIX_SELF && OWNER(srev[i]) == i))) ->
        refused(i)
     :: !got ->
        /* still unknown: settle frees the possible hold with a failure
           release conditioned on the revision it tried to write, keeping
           the item's failure episode */
#if MUT_FREE == 1
        unsettled(i)                               /* mutant: nothing freed */
#else
        rqrev[i] = myrev[i]; rqres[i] = FAIL; rqkind[i] = 1; rqnow[i] = WALL(i); send(i, OP_REL); ph[i] = FREE
#endif
     fi
  :: ph[i] == FREE -> unsettled(i)                  /* whatever the answer */
  :: ph[i] == FREEOWN ->
     if
     :: got -> acquire(i, 0)                        /* freed (or already released): race for it */
     :: else -> to_wait(i)                          /* the store failed: the next read tries again */
     fi
  :: ph[i] == POLL ->
     if
     :: got -> on_poll(i)
     :: !got && rfirst[i] -> acquire(i, 0)          /* the first read failed: the acquire decides */
     :: else -> to_wait(i)                          /* lost, or throttled (a first read too) */
     fi;
     rfirst[i] = 0
#if ANN
  :: ph[i] == APOLL ->
     if
     :: got -> on_apoll(i)
     :: else -> to_wait(i)
     fi
#endif
  :: ph[i] == HOLD ->
     if
     :: op_ == OP_REN ->
        if
        :: got && st_ == R_OK ->
           nv_ = rnmono[i] + rnlease[i] - MARGIN;  /* validity from the send time */
#if MAXCHECK
           nv_ = MIN(nv_, hdl[i]);                 /* capped at the deadline (extend) */
#endif
           if :: nv_ > vu[i] -> vu[i] = nv_; printf("t=%d P%d renewed: valid until mono %d\n", now, i, nv_); check_p3(i) :: else fi
        :: got && st_ == R_CF && sex[i] && srev[i] == hrev[i] && srel[i] ->
           /* our revision, released: the operator force-released it */
#if MUT_OPR
           skip                                   /* mutant: retried as transient */
#else
           ph[i] = D_ACQ; printf("t=%d P%d lease lost: released under it\n", now, i)  /* writes nothing more */
#endif
        :: got && st_ == R_CF && !(sex[i] && srev[i] == hrev[i]) ->
           ph[i] = D_ACQ                          /* lease lost */
        :: else                                   /* not extended, or lost: retried */
        fi
     :: op_ == OP_GET ->                          /* the check at the hard maximum (hold.go, check) */
        if
        :: got && sex[i] && srev[i] == hrev[i] && !srel[i] -> skip   /* still ours */
        :: got && !(sex[i] && srev[i] == hrev[i] && !srel[i]) ->
           /* released at our revision (the operator), another revision, or gone: lost, writes nothing more */
           ph[i] = D_ACQ; printf("t=%d P%d check: the item is no longer ours, lease lost\n", now, i)
        :: !got                                   /* failed: again at the renewal pace */
        fi
     :: op_ == OP_REL ->
        if
        :: got -> ph[i] = D_ACQ                   /* released, or lease lost */
        :: !got && relatt[i] < 2 -> relatt[i]++   /* retried below */
        :: !got && relatt[i] >= 2 -> ph[i] = D_ACQ   /* gave up: the lease lapses */
        fi
     fi
  fi
}

inline on_timer(i) {
  if
#if WDL > 0
  :: ph[i] == WAIT && MONO(i) >= DL(i) ->           /* the wait's deadline: timedOut */
     ph[i] = D_FAIL; printf("t=%d P%d FAILED: the wait timed out\n", now, i)
#endif
#if ANN
  :: ph[i] == IDLE ->
     wst[i] = WALL(i); smask0[i] = succmask;
     if
     :: nthrot < NTHROT -> nthrot++; hasobs[i] = 0; to_wait(i);  /* throttled: a waiter that saw nothing */
        printf("t=%d P%d: its first acquire is throttled\n", now, i)
     :: true -> acquire(i, 0)
     :: RFIRST -> rfirst[i] = 1; rqrev[i] = 0; send(i, OP_GET); ph[i] = POLL   /* reads first */
     fi
  :: ph[i] == WAIT WAITING(i) ->
     /* a crowded waiter reads its shard or the lock item (the throttling
        that makes it crowded, and its turns, are a free choice here) */
     if
     :: rqrev[i] = 0; send(i, OP_GET); ph[i] = POLL
     :: rqrev[i] = 0; rqkind[i] = shard[i]; send(i, OP_AGET); ph[i] = APOLL
     fi
#else
  :: ph[i] == IDLE -> acquire(i, 0)
  :: RFIRST && ph[i] == IDLE -> rfirst[i] = 1; rqrev[i] = 0; send(i, OP_GET); ph[i] = POLL   /* reads first */
  :: ph[i] == WAIT WAITING(i) -> rqrev[i] = 0; send(i, OP_GET); ph[i] = POLL
#endif
  :: ph[i] == HOLD ->
     if
     :: hst[i] != H_RELEASING && MONO(i) >= vu[i] ->
        hst[i] = H_RELEASING; hres[i] = FAIL;      /* validity over: stop acting */
        printf("t=%d P%d validity over: stops acting\n", now, i)
     :: else ->
        if
        :: hst[i] == H_RELEASING && rqop[i] == 0 ->
           rqrev[i] = hrev[i]; rqres[i] = hres[i]; rqnow[i] = WALL(i); rqkind[i] = 0;
           /* releaseRequest: a failure counts in the episode unless it carries a not-before */
           rqnb[i] = hnb[i];
           rqfail[i] = (hnb[i] != 0 -> (hrec[i] -> hfail[i] : 0) : (hrec[i] -> hfail[i] + 1 : 1));
           send(i, OP_REL)
        :: hst[i] == H_WORK && now >= wdue[i] ->  /* checked: MONO < vu */
           upstream_call(i);
           if
           :: UPFAIL == 0 ->
              wf[i] = hfence[i]; wrv[i] = hrev[i]; ws[i] = now; wack[i] = 0; hst[i] = H_WRITING;
              printf("t=%d P%d writes to the resource with fence %d\n", now, i, hfence[i])
           :: UPFAIL != 0 -> hst[i] = H_RELEASING; hres[i] = FAIL;
              printf("t=%d P%d: the upstream fails\n", now, i)
           :: UPFAIL == 2 -> hst[i] = H_RELEASING; hres[i] = FAIL; hnb[i] = WALL(i) + NBD;
              printf("t=%d P%d: the upstream fails, retry after %d\n", now, i, hnb[i])
           fi
        :: else ->                                 /* renewal due */
           if
           :: ATMAX(i) && MUT_MAXCHK -> skip        /* mutant: no turn at the maximum */
           :: ATMAX(i) && !MUT_MAXCHK ->           /* at the maximum: a check (renew's l.check) */
              rqrev[i] = 0; rdue[i] = TICK_AT(i, MONO(i) + RENEWI);
              send(i, OP_GET)
           :: else ->
              rqrev[i] = hrev[i]; rqnow[i] = WALL(i); rqlu[i] = MIN(rqnow[i] + LEASE, hexp[i]);
              rnmono[i] = MONO(i); rnlease[i] = rqlu[i] - rqnow[i];
              rdue[i] = TICK_AT(i, MONO(i) + RENEWI);
              send(i, OP_REN)
           fi
        fi
     fi
  fi
}

inline recompute_due(i) {
  if
  :: ph[i] == HOLD ->
     nv_ = NEVER;
     if :: hst[i] != H_RELEASING -> nv_ = TICK_AT(i, vu[i]) :: else fi;
     if :: hst[i] == H_WORK -> nv_ = MIN(nv_, wdue[i]) :: else fi;
     if
     :: rqop[i] == 0 && hst[i] == H_RELEASING -> nv_ = now
     :: rqop[i] == 0 && hst[i] != H_RELEASING && TURNS(i) -> nv_ = MIN(nv_, rdue[i])
     :: else
     fi;
     due[i] = (nv_ < now -> now : nv_)
  :: ph[i] == ACQ || ph[i] == AREAD || ph[i] == POLL || ph[i] == APOLL || ph[i] == FREE || ph[i] == FREEOWN || ph[i] >= D_ACQ -> due[i] = NEVER
  :: else
  fi
}

inline step(i) {
  if
  :: rqop[i] != 0 && (rdel[i] || now >= rqs[i] + DMAX + 1) -> on_resp(i)
  :: else ->
     if
     :: HOLDER_ACK(i) ->
        hres[i] = (wack[i] == 1 -> SUCC : FAIL); wack[i] = 0; hst[i] = H_RELEASING
     :: else -> on_timer(i)
     fi
  fi;
  recompute_due(i)
}

#define STEP(i) step(i)

#include "procs.pml"
