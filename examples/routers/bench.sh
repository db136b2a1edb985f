#!/usr/bin/env bash
# bench.sh: each router of this example served three ways on one server CPU (SRV_CPU, default
# 1), with spindle's load generator on the other (LG_CPU, default 0: one thread, CONNS
# connections, default 100, closed loop), GET TARGET (default /users/42; /metrics: promhttp) for
# SECONDS: the scheduler study's one-server-CPU layout, separate processes. The sides: nethttp
# (net/http's server), parked (carrierhttp on one carrier whose idle waits park: the example's
# default) and blocking (-park-idle=false: the carrier blocks in its poller). Rounds rotate the
# sides' order. Prints every run's req/s and server CPU µs per request, then per router and
# carrier side the median (min-max) over rounds of its req/s over net/http's in the same round,
# and of net/http's CPU per request over its own. GZIP=1 has the load generator send
# "Accept-Encoding: gzip", as Go's client does, so that /metrics is gzipped. Run from the repo
# root:
#
#   (cd examples/routers && go build -o /tmp/routers .) && go build -o /tmp/spindle ./cmd/spindle
#   examples/routers/bench.sh ROUNDS SECONDS /tmp/routers /tmp/spindle
#
# Needs taskset and jq; loopback only (port PORT, default 18580); every process it starts is
# stopped on exit.
set -euo pipefail
if [ $# -ne 4 ]; then
	echo "usage: $0 ROUNDS SECONDS ROUTERS_BIN SPINDLE_BIN" >&2
	exit 2
fi
rounds=$1 secs=$2 bin=$3 spindle=$4
load_args=()
[ "${GZIP:-0}" = 1 ] && load_args=(-H "Accept-Encoding: gzip")
srv_cpu=${SRV_CPU:-1} lg_cpu=${LG_CPU:-0} port=${PORT:-18580} conns=${CONNS:-100}
case "$rounds$secs" in *[!0-9]*) echo "$0: ROUNDS and SECONDS are whole numbers" >&2; exit 2 ;; esac
for b in "$bin" "$spindle"; do
	[ -x "$b" ] || { echo "$0: $b is not an executable" >&2; exit 2; }
done
for c in taskset jq; do
	command -v "$c" >/dev/null || { echo "skip: $c is not installed" >&2; exit 0; }
done
. "$(dirname "$0")/../../server/bench/lib.sh"
scratch

sides=(nethttp parked blocking)

# run ROUTER SIDE NAME: one closed-loop run; req/s and CPU µs per request into $dir/rows.
run() {
	local router=$1 side=$2 name=$3 srv t0 t1 n rate args=(-server carrierhttp -carriers 1)
	case "$side" in
	nethttp) args=(-server nethttp) ;;
	blocking) args+=(-park-idle=false) ;;
	esac
	taskset -c "$srv_cpu" "$bin" -router "$router" "${args[@]}" -addr "127.0.0.1:$port" >"$dir/server.log" 2>&1 &
	srv=$!
	pids+=("$srv")
	waitport "$port" || { cat "$dir/server.log" >&2; exit 1; }
	t0=$(ticks "$srv")
	taskset -c "$lg_cpu" "$spindle" load -t1 -c"$conns" -d"${secs}s" "${load_args[@]}" --json "$dir/$name.json" \
		"http://127.0.0.1:$port${TARGET:-/users/42}" >/dev/null 2>"$dir/$name.err" || { cat "$dir/$name.err" >&2; exit 1; }
	t1=$(ticks "$srv")
	kill "$srv"
	wait "$srv" 2>/dev/null || true
	pids=()
	n=$(jq '.completed + .warmup_requests' "$dir/$name.json")
	[ "$(jq '.failed' "$dir/$name.json")" = 0 ] || echo "  $name: $(jq '.failed' "$dir/$name.json") failed requests" >&2
	rate=$(jq '.achieved_rate' "$dir/$name.json")
	cpu=$(awk -v t="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" -v n="$n" 'BEGIN{printf "%.2f", t * 1e6 / hz / n}')
	echo "  $name: $(printf %.0f "$rate") req/s, server CPU $cpu µs/request"
	echo "$router $side $rate $cpu" >>"$dir/rows"
}

: >"$dir/rows"
for r in $(seq "$rounds"); do
	echo "round $r"
	for router in gin chi; do
		k=$(((r - 1) % 3))
		for s in "${sides[@]:k}" "${sides[@]:0:k}"; do run "$router" "$s" "r$r-$router-$s"; done
	done
done

# med: "median (min-max)" of the numbers on stdin.
med() {
	sort -g | awk '{v[NR]=$1} END{m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.3f (%.3f-%.3f)", m, v[1], v[NR]}'
}
echo "summary over $rounds rounds of ${secs} s, one server CPU, carrierhttp on one carrier:"
for router in gin chi; do
	for side in parked blocking; do
		# Each round has one row per side: the k-th nethttp row pairs with the k-th of side.
		awk -v r="$router" -v s="$side" '$1==r && $2=="nethttp" {n[++i]=$3; nc[i]=$4} $1==r && $2==s {c[++j]=$3; cc[j]=$4}
			END{for (k=1; k<=i; k++) print c[k]/n[k], nc[k]/cc[k]}' "$dir/rows" >"$dir/ratios"
		echo "  $router, $side: req/s over nethttp's $(cut -d' ' -f1 "$dir/ratios" | med)," \
			"nethttp's CPU per request over its own $(cut -d' ' -f2 "$dir/ratios" | med)"
	done
done
