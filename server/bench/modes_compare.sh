#!/usr/bin/env bash
# modes_compare.sh: issue 4's benchmark. One server thread on CPU 1, the mock (1 carrier) and
# the load generator (spindle load, closed loop, 1 thread, 100 connections) on CPU 0. Per round,
# interleaved: nethttp, handoff, carrier on /fruits with mock think time 0, then the same with
# think time 1ms, then /health on carrier mode and on nginx (1 worker, "return 200"), same CPUs.
# Prints every run (req/s and the server's CPU µs per request from /proc/PID/stat) and the
# median, min and max of the per-round ratios. Needs nginx and taskset; run from the repo root:
#
#   server/bench/modes_compare.sh [ROUNDS] [SECONDS]
#
# Loopback only; every process it starts is stopped on exit.
set -euo pipefail
rounds=${1:-5}
secs=${2:-3}
srv_cpu=${SRV_CPU:-1}
lg_cpu=${LG_CPU:-0}
for tool in nginx taskset; do
	command -v "$tool" >/dev/null || { echo "skip: $tool is not installed" >&2; exit 0; }
done
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
scratch
go build -o "$dir/spindle" ./cmd/spindle
S="$dir/spindle"
mkdir -p "$dir/logs"
cat >"$dir/nginx.conf" <<CONF
worker_processes 1;
error_log $dir/logs/error.log;
pid $dir/nginx.pid;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $dir; proxy_temp_path $dir; fastcgi_temp_path $dir; uwsgi_temp_path $dir; scgi_temp_path $dir;
  server { listen 127.0.0.1:18095; location / { return 200 "OK"; } }
}
CONF

# cputicks PID: utime+stime of a process tree's main process in clock ticks.
cputicks() { awk '{print $14+$15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

# measure NAME PID URL: warm up 1s, then a closed-loop run; prints "NAME req/s us/req".
measure() {
	local name=$1 pid=$2 url=$3
	taskset -c "$lg_cpu" "$S" load -t1 -c100 -d1s "$url" >/dev/null
	local t0; t0=$(cputicks "$pid")
	taskset -c "$lg_cpu" "$S" load -t1 -c100 -d"${secs}s" --json "$dir/r.json" "$url" >/dev/null
	local t1; t1=$(cputicks "$pid")
	local rps n
	rps=$(grep -o '"achieved_rate": *[0-9.e+]*' "$dir/r.json" | head -1 | sed 's/.*: *//')
	n=$(grep -o '"completed": *[0-9]*' "$dir/r.json" | head -1 | sed 's/.*: *//')
	awk -v nm="$name" -v r="$rps" -v d=$((t1 - t0)) -v n="$n" -v hz="$hz" 'BEGIN{printf "%s %.0f %.1f\n", nm, r, d/hz*1e6/n}'
}

# start_bg CMD...: starts a background process, records its pid, waits for "listening on".
start_srv() {
	local log=$1; shift
	"$@" >"$log" 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do grep -q "listening on" "$log" && return 0; sleep 0.05; done
	echo "did not start: $*" >&2; cat "$log" >&2; exit 1
}

out="$dir/results.txt"
: >"$out"
for r in $(seq "$rounds"); do
	for think in 0 1ms; do
		start_srv "$dir/mock.log" taskset -c "$lg_cpu" "$S" mock --port 18180 --think-time "$think" --threads 1 --cpuset "$lg_cpu"
		mockpid=${pids[-1]}
		for mode in nethttp handoff carrier; do
			start_srv "$dir/srv.log" taskset -c "$srv_cpu" "$S" serve --mode "$mode" --threads 1 --cpuset "$srv_cpu" --port 18181 --backend http://127.0.0.1:18180/fruits
			srvpid=${pids[-1]}
			echo "$r think=$think $(measure "$mode" "$srvpid" http://127.0.0.1:18181/fruits)" | tee -a "$out"
			kill "$srvpid"; wait "$srvpid" 2>/dev/null || true
		done
		kill "$mockpid"; wait "$mockpid" 2>/dev/null || true
	done
	start_srv "$dir/srv.log" taskset -c "$srv_cpu" "$S" serve --mode carrier --threads 1 --cpuset "$srv_cpu" --port 18181 --backend http://127.0.0.1:18180/fruits
	srvpid=${pids[-1]}
	echo "$r health $(measure carrier "$srvpid" http://127.0.0.1:18181/health)" | tee -a "$out"
	kill "$srvpid"; wait "$srvpid" 2>/dev/null || true
	taskset -c "$srv_cpu" nginx -p "$dir" -c "$dir/nginx.conf" -g 'daemon off;' &
	ngx=$!; pids+=($ngx); sleep 0.3
	wpid=$(pgrep -P "$ngx" | head -1)
	echo "$r health $(measure nginx "$wpid" http://127.0.0.1:18095/)" | tee -a "$out"
	kill "$ngx"; wait "$ngx" 2>/dev/null || true
done

# ratio A B KEY: per-round ratio of A's to B's req/s (field 4) or µs/req (field 5) for rows KEY.
summary() {
	awk -v a="$1" -v b="$2" -v k="$3" -v f="$4" -v label="$5" '
	$2 == k && $3 == a { va[$1] = $f } $2 == k && $3 == b { vb[$1] = $f }
	END {
		n = 0; for (r in va) if (r in vb && vb[r] > 0) x[++n] = va[r] / vb[r]
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
		med = (n % 2) ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
		printf "%-44s median %.3f (min %.3f, max %.3f, n=%d)\n", label, med, x[1], x[n], n
	}' "$out"
}
echo
summary carrier nethttp think=0 4 "req/s carrier/nethttp, think 0:"
summary handoff nethttp think=0 4 "req/s handoff/nethttp, think 0:"
summary nethttp carrier think=0 5 "CPU/request nethttp/carrier, think 0:"
summary carrier nethttp think=1ms 4 "req/s carrier/nethttp, think 1ms:"
summary handoff nethttp think=1ms 4 "req/s handoff/nethttp, think 1ms:"
summary nethttp carrier think=1ms 5 "CPU/request nethttp/carrier, think 1ms:"
summary carrier nginx health 4 "req/s /health carrier/nginx:"
summary nginx carrier health 5 "CPU/request /health nginx/carrier:"
