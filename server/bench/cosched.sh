#!/usr/bin/env bash
# cosched.sh: before/after of one server mode between two spindle binaries, run at the same time.
# Both servers (one carrier or thread each) share one CPU (SRV_CPU, default 1); each has its own
# mock (think time THINK, default 1ms) and closed-loop load generator (1 thread, 100 connections)
# on the other CPU (LG_CPU, default 0). The kernel shares the server CPU between the two, so
# each one's throughput is in inverse proportion to its CPU per request, and whatever slows the
# machine down during a round (a noisy neighbour of the VM, a hot host core) slows both alike:
# on the 2-vCPU development machine two runs of one binary in a row differ by up to 40%, two
# servers run together by under 2% (an A/A round). Sides alternate between rounds, so that the
# order the load generators start in favours neither. Prints every round's req/s and B/A, and
# the median (min–max) of B/A. Run from the repo root:
#
#   server/bench/cosched.sh ROUNDS SECONDS BIN_A BIN_B [MODE]     # MODE default nethttp-carrier
#
# TARGET (default /fruits) is the path the load generators ask for; POLLER (default: the
# binaries' own default) the servers' --poller. PEER, a program that takes --threads, --port and
# --backend (server/bench/fasthttppeer), is side B's server instead of BIN_B's serve: then B/A is
# the peer's throughput over spindle's MODE, sharing the CPU, the ratio of their CPU per request.
# Loopback only (ports PORT..PORT+11, default 18280); every process it starts is stopped on exit.
set -euo pipefail
if [ $# -lt 4 ]; then
	echo "usage: $0 ROUNDS SECONDS BIN_A BIN_B [MODE]" >&2
	exit 2
fi
rounds=$1 secs=$2 bin_a=$3 bin_b=$4 mode=${5:-nethttp-carrier}
srv_cpu=${SRV_CPU:-1} lg_cpu=${LG_CPU:-0} think=${THINK:-1ms} port=${PORT:-18280} target=${TARGET:-/fruits}
poller_args=()
[ -n "${POLLER:-}" ] && poller_args=(--poller "$POLLER")
for b in "$bin_a" "$bin_b" ${PEER:+"$PEER"}; do
	[ -x "$b" ] || { echo "$0: $b is not an executable" >&2; exit 2; }
done
command -v taskset >/dev/null || { echo "skip: taskset is not installed" >&2; exit 0; }
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
scratch

ratios=()
for r in $(seq "$rounds"); do
	bins=("$bin_a" "$bin_b")
	[ $((r % 2)) -eq 0 ] && bins=("$bin_b" "$bin_a")
	pids=()
	for k in 0 1; do
		m=$((port + 10 * k)) s=$((port + 10 * k + 1))
		taskset -c "$lg_cpu" "${bins[$k]}" mock --port "$m" --think-time "$think" --cpuset "$lg_cpu" >/dev/null 2>&1 &
		pids+=($!)
		if [ -n "${PEER:-}" ] && [ "${bins[$k]}" = "$bin_b" ]; then
			taskset -c "$srv_cpu" "$PEER" --threads 1 --port "$s" --backend "http://127.0.0.1:$m/fruits" >/dev/null 2>&1 &
		else
			taskset -c "$srv_cpu" "${bins[$k]}" serve --mode "$mode" --threads 1 --cpuset "$srv_cpu" --port "$s" "${poller_args[@]}" \
				--backend "http://127.0.0.1:$m/fruits" >/dev/null 2>&1 &
		fi
		pids+=($!)
		waitport "$m" || exit 1
		waitport "$s" || exit 1
	done
	loads=()
	for k in 0 1; do
		taskset -c "$lg_cpu" "$bin_a" load -t1 -c100 -d"${secs}s" "http://127.0.0.1:$((port + 10 * k + 1))$target" >"$dir/load.$k" 2>&1 &
		loads+=($!)
	done
	wait "${loads[@]}"
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait "${pids[@]}" 2>/dev/null || true
	rps=()
	for k in 0 1; do
		v=$(awk '/Requests\/sec/{print $2}' "$dir/load.$k")
		[ -n "$v" ] || { echo "$0: round $r: no result from the load generator:" >&2; cat "$dir/load.$k" >&2; exit 1; }
		rps+=("$v")
	done
	if [ $((r % 2)) -eq 0 ]; then a=${rps[1]} b=${rps[0]}; else a=${rps[0]} b=${rps[1]}; fi
	ratio=$(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.3f", b/a}')
	ratios+=("$ratio")
	echo "round $r: A $a req/s, B $b req/s, B/A $ratio"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{v[NR]=$1} END{m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "B/A: median %.3f (%.3f-%.3f) over %d rounds\n", m, v[1], v[NR], NR}'
