#!/usr/bin/env bash
# wrk_compare.sh: spindle load against wrk, interleaved (wrk, spindle, wrk,
# spindle, ...), closed loop, 1 thread, 100 connections, the load generator on
# CPU 0 and nginx (1 worker, "return 200") on CPU 1; then spindle load at a
# fixed rate of 20,000 requests/s. Prints each round and the median, min and
# max of the ratios. Needs wrk, nginx and /usr/bin/time; run from the
# repository root:
#
#   load/bench/wrk_compare.sh [ROUNDS] [SECONDS]
#   SCHEME=https load/bench/wrk_compare.sh [ROUNDS] [SECONDS]
#
# With SCHEME=https nginx serves TLS (1.2 and 1.3) with a self-signed ECDSA
# P-256 certificate made here with openssl, wrk and spindle (-k) keep their
# connections (one handshake each), and the figures compare the two over
# HTTPS; run it with and without SCHEME=https to see what TLS costs each.
#
# Loopback only: nginx listens on 127.0.0.1 at an unprivileged port.
set -euo pipefail

rounds=${1:-5}
secs=${2:-5}
port=${PORT:-18090}
scheme=${SCHEME:-http}
lg_cpu=${LG_CPU:-0}
srv_cpu=${SRV_CPU:-1}

tools="wrk nginx /usr/bin/time taskset"
case $scheme in
http) ;;
https) tools="$tools openssl" ;;
*) echo "SCHEME must be http or https, not $scheme" >&2; exit 2 ;;
esac
for tool in $tools; do
	command -v "$tool" >/dev/null || { echo "skip: $tool is not installed" >&2; exit 0; }
done

dir=$(mktemp -d)
trap 'kill "$ngx_pid" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT
go build -o "$dir/spindle" ./cmd/spindle

mkdir -p "$dir/logs"
listen="listen 127.0.0.1:$port;"
insecure=()
if [ "$scheme" = https ]; then
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
		-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
		-keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null
	listen="listen 127.0.0.1:$port ssl;
        ssl_certificate $dir/cert.pem;
        ssl_certificate_key $dir/key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;"
	insecure=(-k)
fi
cat >"$dir/nginx.conf" <<CONF
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/logs/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 100000000;
    server {
        $listen
        location / { return 200; }
    }
}
CONF
taskset -c "$srv_cpu" nginx -p "$dir" -c "$dir/nginx.conf" -g 'daemon off;' &
ngx_pid=$!
url=$scheme://127.0.0.1:$port/
for _ in $(seq 50); do
	if curl -s -k -o /dev/null "$url" 2>/dev/null || "$dir/spindle" load "${insecure[@]}" -t1 -c1 -d 50ms "$url" >/dev/null 2>&1; then break; fi
	sleep 0.1
done

# run TOOL ARGS...: prints "requests req_per_s cpu_seconds"
run() {
	local out
	out=$(taskset -c "$lg_cpu" /usr/bin/time -v "$@" 2>&1)
	awk '
		/ requests in / { n = $1 }
		/^Requests\/sec:/ { r = $2 }
		/User time \(seconds\)/ { u = $4 }
		/System time \(seconds\)/ { s = $4 }
		END { printf "%d %.2f %.2f\n", n, r, u + s }' <<<"$out"
}

echo "machine: $(nproc) CPUs, $(uname -r); load generator on CPU $lg_cpu, nginx on CPU $srv_cpu; ${secs}s per run; $scheme"
echo "round  wrk_req/s  spindle_req/s  ratio  wrk_us/req  spindle_us/req  cpu_ratio"
ratios=(); cpus=()
for i in $(seq "$rounds"); do
	read -r wn wr wc < <(run wrk -t1 -c100 -d"${secs}s" "$url")
	read -r sn sr sc < <(run "$dir/spindle" load "${insecure[@]}" -t1 -c100 -d"${secs}s" "$url")
	ratio=$(awk -v a="$sr" -v b="$wr" 'BEGIN { printf "%.3f", a / b }')
	wu=$(awk -v c="$wc" -v n="$wn" 'BEGIN { printf "%.2f", c * 1e6 / n }')
	su=$(awk -v c="$sc" -v n="$sn" 'BEGIN { printf "%.2f", c * 1e6 / n }')
	cr=$(awk -v a="$su" -v b="$wu" 'BEGIN { printf "%.3f", a / b }')
	printf "%5d  %9s  %13s  %5s  %10s  %14s  %9s\n" "$i" "$wr" "$sr" "$ratio" "$wu" "$su" "$cr"
	ratios+=("$ratio"); cpus+=("$cr")
done
summary() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "median %.3f (min %.3f, max %.3f, n=%d)\n", m, v[1], v[NR], NR }'; }
echo "req/s ratio spindle/wrk:       $(summary "${ratios[@]}")"
echo "CPU per request spindle/wrk:   $(summary "${cpus[@]}")"

echo "fixed rate 20000 req/s (spindle load -t1 -c100 -R20000):"
acc=()
for i in $(seq "$rounds"); do
	json="$dir/rate$i.json"
	taskset -c "$lg_cpu" "$dir/spindle" load "${insecure[@]}" -t1 -c100 -R20000 -d"${secs}s" --warmup 1s --json "$json" "$url" >/dev/null
	a=$(awk -F': ' '/"achieved_rate"/ { gsub(",", "", $2); printf "%.4f", $2 / 20000 }' "$json")
	p99=$(awk -F': ' '/"99":/ { gsub(",", "", $2); print $2; exit }' "$json")
	echo "  round $i: achieved/target $a, corrected p99 ${p99}us"
	acc+=("$a")
done
echo "achieved/target at 20000 req/s: $(summary "${acc[@]}")"
