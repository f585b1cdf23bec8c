/*
 * herdlock.pml: the corrected lock protocol (docs/protocol.md,
 * lockcore/store.go) with 3 processes in one burst.
 * Read README.md first. Build: spin -a [-DNAME=value ...] herdlock.pml
 *
 * Switches (0/1): WALLPATH (default 1: the wall-clock branch of the acquire
 * condition), FIX_SELF and FIX_LU (default 0: the protocol exactly as
 * written; 1: two corrections for attempts that land late, README.md
 * "Findings"). EPS, TAKE and MARGIN can be overridden to check mutants.
 */
#include "common.pml"

#ifndef WALLPATH
#define WALLPATH 1
#endif
#ifndef FIX_SELF
#define FIX_SELF 0
#endif
#ifndef FIX_LU
#define FIX_LU 0
#endif

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
/* holder sub-states */
#define H_WORK 0
#define H_WRITING 1
#define H_RELEASING 2

/* the lock item */
bool iex, irel;
byte irev, ifence, ibeat, ires, iresf;
short ilu, iexp;
byte maxissued;          /* ghost: highest fence ever issued (Property 1) */
int succmask;            /* ghost: bit f set when success was published for fence f */

/* waiter state */
byte nrev[NP], myrev[NP];
short amono[NP*NREV+1];  /* monotonic send time of each acquire attempt */
bool initial[NP], hasobs[NP];
byte obsrev[NP], obsbeat[NP];
short t0[NP];
/* holder state */
byte hrev[NP], hfence[NP], hst[NP], hres[NP], relatt[NP], wdue[NP], rdue[NP];
short vu[NP], hexp[NP], rnmono[NP], rnlease[NP];

hidden byte ok, got;
hidden byte op_, st_, rv_;
hidden short nv_;

#define HOLDER_ACK(i) (ph[i] == HOLD && hst[i] == H_WRITING && wack[i] != 0)
#define INSIDE(j) (ph[j] == HOLD && hst[j] != H_RELEASING && MONO(j) < vu[j])
/* Property 6: the item is held by a revision of a live process that has
   finished without ever having been told it holds it */
#define GHOST(i) (ph[i] >= D_ACQ && ph[i] != CRASHED && iex && !irel && OWNER(irev) == i && irev != hrev[i])
#ifndef CHECK_P6
#define CHECK_P6 1
#endif
#if CHECK_P6
#define INV ASSERTN(6, p6, !GHOST(0) && !GHOST(1) && !GHOST(2))
#else
#define INV skip
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
  sres[j] = ires; sresf[j] = iresf; slu[j] = ilu; sexp[j] = iexp
}

/* The Store contract of lockcore/store.go, one atomic step per request. */
inline apply(op, rev, anow, alu, aexp, ahas, aobr, aobb, ares, j, resp) {
  if
  :: op == OP_ACQ ->
     ok = (!iex || irel || (WALLPATH && (iexp < anow - EPS || ilu < anow - EPS)) ||
           (ahas && irev == aobr && ibeat == aobb));
#if FIX_SELF
     ok = ok && !(iex && irev == rev);   /* an attempt never applies twice */
#endif
     if
     :: ok -> iex = 1; irel = 0; irev = rev; ifence++;
              ASSERTN(1, p1, ifence > maxissued);   /* P1 */
              maxissued = ifence; ibeat = 0; ilu = alu; iexp = aexp; ires = 0; iresf = 0
     :: else
     fi;
     ok = ok || (iex && irev == rev)                 /* an earlier attempt was applied */
  :: op == OP_REN ->
     ok = (iex && irev == rev && !irel);
#if FIX_LU
     ok = ok && ilu <= alu;                          /* leaseUntil never moves back */
#endif
     if :: ok -> ilu = alu; ibeat++ :: else fi
  :: op == OP_REL ->
     ok = (iex && irev == rev && (!irel || ires == ares));
     if
     :: ok -> irel = 1; ires = ares; iresf = ifence;
              if :: ares == SUCC -> succmask = succmask | (1 << ifence) :: else fi
     :: else
     fi
  :: op == OP_GET -> ok = 1
  fi;
  printf("t=%d store: %e rev=%d %d -> item exists=%d rev=%d fence=%d beat=%d released=%d result=%d lu=%d exp=%d\n",
         now, OPNAME(op), rev, ok, iex, irev, ifence, ibeat, irel, ires, ilu, iexp);
  if
  :: resp -> snap(j); rstat[j] = (ok -> R_OK : R_CF)
  :: else
  fi
}

