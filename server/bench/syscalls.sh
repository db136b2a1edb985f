#!/usr/bin/env bash
# syscalls.sh: where a server's system calls go, by type, per request: spindle serve
# configurations side by side, interleaved round by round (issue 25's question about
# /queries?queries=20). Each side runs alone on the server CPU (SRV_CPU, default 1), the load
# generator (1 thread, CONNS connections, default 16, closed loop) on LG_CPU (default 0). The
# server runs under perf stat counting raw_syscalls:sys_enter, syscalls:sys_enter_NAME for each
# NAME in CALLS (a default list below) and context switches, the count on only for the
# measured SECONDS after a 2 s warm-up; the requests of that window are read from the server's
# /metrics (spindle_server_requests_total on the admin port, PORT+1), and the server's CPU time
# from /proc. Every figure is per request, divided further by PER (default 1; 20 for
# /queries?queries=20 gives figures per query), the CPU per request as it is.
#
# Sides are LABEL=BIN:MODE (spindle serve's binary and --mode); SERVE_ARGS go to every side,
# e.g. "--app tfb --db postgres://..."; TARGET (default /health) is the path asked for. A round
# runs the sides in turn, reversed in even rounds. Prints a line per run, then per side the
# median (min-max) over the rounds of each count. Needs perf with access to tracefs, taskset and curl;
# loopback only (ports PORT and PORT+1, default 18580); every process it starts is stopped on
# exit. Run from the repo root:
#
#   DB='postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable'
#   TARGET='/queries?queries=20' PER=20 SERVE_ARGS="--app tfb --db $DB" server/bench/syscalls.sh \
#     3 4 before=/tmp/spindle-base:nethttp-carrier after=/tmp/spindle:nethttp-carrier nethttp=/tmp/spindle:nethttp
set -euo pipefail
if [ $# -lt 3 ]; then
	echo "usage: $0 ROUNDS SECONDS LABEL=BIN:MODE..." >&2
	exit 2
fi
rounds=$1 secs=$2
shift 2
case "$rounds$secs" in *[!0-9]* | "") echo "$0: ROUNDS and SECONDS are whole numbers" >&2; exit 2 ;; esac
srv_cpu=${SRV_CPU:-1} lg_cpu=${LG_CPU:-0} port=${PORT:-18580} target=${TARGET:-/health}
conns=${CONNS:-16} per=${PER:-1}
calls=${CALLS:-read write readv writev recvfrom sendto recvmsg sendmsg epoll_pwait epoll_pwait2 epoll_wait epoll_ctl
futex nanosleep clock_nanosleep timerfd_settime sched_yield tgkill getpid gettid fcntl sched_setaffinity openat close prctl
rt_sigreturn madvise mmap munmap io_uring_enter accept4 connect}
labels=() bins=() modes=()
for s in "$@"; do
	label=${s%%=*} rest=${s#*=}
	bin=${rest%%:*} mode=${rest#*:}
	if [ "$label" = "$s" ] || [ "$bin" = "$rest" ] || [ -z "$label" ] || [ -z "$mode" ]; then
		echo "$0: side $s: want LABEL=BIN:MODE" >&2
		exit 2
	fi
	[ -x "$bin" ] || { echo "$0: $bin is not an executable" >&2; exit 2; }
	labels+=("$label") bins+=("$bin") modes+=("$mode")
done
for c in taskset curl perf; do
	command -v "$c" >/dev/null || { echo "skip: $c is not installed" >&2; exit 0; }
done
# A call this kernel has no tracepoint for (epoll_pwait2 before 5.11) is left out.
tracefs=/sys/kernel/tracing
[ -d "$tracefs/events/syscalls" ] || tracefs=/sys/kernel/debug/tracing
events=raw_syscalls:sys_enter,context-switches
for c in $calls; do
	[ -d "$tracefs/events/syscalls/sys_enter_$c" ] && events+=",syscalls:sys_enter_$c"
done
if ! probe=$(perf stat -x, -e raw_syscalls:sys_enter -- true 2>&1) || ! grep -q '^[0-9]*,,raw_syscalls:sys_enter,' <<<"$probe"; then
	echo "skip: perf cannot count raw_syscalls:sys_enter: $(sed -n 's/^Error:[[:space:]]*//p' <<<"$probe" | head -1)" >&2
	exit 0
fi
read -r -a serve_args <<<"${SERVE_ARGS:-}"
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
scratch
adm=$((port + 1))

# requests: the server's responses so far (its /metrics).
requests() { curl -s "http://127.0.0.1:$adm/metrics" | awk '/^spindle_server_requests_total/ {s += $2} END {print s + 0}'; }
# run K R: side K's run in round R; appends "LABEL NAME FIGURE" lines to $dir/rows.
run() {
	local k=$1 r=$2 lp r0 r1 t0 t1 n
	perfserve "$events" "$port" "$lg_cpu" taskset -c "$srv_cpu" "${bins[$k]}" serve --mode "${modes[$k]}" \
		--threads 1 --port "$port" --admin-port "$adm" "${serve_args[@]}"
	taskset -c "$lg_cpu" "${bins[0]}" load -t1 -c"$conns" -d"$((secs + 4))s" "http://127.0.0.1:$port$target" >/dev/null 2>"$dir/load.err" &
	lp=$!
	pids+=("$lp")
	sleep 2
	r0=$(requests) t0=$(ticks "$srv")
	perfctl enable
	sleep "$secs"
	perfctl disable
	t1=$(ticks "$srv") r1=$(requests)
	wait "$lp" || { cat "$dir/load.err" >&2; exit 1; }
	kill "$srv"
	wait "$perfpid" 2>/dev/null || true # perf writes its count when the server has exited
	exec 7>&- 8>&-
	pids=()
	n=$((r1 - r0))
	[ "$n" -gt 0 ] || { echo "$0: ${labels[$k]} answered no request in the window" >&2; exit 1; }
	{
		awk -v l="${labels[$k]}" -v n="$n" -v s="$secs" 'BEGIN{printf "%s requests/s %.0f\n", l, n / s}'
		awk -v l="${labels[$k]}" -v t="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" -v n="$n" \
			'BEGIN{printf "%s server_CPU_µs/request %.1f\n", l, t * 1e6 / hz / n}'
		awk -F, -v l="${labels[$k]}" -v n="$n" -v per="$per" '$1 ~ /^[0-9]+$/ {
			name = $3; sub(/^syscalls:sys_enter_/, "", name); sub(/^raw_syscalls:sys_enter$/, "all_system_calls", name)
			printf "%s %s %.4f\n", l, name, $1 / n / per }' "$dir/stat.csv"
	} >"$dir/run"
	cat "$dir/run" >>"$dir/rows"
	awk -v r="$r" -v l="${labels[$k]}" -v per="$per" '{v[$2] = $3} END {
		printf "round %d: %s %.0f req/s, server CPU %.1f µs/request, %.3f system calls and %.3f context switches per request/%s\n",
			r, l, v["requests/s"], v["server_CPU_µs/request"], v["all_system_calls"], v["context-switches"], per}' "$dir/run"
}

