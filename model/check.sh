#!/usr/bin/env bash
# model/check.sh: model-check the lock protocol with spin (see README.md).
#
#   model/check.sh ci     every check, small bounds (a few minutes on 2 cores)
#   model/check.sh full   bigger bounds (for `make model`; much longer)
#
# Each run prints its bounds, the states stored, the search depth and the
# time. Exit status is non-zero if a property of the protocol model fails,
# if a run was cut short (memory), or if a run that must find a
# counterexample (the seed model, the findings, every mutant) does not find
# it, or finds another property's.
# Set KEEP=dir to keep the pan output and the trails of every run, and
# ONLY=regex to run only the checks whose name matches.
set -u
mode=${1:-ci}
case $mode in ci|full) ;; *) echo "usage: $0 ci|full" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)

command -v spin >/dev/null || (apt-get update && apt-get install -y spin) >/dev/null
command -v spin >/dev/null || { echo "check.sh: spin is not installed" >&2; exit 1; }
command -v gcc >/dev/null || { echo "check.sh: gcc is not installed" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
jobs_max=${JOBS:-2}
memlim=${MEMLIM:-8000}            # MB per pan run

# run NAME FILE EXPECT SPINFLAGS [PANFLAGS]
#   EXPECT: pass | p3 | p4 | p6 | ... | p11 (the property whose assertion must fail)
#           | ltl (the LTL claim must hold, with -a -f) | ltlfail
run() {
  local name=$1 file=$2 expect=$3 sflags=$4 pflags=${5:-}
  local d=$work/$name opt=-O2
  case $expect in pass|ltl) ;; *) opt=-O0 ;; esac   # counterexamples are found fast: save the compile
  # so are the small passing searches (about a million states or fewer): gcc -O2
  # takes about 15 s, -O0 2 s, and their search takes a few seconds either way
  case " ${small:-} " in *" $name "*) opt=-O0 ;; esac
  local gflags="$opt -DMEMLIM=$memlim -DVECTORSZ=4096 ${GCCFLAGS:-}"
  mkdir -p "$d"; cp "$here"/*.pml "$d"/
  (
    cd "$d" || exit 1
    case $expect in
      ltl|ltlfail) gflags="$gflags -DNFAIR=3"; pflags="-a -f $pflags" ;;
      pass) gflags="$gflags -DNOCLAIM" ;;
      *) gflags="$gflags -DNOCLAIM" ;;
    esac
    if ! spin -a $sflags "$file" >spin.out 2>&1; then
      echo "FAIL $name: spin -a failed"; cat spin.out; exit 0
    fi
    gcc $gflags -o pan pan.c 2>gcc.out || { echo "FAIL $name: gcc failed"; tail gcc.out; exit 0; }
    local t0 t1
    t0=$(date +%s.%N)
    ./pan -m1000000 $pflags >pan.out 2>&1
    t1=$(date +%s.%N)
    local states depth errs secs viol incomplete=""
    states=$(awk '/states, stored/{print $1; exit}' pan.out)
    depth=$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' pan.out | head -1)
    errs=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' pan.out | head -1)
    secs=$(echo "$t1 - $t0" | bc)
    viol=$(grep '^pan:' pan.out | grep -o 'assertion violated p[0-9][0-9]*\|acceptance cycle\|claim violated\|invalid end state' | head -1)
    grep -q 'reached -DMEMLIM bound\|max search depth too small' pan.out && incomplete="(CUT SHORT: memory or depth limit)"
    local verdict
    case $expect in
      pass|ltl)
        if [ "${errs:-1}" = 0 ] && [ -z "$incomplete" ]; then verdict=ok; else verdict=FAIL; fi ;;
      ltlfail)
        if [ "${errs:-0}" != 0 ]; then verdict=ok; else verdict=FAIL; fi ;;
      *)
        if [ "$viol" = "assertion violated $expect" ]; then verdict=ok; else verdict=FAIL; fi ;;
    esac
    printf '%-4s %-28s expect %-7s states %-10s depth %-6s %7.1fs  %s %s\n' \
      "$verdict" "$name" "$expect" "${states:-?}" "${depth:-?}" "$secs" "${viol:+found: $viol}" "$incomplete"
    echo "     bounds: $file $sflags"
    if [ "$verdict" = FAIL ]; then grep -E 'violated|error|Error' pan.out | head -5 | sed 's/^/     /'; fi
    if [ -f "$file.trail" ]; then
      spin -t $sflags "$file" 2>&1 | grep -E '^ *(t=|--|rates)' | sed 's/^ *//' >trail.txt
    fi
    if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP/$name"; cp pan.out "$KEEP/$name/"; [ -f trail.txt ] && cp trail.txt "$KEEP/$name/"; fi
  ) >"$work/$name.res" 2>&1
}

