#!/usr/bin/env bash
# bench.sh: handler -> gRPC unary round trips, three front ends in turn on one server CPU (SRV_CPU,
# default 1), each a process of its own; the gRPC backend (one process for the whole run) and
# spindle's load generator (one thread, CONNS connections, default 32, closed loop, GET
# /echo?msg=hello for SECONDS) share the other CPU (LG_CPU, default 0). The front ends:
#   carrier  carrierhttp on one carrier, one gRPC client dialled with Carrier.DialContext (the recipe)
#   default  the same, the client dialled with gRPC's own dialer (plain Go conns)
#   nethttp  net/http's server, one gRPC client with gRPC's own dialer
# Both carrierhttp front ends park idle carriers (the example's default). Rounds rotate the front
# ends' order.
# RATE=N sends N requests a second instead (fixed rate, latency corrected for coordinated
# omission): then the CPU per request is at equal work and the p99 is compared too.
# Prints every run's req/s, the front end's CPU µs per request and its CPU use (and the backend's
# CPU per request: the other CPU's share of the work), the p99, and the read and write system
# calls per request of the front end and the backend (/proc/PID/io), then the median
# (min-max) over rounds of each carrierhttp front end's req/s over nethttp's in the same round, of
# its CPU per request over nethttp's and of its p99 over nethttp's, and the same for carrier over
# default. Run from the repo root:
#
#   (cd examples/grpc && go build -o /tmp/grpcex .) && go build -o /tmp/spindle ./cmd/spindle
#   examples/grpc/bench.sh ROUNDS SECONDS /tmp/grpcex /tmp/spindle
#
# Needs taskset and jq; loopback only (ports PORT and PORT+1, default 18590); every process it
# starts is stopped on exit.
set -euo pipefail
if [ $# -ne 4 ]; then
	echo "usage: $0 ROUNDS SECONDS GRPCEX_BIN SPINDLE_BIN" >&2
	exit 2
fi
rounds=$1 secs=$2 bin=$3 spindle=$4
srv_cpu=${SRV_CPU:-1} lg_cpu=${LG_CPU:-0} port=${PORT:-18590} conns=${CONNS:-32}
rate_args=()
[ -n "${RATE:-}" ] && rate_args=(-R "$RATE")
bport=$((port + 1))
case "$rounds$secs" in *[!0-9]*) echo "$0: ROUNDS and SECONDS are whole numbers" >&2; exit 2 ;; esac
for b in "$bin" "$spindle"; do
	[ -x "$b" ] || { echo "$0: $b is not an executable" >&2; exit 2; }
done
for c in taskset jq; do
	command -v "$c" >/dev/null || { echo "skip: $c is not installed" >&2; exit 0; }
done
. "$(dirname "$0")/../../server/bench/lib.sh"
scratch

taskset -c "$lg_cpu" "$bin" -backend-only -addr "127.0.0.1:$bport" >"$dir/backend.log" 2>&1 &
backend=$!
pids+=("$backend")
waitport "$bport" || { cat "$dir/backend.log" >&2; exit 1; }

sides=(carrier default nethttp)

# rw PID: the read and write system calls of process PID so far.
rw() { awk '/^syscr/ {r = $2} /^syscw/ {w = $2} END {print r, w}' "/proc/$1/io"; }

