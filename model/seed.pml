/*
 * seed.pml: the seed's protocol (the original design; internal/seedlock), in the
 * same world as herdlock.pml (common.pml, procs.pml): same clocks, network,
 * faults and resource, but the resource has no fence to check (UNFENCED).
 * It exists to fail: seed-trails.sh produces its counterexamples.
 *
 * Seed behaviour modelled (DistributedLock.mts):
 *  - acquireLock: GetItem; if the item is held and createdAt + lease > the
 *    reader's wall clock, not acquired; else sleep 0-1 tick (the 0-200 ms
 *    jitter), then a conditional put (revision = the revision read, or
 *    attribute_not_exists), then a re-read; acquired iff the re-read shows
 *    the new revision. A put that fails its condition is "not acquired"
 *    (F5 in docs/protocol.md), so an SDK retry of an applied put is not acquired.
 *  - renewal every RENEWI on the holder's monotonic clock: conditional on
 *    revision, sets createdAt = the holder's wall clock. Any failure (condition
 *    or network) aborts and releases.
 *  - lock timeout at expiresAt: abort and release.
 *  - waiting: poll every max(poll, lease/2); RELEASED when the item is absent,
 *    released, expiresAt <= now or createdAt + lease + poll <= now (wall).
 *  - release: conditional on revision, isReleased = true; no result marker.
 * The holder is "inside" from ACQUIRED until it aborts or starts releasing.
 * Ghost fence: the store counts grants in ifence (the seed has no fence);
 * Property 4 reads "success published" as: the holder released after its
 * write was accepted.
 */
#define UNFENCED
#include "common.pml"

#define PI (LEASE/2 > POLLI -> LEASE/2 : POLLI)   /* calculatedPollInterval */

#define IDLE 0
#define SREAD 1    /* acquireLock: GetItem sent */
#define SJIT 2     /* jitter sleep before the put */
#define SPUT 3     /* conditional put sent */
#define SRECHK 4   /* re-read sent */
#define WAIT 5
#define POLL 6
#define HOLD 7
#define H_WORK 0
#define H_WRITING 1
#define H_RELEASING 2

bool iex, irel;
byte irev, ifence, ibeat, ires, iresf;
short ilu, iexp;        /* ilu: createdAt (the last heartbeat), iexp: expiresAt */
int succmask;

byte nrev[NP], myrev[NP], currev[NP], putatt[NP];
byte hrev[NP], hfence[NP], hst[NP], hres[NP], relatt[NP], wdue[NP], rdue[NP];
short tmono[NP];        /* mono time of the lock timeout */

hidden byte ok, got, op_, st_, rv_;
hidden short nv_;

#define HOLDER_ACK(i) (ph[i] == HOLD && hst[i] == H_WRITING && wack[i] != 0)
#define INSIDE(j) (ph[j] == HOLD && hst[j] != H_RELEASING)
#define GHOST(i) (ph[i] >= D_ACQ && ph[i] != CRASHED && iex && !irel && OWNER(irev) == i && irev != hrev[i])
#define INV ASSERTN(6, p6, !GHOST(0) && !GHOST(1) && !GHOST(2))     /* P6 */

inline snap(j) {
  sex[j] = iex; srel[j] = irel; srev[j] = irev; sbeat[j] = ibeat; sfence[j] = ifence;
  sres[j] = ires; sresf[j] = iresf; slu[j] = ilu; sexp[j] = iexp
}