#define STORE_APPLY(j) apply(rqop[j], rqrev[j], rqnow[j], rqlu[j], rqexp[j], rqhasobs[j], rqobr[j], rqobb[j], rqres[j], j, 1)
#define DUP_APPLY apply(dop, drev, dnow, dlu, dexp, dhasobs, dobr, dobb, dres, down, 0)

inline check_p3(i) {
  if
  :: MONO(i) < vu[i] ->
     ASSERTN(3, p3, (i == 0 || !INSIDE(0)) && (i == 1 || !INSIDE(1)) && (i == 2 || !INSIDE(2)))  /* P3 */
  :: else
  fi
}

inline observe(i) {
  hasobs[i] = sex[i]; obsrev[i] = srev[i]; obsbeat[i] = sbeat[i]; t0[i] = MONO(i)
}

inline to_wait(i) {
  ph[i] = WAIT; due[i] = TICK_AT(i, MONO(i) + POLLI)
}

inline acquire(i, withobs) {
  if
  :: nrev[i] >= NREV -> ph[i] = D_FAIL               /* model bound, see README */
  :: else ->
     initial[i] = (ph[i] == IDLE);
     rv_ = i*NREV + nrev[i] + 1; nrev[i]++; myrev[i] = rv_; amono[rv_] = MONO(i);
     rqrev[i] = rv_; rqnow[i] = WALL(i); rqlu[i] = rqnow[i] + LEASE; rqexp[i] = rqnow[i] + MAXD;
     rqhasobs[i] = withobs; rqobr[i] = obsrev[i]; rqobb[i] = obsbeat[i]; rqres[i] = 0;
     send(i, OP_ACQ); ph[i] = ACQ
  fi
}

/* ACQUIRED for revision rv, with the item in the response snapshot */
inline grant(i, rv) {
  ph[i] = HOLD; hrev[i] = rv; hfence[i] = sfence[i]; hexp[i] = sexp[i]; hst[i] = H_WORK; relatt[i] = 0;
  vu[i] = amono[rv] + LEASE - MARGIN;               /* validity from the first send */
  rdue[i] = TICK_AT(i, amono[rv] + RENEWI);
  if
  :: wdue[i] = now + 1
  :: wdue[i] = now + WLONG
  fi;
  printf("t=%d P%d ACQUIRED rev=%d fence=%d, valid until mono %d (mono now %d)\n", now, i, rv, hfence[i], vu[i], MONO(i));
  check_p3(i)
}

inline on_poll(i) {
  if
  :: !sex[i] -> acquire(i, 0)
  :: else ->
     if
     :: srel[i] && sres[i] == SUCC ->
        ASSERTN(4, p4, (succmask >> sresf[i]) & 1);   /* P4 */
        ph[i] = D_REL; printf("t=%d P%d RELEASED (result fence %d)\n", now, i, sresf[i])
     :: srel[i] && sres[i] != SUCC -> acquire(i, 0)
     :: else ->                                      /* held */
        if
        :: OWNER(srev[i]) == i ->
#if FIX_SELF
           grant(i, srev[i])                         /* our own attempt was applied late */
#else
           ASSERTN(6, p6, false)                    /* P6: waiting on its own revision */
#endif
        :: else ->
           if
           :: !hasobs[i] || srev[i] != obsrev[i] || sbeat[i] != obsbeat[i] -> observe(i); to_wait(i)
           :: else ->
              if
              :: MONO(i) - t0[i] >= TAKE -> acquire(i, 1)
              :: else ->
                 if
                 :: WALLPATH && (slu[i] < WALL(i) - EPS || sexp[i] < WALL(i) - EPS) -> acquire(i, 0)
                 :: else -> to_wait(i)
                 fi
              fi
           fi
        fi
     fi
  fi
}

