#!/usr/bin/env bash
# peers.sh: one spindle server mode against a peer server of another runtime (the fasthttp peer
# in fasthttppeer/, or any program that takes --port and --backend and answers /health and /fruits
# as `spindle serve` does), at maximum throughput and at fixed rates: issue 24's comparison.
# Each side runs alone on the server CPU (SRV_CPU, default 1), with the mock (think time THINK,
# default 1ms) and the load generator (1 thread, CONNS connections, default 100) on the other
# (LG_CPU, default 0). A round runs, in turn for both sides (A first in odd rounds, B first in
# even ones): a closed-loop run of SECONDS (max req/s), then, after both maxima are known, one
# fixed-rate run of SECONDS per rate in RATES (default "10000 70%", empty for none; "70%" is 70% of side A's
# maximum in that round, the issue's "70% of the carrier mode's own max"), each after a 2 s
# warm-up. Prints every run's figures, then per side and rate the median (min-max) over rounds
# of p50, p99 and p99.9 (corrected, ms), B/A of max req/s, and in how many rounds A's p99 was at
# most B's and A's p99.9 at most twice B's p99. Every run also prints the host steal of its measured
# window (load.json's host_steal: what the hypervisor took from this host's CPUs, read every 100 ms),
# and per side and rate the runs with p99.9 over 10 ms are split by whether a 100 ms sample lost 20 ms
# or more of a CPU (a burst), so that a stall a VM's host caused is told from the server's. Run from
# the repo root:
#
#   go build -o /tmp/spindle ./cmd/spindle
#   (cd server/bench/fasthttppeer && go build -o /tmp/fasthttppeer .)
#   server/bench/peers.sh ROUNDS SECONDS /tmp/spindle /tmp/fasthttppeer [MODE]   # MODE default carrier
#
# System calls: each server runs under "perf stat -e raw_syscalls:sys_enter", its count on only
# while the load runs (perf's --control), and every figure of server CPU per request has the
# server's system calls per request (all its threads, warm-up requests included) beside it; the
# count adds the tracepoint's cost to each of the server's system calls: SYSCALLS=0 runs without
# it. Where perf is missing or cannot count the tracepoint (no access to tracefs), the figure is
# "n/a (reason)".
#
# TARGET (default /fruits) is the path asked for; POLLER the spindle server's --poller; SERVE_ARGS
# more flags for spindle's serve (e.g. "--app tfb --db postgres://..." for TechEmpower's /json and
# /plaintext); PIPELINE, the load generator's --pipeline at max throughput (TechEmpower's
# plaintext: 16); KEEP, a directory to keep every run's load.json in. Needs taskset and jq. Loopback only (ports
# PORT..PORT+1, default 18380); every process it starts is stopped on exit.
#
# PEER_BIN "spindle" makes the peer spindle itself, serving as side A does but in mode PEER_MODE
# (default MODE) and with PEER_ARGS added: two spindle configurations measured the same way, e.g.
# PEER_ARGS=--park-idle server/bench/peers.sh 5 10 /tmp/spindle spindle carrier
set -euo pipefail
if [ $# -lt 4 ]; then
	echo "usage: $0 ROUNDS SECONDS SPINDLE_BIN PEER_BIN [MODE]" >&2
	exit 2
fi
rounds=$1 secs=$2 bin=$3 peer=$4 mode=${5:-carrier}
srv_cpu=${SRV_CPU:-1} lg_cpu=${LG_CPU:-0} think=${THINK:-1ms} port=${PORT:-18380} target=${TARGET:-/fruits}
conns=${CONNS:-100} rates=${RATES-10000 70%}
case "$rounds$secs" in *[!0-9]*) echo "$0: ROUNDS and SECONDS are whole numbers" >&2; exit 2 ;; esac
peer_name=$(basename "$peer") peer_spindle=""
if [ "$peer" = spindle ]; then
	peer=$bin peer_name="${PEER_MODE:-$mode} ${PEER_ARGS:-}" peer_spindle=1
fi
for b in "$bin" "$peer"; do
	[ -x "$b" ] || { echo "$0: $b is not an executable" >&2; exit 2; }
done
for c in taskset jq; do
	command -v "$c" >/dev/null || { echo "skip: $c is not installed" >&2; exit 0; }