/* the seed's DistributedLockDb, as far as the class shows it */
inline apply(op, rev, anow, cur, aexp, ares, j, resp) {
  if
  :: op == OP_ACQ ->             /* put: revision = cur, or attribute_not_exists */
     ok = ((cur == 0 && !iex) || (cur != 0 && iex && irev == cur));
     if
     :: ok -> iex = 1; irel = 0; irev = rev; ifence++; ibeat = 0; ilu = anow; iexp = aexp
     :: else
     fi
  :: op == OP_REN ->
     ok = (iex && irev == rev);
     if :: ok -> ilu = anow; ibeat++ :: else fi
  :: op == OP_REL ->
     ok = (iex && irev == rev);
     if
     :: ok -> irel = 1;
              if :: ares == SUCC -> succmask = succmask | (1 << ifence) :: else fi
     :: else
     fi
  :: op == OP_GET -> ok = 1
  fi;
  printf("t=%d store: %e rev=%d %d -> item exists=%d rev=%d grant=%d released=%d createdAt=%d exp=%d\n",
         now, OPNAME(op), rev, ok, iex, irev, ifence, irel, ilu, iexp);
  if
  :: resp -> snap(j); rstat[j] = (ok -> R_OK : R_CF)
  :: else
  fi
}

/* rqlu carries the revision read (currentRevision) for a put */
#define STORE_APPLY(j) apply(rqop[j], rqrev[j], rqnow[j], rqlu[j], rqexp[j], rqres[j], j, 1)
#define DUP_APPLY apply(dop, drev, dnow, dlu, dexp, dres, down, 0)

inline to_wait(i) {
  ph[i] = WAIT; due[i] = TICK_AT(i, MONO(i) + PI)
}

inline get(i) { rqrev[i] = 0; send(i, OP_GET) }

inline put(i) {
  rqrev[i] = myrev[i]; rqnow[i] = WALL(i); rqlu[i] = currev[i]; rqexp[i] = rqnow[i] + MAXD;
  send(i, OP_ACQ); ph[i] = SPUT
}

inline release(i) {
  hst[i] = H_RELEASING; relatt[i] = 0
}

inline grant(i) {
  ph[i] = HOLD; hrev[i] = myrev[i]; hfence[i] = sfence[i]; hst[i] = H_WORK;
  tmono[i] = MONO(i) + (sexp[i] - WALL(i));    /* setTimeout(expiresAt - Date.now()) */
  rdue[i] = TICK_AT(i, MONO(i) + RENEWI);
  if
  :: wdue[i] = now + 1
  :: wdue[i] = now + WLONG
  fi;
  printf("t=%d P%d ACQUIRED rev=%d (grant %d)\n", now, i, hrev[i], hfence[i]);
  ASSERTN(3, p3, (i == 0 || !INSIDE(0)) && (i == 1 || !INSIDE(1)) && (i == 2 || !INSIDE(2)))  /* P3 */
}