inline on_resp(i) {
  op_ = rqop[i]; got = rdel[i]; st_ = rstat[i];
  clear_rq(i);
  if
  :: ph[i] == ACQ ->
     if
     :: got && st_ == R_OK -> grant(i, srev[i])
     :: got && st_ == R_CF ->
        if :: initial[i] -> observe(i) :: else fi;
        to_wait(i)
     :: !got -> rqrev[i] = 0; send(i, OP_GET); ph[i] = AREAD
     fi
  :: ph[i] == AREAD ->
     if
     :: got && sex[i] && !srel[i] && (srev[i] == myrev[i] || (FIX_SELF && OWNER(srev[i]) == i)) ->
        grant(i, srev[i])
     :: got && !(sex[i] && !srel[i] && (srev[i] == myrev[i] || (FIX_SELF && OWNER(srev[i]) == i))) ->
        if :: initial[i] -> observe(i) :: else fi;
        to_wait(i)
     :: !got -> send(i, OP_GET)
     fi
  :: ph[i] == POLL ->
     if
     :: got -> on_poll(i)
     :: else -> to_wait(i)
     fi
  :: ph[i] == HOLD ->
     if
     :: op_ == OP_REN ->
        if
        :: got && st_ == R_OK ->
           nv_ = rnmono[i] + rnlease[i] - MARGIN;  /* validity from the send time */
           if :: nv_ > vu[i] -> vu[i] = nv_; printf("t=%d P%d renewed: valid until mono %d\n", now, i, nv_); check_p3(i) :: else fi
        :: got && st_ == R_CF && !(FIX_LU && srev[i] == hrev[i] && !srel[i]) ->
           ph[i] = D_ACQ                          /* lease lost */
        :: else
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
  :: ph[i] == IDLE -> acquire(i, 0)
  :: ph[i] == WAIT -> rqrev[i] = 0; send(i, OP_GET); ph[i] = POLL
  :: ph[i] == HOLD ->
     if
     :: hst[i] != H_RELEASING && MONO(i) >= vu[i] ->
        hst[i] = H_RELEASING; hres[i] = FAIL;      /* validity over: stop acting */
        printf("t=%d P%d validity over: stops acting\n", now, i)
     :: else ->
        if
        :: hst[i] == H_RELEASING && rqop[i] == 0 ->
           rqrev[i] = hrev[i]; rqres[i] = hres[i]; rqnow[i] = WALL(i); send(i, OP_REL)
        :: hst[i] == H_WORK && now >= wdue[i] ->  /* checked: MONO < vu */
           wf[i] = hfence[i]; wrv[i] = hrev[i]; ws[i] = now; wack[i] = 0; hst[i] = H_WRITING;
           printf("t=%d P%d writes to the resource with fence %d\n", now, i, hfence[i])
        :: else ->                                 /* renewal due */
           rqrev[i] = hrev[i]; rqnow[i] = WALL(i); rqlu[i] = MIN(rqnow[i] + LEASE, hexp[i]);
           rnmono[i] = MONO(i); rnlease[i] = rqlu[i] - rqnow[i];
           rdue[i] = TICK_AT(i, MONO(i) + RENEWI);
           send(i, OP_REN)
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
     :: rqop[i] == 0 && hst[i] != H_RELEASING -> nv_ = MIN(nv_, rdue[i])
     :: else
     fi;
     due[i] = (nv_ < now -> now : nv_)
  :: ph[i] == ACQ || ph[i] == AREAD || ph[i] == POLL || ph[i] >= D_ACQ -> due[i] = NEVER
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