done
# sys_na: why system calls are not counted ("" when they are).
sys_na=""
if [ "${SYSCALLS:-1}" = 0 ]; then
	sys_na="off (SYSCALLS=0)"
elif ! command -v perf >/dev/null; then
	sys_na="perf not installed"
elif ! probe=$(perf stat -x, -e raw_syscalls:sys_enter -- true 2>&1) || ! grep -q '^[0-9]*,,raw_syscalls:sys_enter,' <<<"$probe"; then
	sys_na="perf cannot count raw_syscalls:sys_enter: $(sed -n 's/^Error:[[:space:]]*//p' <<<"$probe" | head -1)"
fi
[ -n "$sys_na" ] && echo "system calls per request: n/a ($sys_na)" >&2
poller_args=()
[ -n "${POLLER:-}" ] && poller_args=(--poller "$POLLER")
read -r -a serve_args <<<"${SERVE_ARGS:-}"
read -r -a peer_args <<<"${PEER_ARGS:-}"
pipe_args=()
[ -n "${PIPELINE:-}" ] && pipe_args=(--pipeline "$PIPELINE")
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
scratch
[ -n "${KEEP:-}" ] && mkdir -p "$KEEP"
m=$port s=$((port + 1))
taskset -c "$lg_cpu" "$bin" mock --port "$m" --think-time "$think" --cpuset "$lg_cpu" >/dev/null 2>&1 &
pids+=($!)
waitport "$m" || exit 1
npids=${#pids[@]} # the processes the whole script keeps; a run's server (and perf) are added and dropped per run

# side K: start side K's server (0: spindle MODE, 1: the peer) on the server CPU ($srv its pid),
# under perf stat with its count off where system calls are counted ($perfpid perf's pid, fds 7
# and 8 its control and acknowledgement fifos).
side() {
	local cmd
	if [ "$1" = 0 ]; then
		cmd=("$bin" serve --mode "$mode" --threads 1 --port "$s" "${poller_args[@]}"
			"${serve_args[@]}" --backend "http://127.0.0.1:$m/fruits")
	elif [ -n "$peer_spindle" ]; then
		cmd=("$bin" serve --mode "${PEER_MODE:-$mode}" --threads 1 --port "$s" "${poller_args[@]}"
			"${serve_args[@]}" "${peer_args[@]}" --backend "http://127.0.0.1:$m/fruits")
	else
		cmd=("$peer" --threads 1 --port "$s" --backend "http://127.0.0.1:$m/fruits")
	fi
	if [ -n "$sys_na" ]; then
		taskset -c "$srv_cpu" "${cmd[@]}" >"$dir/server.log" 2>&1 &
		srv=$! perfpid=""
		pids+=("$srv")
		waitport "$s" || { cat "$dir/server.log" >&2; exit 1; }
		return
	fi
	# perf on the load's CPU; the server (taskset's exec) is its child.
	perfserve raw_syscalls:sys_enter "$s" "$lg_cpu" taskset -c "$srv_cpu" "${cmd[@]}"
}

# run K NAME [RATE]: one load run against side K, its JSON in $dir/NAME.json, the server's CPU µs
# per completed request (over the whole run, connects and warm-up included) in $dir/NAME.cpu and
# its system calls per request (the same requests) in $dir/NAME.sys ("n/a" when not counted).
run() {
	local k=$1 name=$2 rate=${3:-} rargs=("${pipe_args[@]}") t0 t1 n count
	[ -n "$rate" ] && rargs=(-R "$rate" --warmup 2s)
	side "$k"
	t0=$(ticks "$srv")
	[ -n "$perfpid" ] && perfctl enable
	taskset -c "$lg_cpu" "$bin" load -t1 -c"$conns" -d"${secs}s" "${rargs[@]}" --json "$dir/$name.json" \
		"http://127.0.0.1:$s$target" >/dev/null 2>"$dir/$name.err" || { cat "$dir/$name.err" >&2; exit 1; }
	[ -n "$perfpid" ] && perfctl disable
	t1=$(ticks "$srv")
	n=$(jq '.completed + .warmup_requests' "$dir/$name.json")
	awk -v t="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" -v n="$n" 'BEGIN{printf "%.2f\n", t * 1e6 / hz / n}' >"$dir/$name.cpu"
	kill "$srv" 2>/dev/null || true
	if [ -n "$perfpid" ]; then
		wait "$perfpid" 2>/dev/null || true # perf writes its count when the server has exited
		exec 7>&- 8>&-
		count=$(awk -F, '$3 == "raw_syscalls:sys_enter" {print $1}' "$dir/stat.csv")
		case "$count" in
		'' | *[!0-9]*) echo "  $name: perf stat counted no system calls (${count:-no count})" >&2; echo n/a ;;
		*) awk -v c="$count" -v n="$n" 'BEGIN{printf "%.2f\n", c / n}' ;;
		esac >"$dir/$name.sys"
	else
		wait "$srv" 2>/dev/null || true
		echo n/a >"$dir/$name.sys"
	fi
	pids=("${pids[@]:0:npids}") # exited: their pids are no longer the exit trap's to stop
	[ -n "${KEEP:-}" ] && cp "$dir/$name.json" "$KEEP/"
	local bad
	bad=$(jq '.failed + (.errors | if type == "object" then ([.[]] | add // 0) else 0 end)' "$dir/$name.json")
	[ "$bad" = 0 ] || echo "  $name: $bad failed requests" >&2
}