for r in $(seq "$rounds"); do
	order=$(seq 0 $((${#labels[@]} - 1)))
	[ $((r % 2)) -eq 0 ] && order=$(seq $((${#labels[@]} - 1)) -1 0)
	for k in $order; do
		run "$k" "$r"
	done
done

echo "summary over $rounds rounds, ${secs} s windows, TARGET $target, figures per request / $per (CPU per request):"
printf '%-26s' "" && printf ' %-24s' "${labels[@]}" && echo
awk '{print $2}' "$dir/rows" | awk '!seen[$0]++' | while read -r name; do
	line=$(printf '%-26s' "$name")
	any=0
	for l in "${labels[@]}"; do
		cell=$(awk -v l="$l" -v m="$name" '$1 == l && $2 == m {print $3}' "$dir/rows" | sort -g | awk '
			{v[NR] = $1} END {if (NR == 0) {print "-"; exit}
			m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			f = (v[NR] >= 10) ? "%.1f" : "%.3f"
			printf f " (" f "-" f ")\n", m, v[1], v[NR]}')
		case "$cell" in "0.000 (0.000-0.000)" | -) ;; *) any=1 ;; esac
		line+=$(printf ' %-24s' "$cell")
	done
	[ "$any" = 1 ] && echo "$line"
done
