#!/usr/bin/env bash
# pollers.sh: issue 16's poller comparison. Carrier mode, one carrier on CPU 1 (SRV_CPU); the mock
# (think time THINK, default 1ms as in `spindle compare`) and the load generator on CPU 0 (LG_CPU).
# Per round, interleaved, for each configuration: max throughput (closed loop, 1 thread, 100
# connections) with the server's CPU µs per request, then the server's CPU µs per request at a
# fixed RATE (default 4000 req/s, 32 connections); PORT (default 18180) is the mock's, PORT+1 the server's. CPU is the sum of /proc/PID/task/*/schedstat
# (ns). Prints every run and the median (min–max) of the per-round ratios of each configuration
# to the first. A configuration is POLLER or BINARY:POLLER (BINARY: a spindle built from another
# commit, for before/after). With PROFILE=1 each max-throughput run is also sampled with perf
# (cpu-clock) and split into TCP work, poller and system-call mechanics, sleeping, and the rest.
# With COUNTERS=1 each max-throughput run also counts the server's instructions, cycles, cache
# misses and dTLB load misses per request (perf stat; "n/a" where the CPU or VM has no counters).
# Run from the repo root:
#
#   server/bench/pollers.sh [ROUNDS] [SECONDS] [CONFIG...]      # default: 5 4 epoll io_uring
#   server/bench/pollers.sh 5 4 epoll io_uring /tmp/spindle-old:io_uring
#
# Loopback only; every process it starts is stopped on exit.
set -euo pipefail
rounds=${1:-5}
secs=${2:-4}
shift $(($# >= 2 ? 2 : $#))
configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=(epoll io_uring)
srv_cpu=${SRV_CPU:-1}
lg_cpu=${LG_CPU:-0}
think=${THINK:-1ms}
rate=${RATE:-4000}
mport=${PORT:-18180} # the mock's port; the server's is the next one
sport=$((mport + 1))
command -v taskset >/dev/null || { echo "skip: taskset is not installed" >&2; exit 0; }
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
scratch
go build -o "$dir/spindle" ./cmd/spindle
S="$dir/spindle"

# cpuns PID: CPU time of every thread of the process, in ns.
cpuns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {print s}'; }

# breakdown PERFDATA: shares of the sampled CPU by kind of work.
breakdown() {
	perf script -i "$1" -F ip,sym 2>/dev/null | python3 -c '
import re, sys, collections
c = collections.Counter(); n = 0
for s in sys.stdin.read().split("\n\n"):
    fr = [l.strip() for l in s.strip().split("\n") if l.strip()]
    if not fr: continue
    n += 1; t = "\n".join(fr)
    if re.search(r"tcp_sendmsg|tcp_recvmsg|sock_recvmsg|sock_sendmsg|tcp_v4_rcv|net_rx_action", t): k = "tcp"
    elif re.search(r"finish_task_switch|__schedule", t): k = "sleep"
    elif re.search(r"epoll|io_uring|io_cq|io_sub|io_run|io_issue|io_arm|io_poll|__io|do_syscall_64|Syscall|uringPoller|epollPoller|pollIO", t): k = "poller+syscalls"
    else: k = "rest"
    c[k] += 1
print(" ".join("%s %.1f%%" % (k, 100.0 * c[k] / max(n, 1)) for k in ("tcp", "poller+syscalls", "sleep", "rest")))'
}

taskset -c "$lg_cpu" "$S" mock --port "$mport" --think-time "$think" --cpuset "$lg_cpu" >/dev/null 2>&1 &
pids+=($!)
waitport "$mport"
declare -A res
for r in $(seq "$rounds"); do
	for i in "${!configs[@]}"; do
		cfg=${configs[$i]}
		bin=$S poller=$cfg
		if [[ $cfg == *:* ]]; then bin=${cfg%%:*} poller=${cfg##*:}; fi
		for phase in max fixed; do
			taskset -c "$srv_cpu" "$bin" serve --mode carrier --threads 1 --cpuset "$srv_cpu" --poller "$poller" \
				--port "$sport" --backend "http://127.0.0.1:$mport/fruits" >/dev/null 2>&1 &
			sv=$!
			pids+=($sv)
			waitport "$sport"
			args=(-t1 -c100)
			[ "$phase" = fixed ] && args=(-R "$rate" -c32)
			taskset -c "$lg_cpu" "$S" load "${args[@]}" -d 1s "http://127.0.0.1:$sport/fruits" >/dev/null 2>&1 # warm-up
			prof=
			if [ "$phase" = max ] && [ "${PROFILE:-0}" = 1 ] && command -v perf >/dev/null; then
				perf record -q -e cpu-clock -F 4999 -g -p "$sv" -o "$dir/perf.data" -- sleep "$secs" >/dev/null 2>&1 &
				prof=$!
			fi
			ctr=
			if [ "$phase" = max ] && [ "${COUNTERS:-0}" = 1 ] && command -v perf >/dev/null; then
				perf stat -x, -e instructions,cycles,cache-misses,dTLB-load-misses -o "$dir/stat.csv" -p "$sv" -- sleep "$secs" >/dev/null 2>&1 &
				ctr=$!
			fi
			c0=$(cpuns "$sv")
			out=$(taskset -c "$lg_cpu" "$S" load "${args[@]}" -d "${secs}s" "http://127.0.0.1:$sport/fruits" 2>&1)
			c1=$(cpuns "$sv")
			n=$(grep -o '[0-9]* requests in' <<<"$out" | cut -d' ' -f1 || true)
			rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
			if [ -z "$n" ] || [ "$n" = 0 ]; then
				echo "round $r $phase $cfg: no request completed; the load said: $(tail -3 <<<"$out" | tr '\n' ' ')" >&2
				n=0 rps=0
			fi
			us=$(awk -v a="$c0" -v b="$c1" -v n="$n" 'BEGIN {if (n > 0) printf "%.1f", (b - a) / n / 1000; else printf "nan"}')
			line="round $r $phase $cfg: $rps req/s, server $us µs/request"
			errs=$(grep -E 'errors|Non-2xx' <<<"$out" | tr -s ' ' | tr '\n' ' ' || true)
			[ -z "$errs" ] || line="$line; load: $errs"
			if [ -n "$prof" ]; then wait "$prof" || true; line="$line; $(breakdown "$dir/perf.data")"; fi
			if [ -n "$ctr" ]; then
				wait "$ctr" || true
				line="$line; per request:$(awk -F, -v n="$n" '$3 != "" && $1 !~ /^#/ {v = ($1 ~ /^[0-9.]+$/) ? sprintf("%.0f", $1 / n) : "n/a"; printf " %s %s", $3, v}' "$dir/stat.csv")"
			fi
			echo "$line"
			res[$r,$i,$phase,rps]=$rps
			res[$r,$i,$phase,us]=$us
			kill "$sv"
			wait "$sv" 2>/dev/null || true
		done
	done
done
# ratio FIGURE PHASE I: median (min–max) over rounds of config I's figure over config 0's
# (rounds where either run completed no request are left out).
ratio() {
	for r in $(seq "$rounds"); do awk -v a="${res[$r,$3,$2,$1]}" -v b="${res[$r,0,$2,$1]}" 'BEGIN {if (a + 0 > 0 && b + 0 > 0) printf "%.3f\n", a / b}'; done |
		sort -n | awk '{v[NR] = $1} END {if (NR == 0) {printf "n/a"; exit} m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f (%.2f–%.2f, %d rounds)", m, v[1], v[NR], NR}'
}
for i in "${!configs[@]}"; do
	[ "$i" = 0 ] && continue
	echo "${configs[$i]} / ${configs[0]}: max throughput $(ratio rps max "$i"), CPU per request at max $(ratio us max "$i"), at $rate req/s $(ratio us fixed "$i")"
done
