#!/bin/bash
# sendlag.sh ROUNDS [SPINDLE]: the load generator's send lag by where it runs, interleaved:
# alone on CPU 1 (the mock on CPU 0), sharing CPU 1 with the mock (the 2-CPU layout of
# compare), and sharing CPU 1 with a busy loop (a starved generator). 100 connections,
# 4,500 req/s (the default compare's fixed rate here), think time 1 ms, 3 s windows.
# Prints per run: the machine's steal over the window, the send lag's p50/p90/p99/p99.9
# and the corrected latency's p50/p99, µs. Needs 2 CPUs and python3.
set -euo pipefail
cd "$(dirname "$0")"
. ./lib.sh
rounds=${1:-4}
S=${2:-}
scratch
if [ -z "$S" ]; then
	S=$dir/spindle
	(cd ../.. && go build -o "$S" ./cmd/spindle)
fi
port=18380
steal() { awk '/^cpu /{print $9}' /proc/stat; }
for round in $(seq "$rounds"); do
	for cond in alone shared busy; do
		mcpu=0
		[ "$cond" = shared ] && mcpu=1
		"$S" mock --port $port --think-time 1ms --threads 1 --cpuset $mcpu >/dev/null 2>&1 &
		mock=$!
		pids+=($mock)
		waitport $port
		busy=
		if [ "$cond" = busy ]; then
			taskset -c 1 sh -c 'while :; do :; done' &
			busy=$!
			pids+=($busy)
		fi
		s0=$(steal)
		t0=$(date +%s.%N)
		"$S" load -t1 -c100 -d3s -R4500 --cpuset 1 --json "$dir/load.json" "http://127.0.0.1:$port/fruits" >/dev/null 2>&1
		s1=$(steal)
		t1=$(date +%s.%N)
		[ -n "$busy" ] && kill "$busy"
		kill "$mock"
		wait "$mock" 2>/dev/null || true
		python3 - "$dir/load.json" "$round" "$cond" "$s0" "$s1" "$t0" "$t1" <<'PY'
import json, sys, os
r = json.load(open(sys.argv[1]))
l, c = r["send_lag"]["percentiles_us"], r["corrected"]["percentiles_us"]
ticks = os.sysconf("SC_CLK_TCK")
steal = (int(sys.argv[5]) - int(sys.argv[4])) / ticks / (float(sys.argv[7]) - float(sys.argv[6])) / os.cpu_count()
print(f"{sys.argv[2]} {sys.argv[3]:6} steal {100*steal:4.1f}%  lag p50 {l['50']:5} p90 {l['90']:5} p99 {l['99']:5} p99.9 {l['99.9']:5}  latency p50 {c['50']:5} p99 {c['99']:5}")
PY
	done
done