# run SIDE NAME: one closed-loop run; req/s and front-end CPU µs per request into $dir/rows.
run() {
	local side=$1 name=$2 srv t0 t1 b0 b1 n rate cpu use bcpu p99 fio0 fio1 bio0 bio1 calls args=(-server carrierhttp -carriers 1 -dialer "$1")
	[ "$side" = nethttp ] && args=(-server nethttp)
	taskset -c "$srv_cpu" "$bin" "${args[@]}" -addr "127.0.0.1:$port" -backend "127.0.0.1:$bport" >"$dir/server.log" 2>&1 &
	srv=$!
	pids+=("$srv")
	waitport "$port" || { cat "$dir/server.log" >&2; exit 1; }
	t0=$(ticks "$srv") b0=$(ticks "$backend") fio0=$(rw "$srv") bio0=$(rw "$backend")
	taskset -c "$lg_cpu" "$spindle" load -t1 -c"$conns" -d"${secs}s" "${rate_args[@]}" --json "$dir/$name.json" \
		"http://127.0.0.1:$port/echo?msg=hello" >/dev/null 2>"$dir/$name.err" || { cat "$dir/$name.err" >&2; exit 1; }
	t1=$(ticks "$srv") b1=$(ticks "$backend") fio1=$(rw "$srv") bio1=$(rw "$backend")
	kill "$srv"
	wait "$srv" 2>/dev/null || true
	pids=("${pids[0]}")
	n=$(jq '.completed + .warmup_requests' "$dir/$name.json")
	[ "$(jq '.failed' "$dir/$name.json")" = 0 ] || echo "  $name: $(jq '.failed' "$dir/$name.json") failed requests" >&2
	rate=$(jq '.achieved_rate' "$dir/$name.json")
	p99=$(jq '.corrected.percentiles_us["99"]' "$dir/$name.json")
	cpu=$(awk -v t="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" -v n="$n" 'BEGIN{printf "%.2f", t * 1e6 / hz / n}')
	bcpu=$(awk -v t="$((b1 - b0))" -v hz="$(getconf CLK_TCK)" -v n="$n" 'BEGIN{printf "%.2f", t * 1e6 / hz / n}')
	calls=$(echo "$fio0 $fio1 $bio0 $bio1" | awk -v n="$n" '{printf "front end %.2f reads %.2f writes, backend %.2f reads %.2f writes", ($3-$1)/n, ($4-$2)/n, ($7-$5)/n, ($8-$6)/n}')
	use=$(awk -v t="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" -v s="$secs" 'BEGIN{printf "%.0f", t * 100 / hz / s}')
	echo "  $name: $(printf %.0f "$rate") req/s, front end CPU $cpu µs/request ($use% of its CPU), backend $bcpu µs/request, p99 $p99 µs; per request $calls"
	echo "$side $rate $cpu $p99" >>"$dir/rows"
}

: >"$dir/rows"
for r in $(seq "$rounds"); do
	echo "round $r (1-minute load average $(cut -d" " -f1 /proc/loadavg) as it begins)"
	k=$(((r - 1) % 3))
	for s in "${sides[@]:k}" "${sides[@]:0:k}"; do run "$s" "r$r-$s"; done
done

# med: "median (min-max)" of the numbers on stdin.
med() {
	sort -g | awk '{v[NR]=$1} END{m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.3f (%.3f-%.3f)", m, v[1], v[NR]}'
}
# ratios A B: per round, A's req/s, CPU per request and p99 over B's (each side has one row per
# round: the k-th rows pair).
ratios() {
	awk -v a="$1" -v b="$2" '$1==a {x[++i]=$2; xc[i]=$3; xp[i]=$4} $1==b {y[++j]=$2; yc[j]=$3; yp[j]=$4}
		END{for (k=1; k<=i; k++) print x[k]/y[k], xc[k]/yc[k], xp[k]/yp[k]}' "$dir/rows" >"$dir/ratios"
	echo "  $1 over $2: req/s $(cut -d' ' -f1 "$dir/ratios" | med), CPU per request $(cut -d' ' -f2 "$dir/ratios" | med), p99 $(cut -d' ' -f3 "$dir/ratios" | med)"
}
echo "summary over $rounds rounds of ${secs} s, the front end on one CPU, $conns connections, ${RATE:-closed loop}${RATE:+ req/s}:"
for s in "${sides[@]}"; do
	echo "  $s: req/s $(awk -v s="$s" '$1==s {print $2}' "$dir/rows" | med), CPU µs/request $(awk -v s="$s" '$1==s {print $3}' "$dir/rows" | med), p99 µs $(awk -v s="$s" '$1==s {print $4}' "$dir/rows" | med)"
done
ratios carrier nethttp
ratios default nethttp
ratios carrier default