names=()
queue() {
  [[ "$1" =~ ${ONLY:-.} ]] || return 0    # ONLY=regex: run only the matching checks
  names+=("$1")
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do sleep 0.2; done
  run "$@" &
}

H=herdlock.pml S=seed.pml
nof="-DNCRASH=0 -DNLOSS=0 -DNDUP=0 -DNPAUSE=0 -DNDELAY=0"   # no faults (later flags override)
if [ "$mode" = ci ]; then
  # the protocol as lockcore has it: safety (Properties 1-4, 6-11), one fault family per run
  base="-DPROFILES -DSJ=0"
  small="max-check env-late pred-herd pred-failing operator failing-upstream newcomer-failure newcomer-success"
  # (longest runs first: two run at a time)
  queue liveness           $H ltl  "$base -DTMAX=20 -DTCRASH=3 -DLIVENESS -DNCRASH=1 -DNLOSS=1 -DNDUP=1 -DNPAUSE=0 -DNDELAY=0"
  queue pause+loss         $H pass "$base -DTMAX=8 -DNCRASH=0 -DNLOSS=1 -DNDUP=0 -DNPAUSE=1 -DNDELAY=0"
  queue pause+delay        $H pass "$base -DTMAX=10 -DNCRASH=0 -DNLOSS=0 -DNDUP=0 -DNPAUSE=1 -DNDELAY=1"
  queue crash+loss+retry   $H pass "$base -DTMAX=16 -DNCRASH=1 -DNLOSS=1 -DNDUP=1 -DNPAUSE=0 -DNDELAY=0"
  queue ghost-free         $H pass "$base $nof -DTMAX=9 -DNLOSS=2 -DUPFAIL=1"
  queue unbounded-pause    $H pass "$base -DTMAX=8 -DUNBOUNDED -DNCRASH=0 -DNLOSS=0 -DNDUP=0 -DNPAUSE=1 -DNDELAY=0"
  queue crash+delay        $H pass "$base -DTMAX=16 -DNCRASH=1 -DNLOSS=0 -DNDUP=0 -DNPAUSE=0 -DNDELAY=1"
  queue operator+pause     $H pass "$base $nof -DTMAX=8 -DTOPR=6 -DNPAUSE=1 -DNOPREL=1 -DFIX_OPREL=1"
  # guard D: a late copy of an applied acquire meets the operator's release
  queue guard-d            $H pass "$base $nof -DTMAX=8 -DTOPR=4 -DLATEDUP -DNLOSS=1 -DNDUP=1 -DNOPREL=1 -DFIX_OPREL=1 -DFIX_SELF=1"
  # release announcements: an earlier episode's success is on the item and every
  # shard; stale-item: every first acquire throttled (mutant-stale-item's bounds
  # with two more ticks), the waiters read that success and must race for the lock
  queue announce-2shards   $H pass "$base $nof -DTMAX=7 -DANN=1 -DANNK=2 -DNTHROT=1"
  queue stale-item         $H pass "$base $nof -DTMAX=10 -DANN=1 -DNTHROT=3"
  # the same with the earlier success released 3 ticks before the burst (the
  # fresh-success window off): rule (d) takes it for a slow waiter
  queue stale-near         $H pass "$base $nof -DTMAX=8 -DANN=1 -DNTHROT=3 -DOLDREL=-12"
  # predictive waiting: after a read of a held item a waiter may sleep to any
  # tick up to the guessed end (acquiredAt + PCAP), cut at its deadline (WDL)
  queue pred-operator      $H pass "$base $nof -DTMAX=10 -DTOPR=6 -DNOPREL=1 -DPRED=1 -DWDL=40"
  queue pred-announce      $H pass "$base $nof -DTMAX=10 -DANN=1 -DNTHROT=1 -DPRED=1 -DWDL=40"
  queue pred-takeover      $H pass "$base $nof -DTMAX=14 -DNCRASH=1 -DPRED=1 -DWDL=48"
  queue pred-herd          $H pass "$base $nof -DTMAX=12 -DPRED=1 -DWDL=40"
  queue pred-failing       $H pass "$base $nof -DTMAX=12 -DUPFAIL=2 -DPRED=1 -DWDL=24"
  queue announce           $H pass "$base $nof -DTMAX=12 -DANN=1 -DNTHROT=1"
  queue operator           $H pass "$base $nof -DTMAX=11 -DTOPR=6 -DNOPREL=1"
  queue failing-upstream   $H pass "$base $nof -DTMAX=14 -DUPFAIL=2"
  queue failing+pause      $H pass "$base $nof -DTMAX=10 -DUPFAIL=2 -DNPAUSE=1"
  queue newcomer-failure   $H pass "$base $nof -DTMAX=14 -DUPFAIL=2 -DLATESTART=9"
  queue newcomer-success   $H pass "$base $nof -DTMAX=14 -DLATESTART=9"
  # reading first (a store's first call, a hot key, WithReadFirst): the
  # first request may be a read; with an earlier episode's success on the
  # item (ANN) a first read must not take it; its mutant takes any success
  queue rfirst-faults      $H pass "$base -DTMAX=12 -DRFIRST=1 -DNCRASH=1 -DNLOSS=1 -DNDUP=1 -DNPAUSE=0 -DNDELAY=0"
  queue rfirst-failing     $H pass "$base $nof -DTMAX=12 -DRFIRST=1 -DUPFAIL=2 -DPRED=1 -DWDL=40"
  queue rfirst-stale       $H pass "$base $nof -DTMAX=10 -DRFIRST=1 -DANN=1 -DNTHROT=0"
  queue mutant-rfirst-stale $H p10 "$base $nof -DTMAX=8 -DRFIRST=1 -DANN=1 -DNTHROT=0 -DMUT_STALE=1"
  # attempts that land after their call returned
  queue late-attempt+fix   $H pass "$base -DTMAX=12 -DLATEDUP -DFIX_SELF=1 -DCHECKS=62 -DNCRASH=0 -DNLOSS=1 -DNDUP=1 -DNPAUSE=0 -DNDELAY=1"
  # a late acquire attempt with the new guards: the ghost lock of Finding 2 is
  # not found at these bounds (README); kept as a passing search of Property 6
  queue late-acquire       $H pass "$base -DTMAX=16 -DLATEDUP -DFIX_SELF=1 -DUPFAIL=1 -DNCRASH=0 -DNLOSS=1 -DNDUP=1 -DNPAUSE=0 -DNDELAY=0"
  # Finding 2 with the operator: a late copy of a refused attempt lands on the
  # operator's release (another revision: guard D does not apply)
  queue finding-late-ghost $H p6   "$base $nof -DTMAX=8 -DTOPR=4 -DLATEDUP -DNLOSS=1 -DNDUP=1 -DNOPREL=1 -DFIX_OPREL=1"
  queue finding-opr-overwrite $H p9 "$base $nof -DTMAX=10 -DTOPR=6 -DNPAUSE=1 -DNOPREL=1 -DCHECKS=512 -DMUT_REL=1"
  # the check at the hard maximum: holds that reach it early (a lease of 6
  # ticks, the maximum 10, work 8) and the operator's release in their last
  # stretch; Property 12 (the holder learns of it at its next turn)
  queue max-check          $H pass "$base $nof -DTMAX=10 -DTOPR=6 -DNOPREL=1 -DLEASE=24 -DMARGIN=6 -DMAXD=40 -DWLONG=8 -DCHECKS=8190"
  # the environment's memory of given-up acquires: a waiter whose deadline
  # passed (fast clock) returns, the late copy of its first acquire lands
  # after the failure's not-before, and a waiter of the same environment
  # frees it; without the memory (ENV=0) the copy is a ghost (Property 6)
  queue env-late           $H pass "$base $nof -DTMAX=7 -DUPFAIL=2 -DLATEDUP -DNLOSS=1 -DNDUP=1 -DFIX_SELF=1 -DENV=1"
  queue finding-late-returned $H p6 "$base $nof -DTMAX=7 -DUPFAIL=2 -DLATEDUP -DNLOSS=1 -DNDUP=1 -DFIX_SELF=1"
  # mutants (must fail): each removes one guard, or a timing assumption
  queue mutant-held-rel-only $H p7 "$base $nof -DTMAX=12 -DUPFAIL=1 -DLATESTART=9 -DMUT_HELD=1"
  queue mutant-no-held     $H p7   "$base $nof -DTMAX=12 -DUPFAIL=1 -DLATESTART=9 -DMUT_HELD=2"
  queue mutant-fresh-rel-only $H p8 "$base $nof -DTMAX=12 -DLATESTART=9 -DMUT_FRESH=1"
  queue mutant-no-fresh    $H p8   "$base $nof -DTMAX=12 -DLATESTART=9 -DMUT_FRESH=2"
  queue mutant-renew-shortens $H p3 "$base -DTMAX=16 -DLATEDUP -DMUT_RENEW=1 -DCHECKS=8 -DNCRASH=0 -DNLOSS=1 -DNDUP=1 -DNPAUSE=0 -DNDELAY=1"
  queue mutant-no-free     $H p6   "$base $nof -DTMAX=9 -DNLOSS=2 -DUPFAIL=1 -DMUT_FREE=1"
  queue mutant-free-erases $H p7   "$base $nof -DTMAX=9 -DNLOSS=2 -DUPFAIL=1 -DMUT_FREE=2"
  queue mutant-opr-retry   $H p12  "$base $nof -DTMAX=12 -DTOPR=6 -DNOPREL=1 -DMUT_OPR=1 -DCHECKS=8190"
  queue mutant-no-max-check $H p12 "$base $nof -DTMAX=10 -DTOPR=6 -DNOPREL=1 -DLEASE=24 -DMARGIN=6 -DMAXD=40 -DWLONG=8 -DCHECKS=8190 -DMUT_MAXCHK=1"
  queue mutant-env-held    $H p3   "$base $nof -DTMAX=6 -DENV=1 -DMUT_ENV=1"
  queue mutant-env-no-free $H p6   "$base $nof -DTMAX=7 -DUPFAIL=2 -DLATEDUP -DNLOSS=1 -DNDUP=1 -DFIX_SELF=1 -DENV=1 -DMUT_ENV=2"
  queue mutant-no-guard-d  $H p6   "$base $nof -DTMAX=8 -DTOPR=4 -DLATEDUP -DNLOSS=1 -DNDUP=1 -DNOPREL=1 -DFIX_OPREL=1 -DFIX_SELF=1 -DMUT_GUARDD=1"
  queue mutant-ann-any     $H p10  "$base $nof -DTMAX=12 -DANN=1 -DNTHROT=1 -DMUT_ANN=1"
  # Finding 4: a waiter whose first acquire was throttled takes the earlier
  # episode's success read on the lock item (lockcore before 6a722f2)
  queue mutant-stale-item  $H p10  "$base $nof -DTMAX=8 -DANN=1 -DNTHROT=3 -DMUT_STALE=1"
  queue mutant-allow-2x    $H p10  "$base $nof -DTMAX=8 -DANN=1 -DNTHROT=3 -DOLDREL=-20 -DMUT_ALLOW=1"
  # a predicted sleep not cut at the deadline (the cap not applied)
  queue mutant-pred-deadline $H p11 "$base $nof -DTMAX=8 -DPRED=1 -DWDL=8 -DMUT_PRED=1"
  queue mutant-no-margin   $H p3   "$base -DTMAX=16 -DMARGIN=0 -DCHECKS=8 -DNCRASH=0 -DNLOSS=0 -DNDUP=0 -DNPAUSE=1 -DNDELAY=0"
  queue mutant-eps-0       $H p3   "$base -DTMAX=16 -DEPS=0 -DCHECKS=8 -DNCRASH=0 -DNLOSS=0 -DNDUP=0 -DNPAUSE=1 -DNDELAY=0"
  # seed protocol: counterexamples
  sbase="-DPROFILES -DSJ=2 -DTMAX=16"
  queue seed-p3            $S p3   "$sbase -DCHECKS=8"
  queue seed-p4            $S p4   "$sbase -DCHECKS=16"
  queue seed-p4-crash      $S p4   "$sbase -DCHECKS=16 -DNPAUSE=0 -DNLOSS=0 -DNDUP=0 -DNDELAY=0"
  queue seed-p6            $S p6   "$sbase -DCHECKS=64"
  queue seed-p2-unfenced   $S p2   "$sbase -DCHECKS=4"
