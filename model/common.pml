/*
 * common.pml: time, clocks, network, faults and the fenced resource shared by
 * herdlock.pml (the corrected protocol) and seed.pml (the seed's protocol).
 * The including file defines STORE_APPLY(j), DUP_APPLY, STEP(i), INV and
 * the worker phases below D_ACQ. See README.md for the meaning of each bound.
 *
 * Units: time advances in ticks (now). Clock readings are in "units", U per
 * tick of true time. Process i's monotonic clock reads rate[i]*now (rate in
 * [RMIN,RMAX], so the rate drift is rho = (RMAX-U)/U); its wall clock reads
 * U*now + off[i] (|off| <= OFF).
 */

#define U 4
#ifndef RMIN
#define RMIN 3
#endif
#ifndef RMAX
#define RMAX 5
#endif
#ifndef OFF
#define OFF 4            /* wall-clock offset bound, units (1 tick) */
#endif
#ifndef LEASE
#define LEASE 16         /* lease length, units (4 ticks) */
#endif
#ifndef MARGIN
#define MARGIN 4         /* validity margin, units; must be >= rho*LEASE */
#endif
#ifndef RENEWI
#define RENEWI 6         /* renewal interval, units (about LEASE/3) */
#endif
#ifndef POLLI
#define POLLI 4          /* poll interval, units (1 tick) */
#endif
#ifndef MAXD
#define MAXD 48          /* hard maximum hold, units (12 ticks) */
#endif
#ifndef DMAX
#define DMAX 1           /* a request is applied or lost, and its response
                            delivered or lost, within DMAX ticks of sending */
#endif
#ifndef DDUP
#define DDUP 4           /* LATEDUP: a timed-out attempt lands up to DDUP ticks late */
#endif
#ifndef WD
#define WD 2             /* resource write delay bound, ticks (UNBOUNDED: none) */
#endif
#ifndef PMAX
#define PMAX 3           /* bounded pause, ticks */
#endif
#ifndef WLONG
#define WLONG 6          /* long work, ticks (longer than a lease) */
#endif
#ifndef SJ
#define SJ 1             /* burst: each process starts at a tick in [0,SJ] */
#endif
#ifndef TMAX
#define TMAX 22          /* horizon, ticks */
#endif
#ifndef TCRASH
#define TCRASH 6         /* crashes happen at ticks <= TCRASH */
#endif
#ifndef NCRASH
#define NCRASH 1
#endif
#ifndef NPAUSE
#define NPAUSE 1
#endif
#ifndef NLOSS
#define NLOSS 1          /* lost requests + lost responses, in total */
#endif
#ifndef NDELAY
#define NDELAY 2         /* delayed messages (a request applied, a response or a
                            resource write delivered, a tick or more late), in total */
#endif
#ifndef NDUP
#define NDUP 1           /* SDK retries of write requests, in total */
#endif
#ifndef NREV
#define NREV 4           /* acquire attempts per process */
#endif
#ifndef NOPREL
#define NOPREL 0         /* operator force-releases (herdlock release --revision), in total */
#endif
#ifndef TOPR
#define TOPR 8           /* the operator acts at ticks <= TOPR */
#endif
#ifndef LATESTART
#define LATESTART 0      /* > 0: process 2 is a newcomer that starts at this tick */
#endif

#define NP 3

/* which properties to assert: bit n for Property n (default: all) */
#ifndef CHECKS
#define CHECKS 4094      /* bits 1-11 */
#endif
hidden byte p1, p2, p3, p4, p6, p7, p8, p9, p10, p11, p12;
#define ASSERTN(n, v, e) if :: ((CHECKS >> n) & 1) -> v = (e); assert(v) :: else fi
mtype = { Acquire, Renew, Release, Get, GetAnnouncement };
#define OPNAME(op) (op == OP_ACQ -> Acquire : (op == OP_REN -> Renew : (op == OP_REL -> Release : (op == OP_GET -> Get : GetAnnouncement))))
#define NEVER 255

/* operations */
#define OP_ACQ 1
#define OP_REN 2
#define OP_REL 3
#define OP_GET 4
#define OP_AGET 5        /* GetAnnouncement (herdlock.pml, ANN) */
/* response status */
#define R_OK 1
#define R_CF 2           /* condition failed */
#define R_LOST 3         /* request lost, or response lost */
/* results */
#define SUCC 1
#define FAIL 2
/* final phases (the protocol files define the phases below D_ACQ) */
#define D_ACQ 10         /* returned ACQUIRED and finished (released, lost or gave up) */
#define D_REL 11         /* returned RELEASED */
#define D_FAIL 12        /* returned FAILED */
#define CRASHED 13

#define OWNER(r) (((r)-1)/NREV)
#define MONO(i) (rate[i]*now)
#define WALL(i) (U*now + off[i])
/* first tick at which process i's monotonic clock reads >= m */
#define TICK_AT(i, m) (((m) + rate[i] - 1) / rate[i])
#define MIN(a,b) ((a) < (b) -> (a) : (b))

byte now;

/* per process */
byte rate[NP];
short off[NP];
byte start[NP];
byte ph[NP];
byte due[NP];
bool paused[NP];
byte pend[NP];
byte npause, ncrash, nloss, ndup, ndelay;
hidden byte rtd;

