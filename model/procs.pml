/* procs.pml: the network/store, clock and worker processes, and init.
   Included after the protocol file has defined STORE_APPLY, DUP_APPLY,
   STEP, HOLDER_ACK and INV. */

/* hooks of the protocol file: announcement writes (herdlock.pml, ANN), the
   initial item */
#ifndef ANN_READY
#define ANN_READY(j) false
#define ANN_URG(j) false
#define ANN_PUT(j) skip
#endif
#ifndef INIT_ITEM
#define INIT_ITEM skip
#endif

inline netstep(j) {
  if
  :: rqop[j] != 0 && !rqap[j] && now >= rqs[j] ->
     STORE_APPLY(j); rqap[j] = 1;
     if
     :: rdel[j] = 1                           /* response now */
     :: now < rqs[j] + DMAX && ndelay < NDELAY -> ndelay++   /* response at the deadline (clock) */
     :: nloss < NLOSS -> nloss++; rstat[j] = R_LOST;
        printf("t=%d network loses the response to P%d's %e (it was applied)\n", now, j, OPNAME(rqop[j]));
        sdk_retry(j)
     fi
  :: rqop[j] != 0 && !rqap[j] && nloss < NLOSS -> nloss++;
     printf("t=%d network loses P%d's %e request\n", now, j, OPNAME(rqop[j]));
     sdk_retry(j);
     if :: rtd -> skip :: else -> rqap[j] = 1; rstat[j] = R_LOST fi
  :: wf[j] != 0 -> resource(j)
  :: ANN_READY(j) -> ANN_PUT(j)
  fi
}

#define NETREADY(j) ((rqop[j] != 0 && !rqap[j]) || wf[j] != 0 || ANN_READY(j))

proctype net() {
end:
  do
  :: atomic { NETREADY(0) -> netstep(0); INV }
  :: atomic { NETREADY(1) -> netstep(1); INV }
  :: atomic { NETREADY(2) -> netstep(2); INV }
  :: atomic { dop != 0 -> printf("t=%d the duplicate of P%d's %e arrives:\n", now, down, OPNAME(dop)); DUP_APPLY; dop = 0; INV }
  :: atomic { DURG -> dop = 0 }
#if NOPREL > 0
  :: atomic { OPERATOR_CAN -> operator_release(); INV }
#endif
  od
}

proctype clock() {
end:
  do
  :: atomic { now < TMAX && !URGENT && ndelay + CARRYALL <= NDELAY ->
       ndelay = ndelay + CARRYALL; now++; printf("-- t=%d\n", now);
       if :: rqap[0] && rstat[0] != R_LOST && !rdel[0] && now >= rqs[0] + DMAX -> rdel[0] = 1 :: else fi;
       if :: rqap[1] && rstat[1] != R_LOST && !rdel[1] && now >= rqs[1] + DMAX -> rdel[1] = 1 :: else fi;
       if :: rqap[2] && rstat[2] != R_LOST && !rdel[2] && now >= rqs[2] + DMAX -> rdel[2] = 1 :: else fi;
#ifdef UNBOUNDED
       /* an unbounded pause ends at any tick, or never */
       if :: paused[0] -> paused[0] = 0 :: true fi;
       if :: paused[1] -> paused[1] = 0 :: true fi;
       if :: paused[2] -> paused[2] = 0 :: true fi
#else
       if :: paused[0] && pend[0] <= now -> paused[0] = 0 :: else fi;
       if :: paused[1] && pend[1] <= now -> paused[1] = 0 :: else fi;
       if :: paused[2] && pend[2] <= now -> paused[2] = 0 :: else fi
#endif
#ifdef CLOCK_INV
       ; CLOCK_INV                      /* a property of the new tick (herdlock.pml: Property 11) */
#endif
     }
  od
}

/* A worker's step only reads and writes its own variables and its own
   request slot, so the steps of different workers commute: all ready
   workers step in one atomic action, in index order. Each step can instead
   be a crash or the start of a pause. */
inline wstep(i) {
  if
  :: STEP(i)
  :: ncrash < NCRASH && now <= TCRASH -> ncrash++; ph[i] = CRASHED; paused[i] = 0;
     printf("t=%d P%d crashes\n", now, i)
  :: npause < NPAUSE && now < TMAX -> pause(i)
  fi
}

proctype workers() {
end:
  do
  :: atomic { READY(0) || READY(1) || READY(2) ->
       if :: READY(0) -> wstep(0) :: else fi;
       if :: READY(1) -> wstep(1) :: else fi;
       if :: READY(2) -> wstep(2) :: else fi;
       INV }
  od
}

/* one burst: process i starts at start[i] in [0,SJ], with rate and offset
   chosen here. The tuples are sorted (symmetry reduction: the processes are
   identical up to the names of their revisions). With LATESTART, process 2
   is a newcomer that starts later, and only processes 0 and 1 are sorted. */
#ifndef KEYX
#define KEYX(i) 0        /* protocol state chosen in choose_x, part of the sort key */
#define choose_x(i) skip
#endif
#define KEY(i) (rate[i]*64 + (off[i]+OFF)*8 + start[i] + KEYX(i)*1024)
inline choose(i) {
#ifdef PROFILES
  /* two clock profiles: slow (monotonic rate RMIN, wall offset -OFF) and
     fast (RMAX, +OFF); the worst case for a slow holder and a fast contender */
  if
  :: rate[i] = RMIN; off[i] = -OFF
  :: rate[i] = RMAX; off[i] = OFF
  fi;
#else
  if
  :: rate[i] = RMIN
  :: rate[i] = RMAX
#ifdef MIDRATE
  :: rate[i] = U
#endif
  fi;
  if
  :: off[i] = -OFF
  :: off[i] = OFF
#ifdef MIDRATE
  :: off[i] = 0
#endif
  fi;
#endif
  start[i] = 0;
  if
  :: LATESTART > 0 && i == 2 -> start[i] = LATESTART
  :: else ->
     do
     :: start[i] < SJ -> start[i]++
     :: break
     od
  fi;
  due[i] = start[i];
  choose_x(i)
}

init {
  atomic {
    choose(0); choose(1); choose(2); INIT_ITEM;
    printf("rates %d %d %d, offsets %d %d %d, starts %d %d %d\n", rate[0], rate[1], rate[2], off[0], off[1], off[2], start[0], start[1], start[2]);
    if
    :: KEY(0) <= KEY(1) && (LATESTART > 0 || KEY(1) <= KEY(2)) ->
       run net(); run clock(); run workers()
    :: else
    fi
  }
}