inline on_resp(i) {
  op_ = rqop[i]; got = rdel[i]; st_ = rstat[i];
  clear_rq(i);
  if
  :: ph[i] == SREAD ->
     if
     :: got && sex[i] && !srel[i] && slu[i] + LEASE > WALL(i) -> to_wait(i)   /* held */
     :: got && !(sex[i] && !srel[i] && slu[i] + LEASE > WALL(i)) ->
        currev[i] = (sex[i] -> srev[i] : 0);
        if
        :: nrev[i] >= NREV -> ph[i] = D_FAIL
        :: else -> rv_ = i*NREV + nrev[i] + 1; nrev[i]++; myrev[i] = rv_; putatt[i] = 0;
           ph[i] = SJIT;
           if :: due[i] = now :: due[i] = now + 1 fi
        fi
     :: !got -> get(i)                                  /* SDK retry */
     fi
  :: ph[i] == SPUT ->
     if
     :: got && st_ == R_OK -> get(i); ph[i] = SRECHK
     :: got && st_ == R_CF -> to_wait(i)                /* "not acquired" (F5) */
     :: !got && putatt[i] == 0 -> putatt[i] = 1; put(i)   /* SDK retry of the same put */
     :: !got && putatt[i] != 0 -> ph[i] = D_FAIL       /* LockAcquisitionError */
     fi
  :: ph[i] == SRECHK ->
     if
     :: got && sex[i] && srev[i] == myrev[i] -> grant(i)
     :: got && !(sex[i] && srev[i] == myrev[i]) -> to_wait(i)
     :: !got -> get(i)
     fi
  :: ph[i] == POLL ->
     if
     :: got && (!sex[i] || srel[i] || sexp[i] <= WALL(i) || slu[i] + LEASE + PI <= WALL(i)) ->
        printf("t=%d P%d RELEASED (item exists=%d released=%d grant=%d)\n", now, i, sex[i], srel[i], sfence[i]);
        ASSERTN(4, p4, sex[i] && srel[i] && ((succmask >> sfence[i]) & 1));    /* P4 */
        ph[i] = D_REL
     :: got && !(!sex[i] || srel[i] || sexp[i] <= WALL(i) || slu[i] + LEASE + PI <= WALL(i)) -> to_wait(i)
     :: !got -> to_wait(i)
     fi
  :: ph[i] == HOLD ->
     if
     :: op_ == OP_REN ->
        if
        :: got && st_ == R_OK
        :: else ->                                     /* renewal failed: release, abort */
           if :: hst[i] != H_RELEASING -> printf("t=%d P%d renewal failed: aborts\n", now, i); hres[i] = FAIL; release(i) :: else fi
        fi
     :: op_ == OP_REL ->
        if
        :: got -> ph[i] = D_ACQ
        :: !got && relatt[i] < 2 -> relatt[i]++
        :: !got && relatt[i] >= 2 -> ph[i] = D_ACQ
        fi
     fi
  fi
}

inline on_timer(i) {
  if
  :: ph[i] == IDLE -> get(i); ph[i] = SREAD
  :: ph[i] == SJIT -> put(i)
  :: ph[i] == WAIT -> get(i); ph[i] = POLL
  :: ph[i] == HOLD ->
     if
     :: hst[i] != H_RELEASING && MONO(i) >= tmono[i] ->
        printf("t=%d P%d lock timeout: aborts\n", now, i); hres[i] = FAIL; release(i)
     :: else ->
        if
        :: hst[i] == H_RELEASING && rqop[i] == 0 ->
           rqrev[i] = hrev[i]; rqres[i] = hres[i]; rqnow[i] = WALL(i); send(i, OP_REL)
        :: hst[i] == H_WORK && now >= wdue[i] ->
           wf[i] = hfence[i]; wrv[i] = hrev[i]; ws[i] = now; wack[i] = 0; hst[i] = H_WRITING;
           printf("t=%d P%d writes to the resource (grant %d)\n", now, i, hfence[i])
        :: else ->
           rqrev[i] = hrev[i]; rqnow[i] = WALL(i);
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
     if :: hst[i] != H_RELEASING -> nv_ = TICK_AT(i, tmono[i]) :: else fi;
     if :: hst[i] == H_WORK -> nv_ = MIN(nv_, wdue[i]) :: else fi;
     if
     :: rqop[i] == 0 && hst[i] == H_RELEASING -> nv_ = now
     :: rqop[i] == 0 && hst[i] != H_RELEASING -> nv_ = MIN(nv_, rdue[i])
     :: else
     fi;
     due[i] = (nv_ < now -> now : nv_)
  :: ph[i] == SREAD || ph[i] == SPUT || ph[i] == SRECHK || ph[i] == POLL || ph[i] >= D_ACQ -> due[i] = NEVER
  :: else
  fi
}

inline step(i) {
  if
  :: rqop[i] != 0 && (rdel[i] || now >= rqs[i] + DMAX + 1) -> on_resp(i)
  :: else ->
     if
     :: HOLDER_ACK(i) -> hres[i] = (wack[i] == 1 -> SUCC : FAIL); wack[i] = 0; release(i)
     :: else -> on_timer(i)
     fi
  fi;
  recompute_due(i)
}

#define STEP(i) step(i)

#include "procs.pml"