/* the single request slot of each process, and its response */
byte rqop[NP];   /* 0: free */
byte rqs[NP];    /* send tick */
byte rqrev[NP];
short rqnow[NP], rqlu[NP], rqexp[NP];
bool rqhasobs[NP];
byte rqobr[NP], rqobb[NP];
byte rqres[NP];
byte rqkind[NP]; /* release: 0 the holder's, 1 freeing a possible ghost hold */
byte rqfail[NP]; /* release: failures of the episode */
short rqnb[NP];  /* release: not-before (wall units), 0 none */
bool rqap[NP];   /* decided: applied or lost */
byte rstat[NP];  /* R_OK, R_CF, R_LOST */
bool rdel[NP];   /* response delivered */
/* item as returned in the response (ALL_NEW / ALL_OLD / GetItem) */
bool sex[NP], srel[NP];
byte srev[NP], sbeat[NP], sfence[NP], sres[NP], sresf[NP];
short slu[NP], sexp[NP];

/* LATEDUP: one write attempt that the client gave up on, applied late or
   never; its response is discarded */
byte dop, down, ds, drev, dobr, dobb, dres, dkind, dfail;
short dnow, dlu, dexp, dnb;
bool dhasobs;

/* the protected resource: one pending write per process */
byte wf[NP];     /* fence of the pending write, 0: none */
byte wrv[NP];    /* revision (grant) of the writer */
byte ws[NP];     /* send tick */
byte wack[NP];   /* 1 accepted, 2 rejected */
byte rmax, rmaxrev;  /* highest accepted fence and the grant that wrote it */
byte stale;      /* writes an unfenced resource would have accepted late */

#ifdef UNBOUNDED
#define WURG(j) false
#define WCARRY(j) 0
#else
#define WURG(j) (wf[j] != 0 && now >= ws[j] + WD)
#define WCARRY(j) (wf[j] != 0 -> 1 : 0)
#endif
/* messages a clock tick would delay */
#define CARRY(j) ((rqop[j] != 0 && !rqap[j] -> 1 : 0) + WCARRY(j))
#define CARRYALL (CARRY(0) + CARRY(1) + CARRY(2))

/* network: something that must happen before the clock may tick */
#define NURG(j) ( (rqop[j] != 0 && !rqap[j] && now >= rqs[j] + DMAX) || WURG(j) || ANN_URG(j) )
#define DURG (dop != 0 && now >= ds + DDUP)

#define ACTIVE(i) (ph[i] < D_ACQ)
/* process i has something to do now */
#define READY(i) (ACTIVE(i) && !paused[i] && \
        ( (rqop[i] != 0 && (rdel[i] || now >= rqs[i] + DMAX + 1)) || \
          HOLDER_ACK(i) || due[i] <= now ))

#define URGENT (READY(0) || READY(1) || READY(2) || NURG(0) || NURG(1) || NURG(2) || DURG)

inline send(i, op) {
  rqop[i] = op; rqs[i] = now; rqap[i] = 0; rstat[i] = 0; rdel[i] = 0;
  printf("t=%d P%d sends %e rev=%d\n", now, i, OPNAME(op), rqrev[i])
}

/* The SDK retries an attempt whose request or response was lost: the same
   request again, in the same call, with a new deadline. With LATEDUP the
   first attempt was not lost but is still in the network, and may land up
   to DDUP ticks later, after the retry and after the call has returned. */
inline sdk_retry(j) {
  if
  :: ndup < NDUP && rqop[j] != OP_GET && rqop[j] != OP_AGET ->
     ndup++; rtd = 1;
#ifdef LATEDUP
     if
     :: dop == 0 && !rqap[j] ->
        dop = rqop[j]; down = j; ds = now; drev = rqrev[j]; dnow = rqnow[j];
        dlu = rqlu[j]; dexp = rqexp[j]; dhasobs = rqhasobs[j]; dobr = rqobr[j];
        dobb = rqobb[j]; dres = rqres[j]; dkind = rqkind[j]; dfail = rqfail[j]; dnb = rqnb[j];
        printf("t=%d   (the lost attempt is only late: it may land up to %d ticks later)\n", now, DDUP)
     :: else
     fi;
#endif
     rqs[j] = now; rqap[j] = 0; rstat[j] = 0; rdel[j] = 0;
     printf("t=%d   the SDK retries P%d's %e rev=%d\n", now, j, OPNAME(rqop[j]), rqrev[j])
  :: true -> rtd = 0
  fi
}

inline clear_rq(i) {
  rqop[i] = 0; rqap[i] = 0; rstat[i] = 0; rdel[i] = 0
}

/* resource: accept iff fence >= highest accepted (Property 2) */
inline resource(j) {
#ifdef UNFENCED
  /* the seed has no fence: the resource accepts everything; the ghost
     grant number in wf shows the order it should have kept */
  printf("t=%d resource (unfenced) accepts P%d's write from grant %d\n", now, j, wf[j]);
  ASSERTN(2, p2, wf[j] >= rmax);    /* P2: no write from an older grant after a newer */
  rmax = wf[j]; rmaxrev = wrv[j]; wack[j] = 1;
#else
  if
  :: wf[j] >= rmax ->
     ASSERTN(2, p2, wf[j] > rmax || wrv[j] == rmaxrev);   /* P2: one fence, one grant */
     printf("t=%d resource accepts P%d's write with fence %d\n", now, j, wf[j]);
     rmax = wf[j]; rmaxrev = wrv[j]; wack[j] = 1
  :: else -> stale++; wack[j] = 2;
     printf("t=%d resource rejects P%d's write with fence %d < %d\n", now, j, wf[j], rmax)
  fi;
#endif
  wf[j] = 0
}

inline pause(i) {
  npause++; paused[i] = 1;
  printf("t=%d P%d pauses\n", now, i);
#ifdef UNBOUNDED
  pend[i] = NEVER
#else
  pend[i] = now + 1;
  do
  :: pend[i] < now + PMAX -> pend[i]++
  :: break
  od
#endif
}