# pct NAME P: the corrected percentile P of run NAME, in ms.
pct() { jq -r --arg p "$2" '.corrected.percentiles_us[$p] / 1000' "$dir/$1.json"; }

# steal NAME: the host steal of run NAME's measured window (load.json's host_steal: the time the
# hypervisor took from this host's CPUs, read every 100 ms): "none", "60 ms (most cpu1 40 ms in
# 100 ms at 9.3 s, 2 bursts of 20 ms or more)" or "n/a (reason)".
steal() {
	jq -r '.host_steal as $h | if $h == null then "n/a (a spindle load without host_steal)"
		elif $h.na then "n/a (\($h.na))" elif $h.total_ms == 0 then "none"
		else "\($h.total_ms) ms (most cpu\($h.max_cpu) \($h.max_ms) ms in \($h.max_sample_ms) ms at \($h.max_at_s * 10 | round / 10) s, \($h.bursts) bursts of 20 ms or more)" end' "$dir/$1.json"
}

# bursts NAME: how many of run NAME's 100 ms samples lost 20 ms or more of a CPU ("n/a" without a figure).
bursts() { jq -r 'if .host_steal.na or .host_steal == null then "n/a" else .host_steal.bursts end' "$dir/$1.json"; }

names=("$mode" "$peer_name")
: >"$dir/rows"
for r in $(seq "$rounds"); do
	order=(0 1)
	[ $((r % 2)) -eq 0 ] && order=(1 0)
	for k in "${order[@]}"; do run "$k" "r$r-max-$k"; done
	max0=$(jq '.achieved_rate' "$dir/r$r-max-0.json") max1=$(jq '.achieved_rate' "$dir/r$r-max-1.json")
	cpu0=$(cat "$dir/r$r-max-0.cpu") cpu1=$(cat "$dir/r$r-max-1.cpu")
	sys0=$(cat "$dir/r$r-max-0.sys") sys1=$(cat "$dir/r$r-max-1.sys")
	echo "round $r: max req/s ${names[0]} $max0, ${names[1]} $max1, B/A $(awk -v a="$max0" -v b="$max1" 'BEGIN{printf "%.3f", b/a}');" \
		"server CPU µs/request ${names[0]} $cpu0, ${names[1]} $cpu1; system calls/request ${names[0]} $sys0, ${names[1]} $sys1;" \
		"host steal ${names[0]} $(steal "r$r-max-0"), ${names[1]} $(steal "r$r-max-1")"
	echo "max - $max0 $max1 $cpu0 $cpu1 $sys0 $sys1" >>"$dir/rows"
	for rate in $rates; do
		R=$rate
		case "$rate" in *%) R=$(awk -v a="$max0" -v p="${rate%\%}" 'BEGIN{printf "%d", a*p/100}') ;; esac
		for k in "${order[@]}"; do run "$k" "r$r-$rate-$k" "$R"; done
		for k in 0 1; do
			p50=$(pct "r$r-$rate-$k" 50) p99=$(pct "r$r-$rate-$k" 99) p999=$(pct "r$r-$rate-$k" 99.9)
			cpu=$(cat "$dir/r$r-$rate-$k.cpu") sys=$(cat "$dir/r$r-$rate-$k.sys")
			echo "  $rate ($R/s) ${names[$k]}: p50 $p50 ms, p99 $p99 ms, p99.9 $p999 ms; server CPU µs/request $cpu, system calls/request $sys;" \
				"host steal $(steal "r$r-$rate-$k")"
			echo "$rate $k $p50 $p99 $p999 $cpu $sys $(bursts "r$r-$rate-$k")" >>"$dir/rows"
		done
	done