else
  export GCCFLAGS="-DCOLLAPSE"    # state compression: the full runs are large
  memlim=${MEMLIM:-10000}
  base="-DSJ=1 -DMIDRATE"
  queue crash+loss+retry   $H pass "$base -DNCRASH=1 -DNLOSS=2 -DNDUP=1 -DNPAUSE=0 -DNDELAY=1"
  queue pause+loss+retry   $H pass "$base -DNCRASH=0 -DNLOSS=1 -DNDUP=1 -DNPAUSE=1 -DNDELAY=1"
  queue crash+pause+delay  $H pass "$base -DNCRASH=1 -DNLOSS=0 -DNDUP=0 -DNPAUSE=1 -DNDELAY=2"
  queue all-faults         $H pass "$base -DNCRASH=1 -DNLOSS=1 -DNDUP=1 -DNPAUSE=1 -DNDELAY=1"
  queue unbounded-pause    $H pass "-DSJ=1 -DMIDRATE -DTMAX=18 -DUNBOUNDED -DNCRASH=1 -DNLOSS=1 -DNDUP=0 -DNPAUSE=1 -DNDELAY=0"
  queue liveness           $H ltl  "$base -DTMAX=26 -DLIVENESS -DNCRASH=1 -DNLOSS=1 -DNDUP=1 -DNPAUSE=1 -DNDELAY=0"
  queue ghost-free         $H pass "$base $nof -DTMAX=14 -DNLOSS=3 -DNDUP=1 -DUPFAIL=2"
  queue operator+faults    $H pass "$base -DTMAX=16 -DNOPREL=1 -DFIX_OPREL=1 -DUPFAIL=2 -DNCRASH=1 -DNLOSS=1 -DNDUP=1 -DNPAUSE=1 -DNDELAY=1"
  queue failing+faults     $H pass "$base -DTMAX=18 -DUPFAIL=2 -DNCRASH=1 -DNLOSS=2 -DNDUP=1 -DNPAUSE=1 -DNDELAY=1"
  queue newcomer+faults    $H pass "$base -DTMAX=18 -DUPFAIL=2 -DLATESTART=9 -DNCRASH=1 -DNLOSS=1 -DNDUP=1 -DNPAUSE=1 -DNDELAY=1"
  queue late-attempt+fix   $H pass "$base -DLATEDUP -DFIX_SELF=1 -DCHECKS=62 -DNCRASH=1 -DNLOSS=1 -DNDUP=1 -DNPAUSE=0 -DNDELAY=1"
  queue finding-late-ghost $H p6   "$base -DLATEDUP -DFIX_SELF=1 -DUPFAIL=1 -DNCRASH=0 -DNLOSS=1 -DNDUP=1 -DNPAUSE=0 -DNDELAY=0"
  queue guard-d            $H pass "$base $nof -DTMAX=12 -DLATEDUP -DNLOSS=1 -DNDUP=1 -DNOPREL=1 -DFIX_OPREL=1 -DFIX_SELF=1 -DNDELAY=1"
  queue announce           $H pass "$base -DTMAX=16 -DANN=1 -DNTHROT=2 -DNCRASH=1 -DNLOSS=1 -DNDUP=1 -DNPAUSE=0 -DNDELAY=1"
  queue announce-2shards   $H pass "$base -DTMAX=12 -DANN=1 -DANNK=2 -DNTHROT=2 -DNCRASH=0 -DNLOSS=1 -DNDUP=0 -DNPAUSE=0 -DNDELAY=1"
  queue stale-item         $H pass "$base -DTMAX=14 -DANN=1 -DNTHROT=3 -DNCRASH=0 -DNLOSS=1 -DNDUP=0 -DNPAUSE=0 -DNDELAY=1"
  queue stale-near         $H pass "$base -DTMAX=12 -DANN=1 -DNTHROT=3 -DOLDREL=-12 -DNCRASH=0 -DNLOSS=1 -DNDUP=0 -DNPAUSE=0 -DNDELAY=1"
  queue pred-faults        $H pass "$base -DTMAX=16 -DPRED=1 -DWDL=56 -DNCRASH=1 -DNLOSS=1 -DNDUP=1 -DNPAUSE=1 -DNDELAY=1"
  queue pred-operator      $H pass "$base $nof -DTMAX=14 -DNOPREL=1 -DFIX_OPREL=1 -DNPAUSE=1 -DPRED=1 -DWDL=48"
  queue pred-announce      $H pass "$base -DTMAX=14 -DANN=1 -DNTHROT=2 -DPRED=1 -DWDL=48 -DNCRASH=0 -DNLOSS=1 -DNDUP=0 -DNPAUSE=0 -DNDELAY=1"
  queue pred-failing       $H pass "$base $nof -DTMAX=16 -DUPFAIL=2 -DNPAUSE=1 -DPRED=1 -DWDL=32"
  queue rfirst-faults      $H pass "$base -DTMAX=16 -DRFIRST=1 -DNCRASH=1 -DNLOSS=1 -DNDUP=1 -DNPAUSE=1 -DNDELAY=1"
  queue rfirst-stale       $H pass "$base -DTMAX=14 -DRFIRST=1 -DANN=1 -DNTHROT=1 -DNCRASH=0 -DNLOSS=1 -DNDUP=0 -DNPAUSE=0 -DNDELAY=1"
  queue finding-opr-overwrite $H p9 "$base $nof -DTMAX=14 -DNPAUSE=1 -DNOPREL=1 -DCHECKS=512 -DMUT_REL=1"
  queue max-check          $H pass "$base $nof -DTMAX=14 -DNOPREL=1 -DLEASE=24 -DMARGIN=6 -DMAXD=40 -DWLONG=8 -DCHECKS=8190"
  queue env-late           $H pass "$base -DTMAX=10 -DUPFAIL=2 -DLATEDUP -DNLOSS=1 -DNDUP=1 -DFIX_SELF=1 -DENV=1 -DNCRASH=0 -DNPAUSE=0 -DNDELAY=0"
  queue mutant-held-rel-only $H p7 "$base $nof -DTMAX=16 -DUPFAIL=2 -DLATESTART=9 -DMUT_HELD=1"
  queue mutant-no-held     $H p7   "$base $nof -DTMAX=16 -DUPFAIL=2 -DLATESTART=9 -DMUT_HELD=2"
  queue mutant-fresh-rel-only $H p8 "$base $nof -DTMAX=16 -DLATESTART=9 -DMUT_FRESH=1"
  queue mutant-no-fresh    $H p8   "$base $nof -DTMAX=16 -DLATESTART=9 -DMUT_FRESH=2"
  queue mutant-renew-shortens $H p3 "$base -DLATEDUP -DMUT_RENEW=1 -DCHECKS=8 -DNCRASH=0 -DNLOSS=1 -DNDUP=1 -DNPAUSE=0 -DNDELAY=1"
  queue mutant-no-free     $H p6   "$base $nof -DTMAX=14 -DNLOSS=2 -DUPFAIL=1 -DMUT_FREE=1"
  queue mutant-free-erases $H p7   "$base $nof -DTMAX=14 -DNLOSS=2 -DUPFAIL=1 -DMUT_FREE=2"
  queue mutant-opr-retry   $H p12  "$base $nof -DTMAX=16 -DNOPREL=1 -DMUT_OPR=1 -DCHECKS=8190"
  queue mutant-no-max-check $H p12 "$base $nof -DTMAX=14 -DNOPREL=1 -DLEASE=24 -DMARGIN=6 -DMAXD=40 -DWLONG=8 -DCHECKS=8190 -DMUT_MAXCHK=1"
  queue mutant-env-held    $H p3   "$base $nof -DTMAX=10 -DENV=1 -DMUT_ENV=1"
  queue mutant-ann-any     $H p10  "$base $nof -DTMAX=16 -DANN=1 -DNTHROT=1 -DMUT_ANN=1"
  queue mutant-stale-item  $H p10  "$base $nof -DTMAX=12 -DANN=1 -DNTHROT=3 -DMUT_STALE=1"
  queue mutant-allow-2x    $H p10  "$base $nof -DTMAX=12 -DANN=1 -DNTHROT=3 -DOLDREL=-20 -DMUT_ALLOW=1"
  queue mutant-no-guard-d  $H p6   "$base $nof -DTMAX=12 -DLATEDUP -DNLOSS=1 -DNDUP=1 -DNOPREL=1 -DFIX_OPREL=1 -DFIX_SELF=1 -DMUT_GUARDD=1"
  queue mutant-pred-deadline $H p11 "$base $nof -DTMAX=12 -DPRED=1 -DWDL=8 -DMUT_PRED=1"
  queue mutant-no-margin   $H p3   "$base -DMARGIN=0 -DCHECKS=8 -DNCRASH=0 -DNLOSS=0 -DNDUP=0 -DNPAUSE=1 -DNDELAY=0"
  queue mutant-eps-0       $H p3   "$base -DEPS=0 -DCHECKS=8 -DNCRASH=0 -DNLOSS=0 -DNDUP=0 -DNPAUSE=1 -DNDELAY=0"
  sbase="-DSJ=3 -DMIDRATE -DTMAX=18"
  queue seed-p3            $S p3   "$sbase -DCHECKS=8"
  queue seed-p4            $S p4   "$sbase -DCHECKS=16"
  queue seed-p4-crash      $S p4   "$sbase -DCHECKS=16 -DNPAUSE=0 -DNLOSS=0 -DNDUP=0 -DNDELAY=0"
  queue seed-p6            $S p6   "$sbase -DCHECKS=64"
  queue seed-p2-unfenced   $S p2   "$sbase -DCHECKS=4"
fi
wait

status=0
echo "spin model check ($mode): every search below is bounded (3 processes, one burst,"
echo "the horizon TMAX, the fault budgets NCRASH/NPAUSE/NLOSS/NDUP/NDELAY/NOPREL, NREV acquire"
echo "attempts each); within those bounds each 'pass' search is complete. None of it is"
echo "an exhaustive proof for unbounded time, processes or faults."
for n in "${names[@]}"; do
  cat "$work/$n.res"
  grep -q '^ok ' "$work/$n.res" || status=1
done
if [ $status = 0 ]; then echo "all checks behaved as expected"; else echo "SOME CHECKS FAILED"; fi
exit $status