done

# med [FMT]: "median (min-max)" of the numbers on stdin, each printed with FMT (default %.3g);
# "n/a (why)" when a line is not a number (a count that perf did not give).
med() {
	sort -g | awk -v f="${1:-%.3g}" -v na="n/a (${sys_na:-not counted in every run})" '
		$1 !~ /^[0-9.e+-]+$/ {bad = 1} {v[NR]=$1}
		END{if (bad || NR == 0) {printf "%s", na; exit} m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf f " (" f "-" f ")", m, v[1], v[NR]}'
}
echo "summary over $rounds rounds, ${secs} s runs, A = ${names[0]}, B = ${names[1]}:"
echo "  max req/s: A $(awk '$1=="max"{print $3}' "$dir/rows" | med %.0f), B $(awk '$1=="max"{print $4}' "$dir/rows" | med %.0f)," \
	"B/A $(awk '$1=="max"{print $4/$3}' "$dir/rows" | med %.3f)"
echo "  server CPU µs per request at max: A $(awk '$1=="max"{print $5}' "$dir/rows" | med %.2f)," \
	"B $(awk '$1=="max"{print $6}' "$dir/rows" | med %.2f), A/B $(awk '$1=="max"{print $5/$6}' "$dir/rows" | med %.3f)"
echo "  system calls per request at max: A $(awk '$1=="max"{print $7}' "$dir/rows" | med %.2f)," \
	"B $(awk '$1=="max"{print $8}' "$dir/rows" | med %.2f), A/B $(awk '$1=="max"{print ($7 ~ /^[0-9.]+$/ && $8 ~ /^[0-9.]+$/ && $8 > 0) ? $7/$8 : "n/a"}' "$dir/rows" | med %.3f)"
for rate in $rates; do
	for k in 0 1; do
		echo "  $rate ${names[$k]}: p50 $(awk -v r="$rate" -v k="$k" '$1==r && $2==k{print $3}' "$dir/rows" | med)," \
			"p99 $(awk -v r="$rate" -v k="$k" '$1==r && $2==k{print $4}' "$dir/rows" | med)," \
			"p99.9 $(awk -v r="$rate" -v k="$k" '$1==r && $2==k{print $5}' "$dir/rows" | med) ms;" \
			"server CPU µs/request $(awk -v r="$rate" -v k="$k" '$1==r && $2==k{print $6}' "$dir/rows" | med %.2f)," \
			"system calls/request $(awk -v r="$rate" -v k="$k" '$1==r && $2==k{print $7}' "$dir/rows" | med %.2f)"
	done
	awk -v r="$rate" -v n="$rounds" '$1==r && $2==0{a99[++i]=$4; a999[i]=$5} $1==r && $2==1{b99[++j]=$4}
		END{for (x = 1; x <= i; x++) {p += (a99[x] <= b99[x]); q += (a999[x] <= 2 * b99[x])}
		printf "  %s: A p99 <= B p99 in %d of %d rounds; A p99.9 <= 2x B p99 in %d of %d\n", r, p, n, q, n}' "$dir/rows"
	for k in 0 1; do
		awk -v r="$rate" -v k="$k" -v name="${names[$k]}" '$1==r && $2==k && $5 > 10 {n++; if ($8 == "n/a") u++; else if ($8 > 0) b++}
			END{printf "  %s %s: %d runs with p99.9 over 10 ms, %d of them with a host steal burst (20 ms or more of a CPU in 100 ms), %d without a figure\n", r, name, n, b, u}' "$dir/rows"
	done
done
