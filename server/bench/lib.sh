# lib.sh: what the scripts of server/bench share; sourced, not run.

# waitport PORT: until a TCP connect to 127.0.0.1:PORT succeeds (at most 10 s).
waitport() {
	for _ in $(seq 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	echo "nothing listens on port $1 after 10 s" >&2
	return 1
}

# scratch: a temporary directory ($dir) and the list of started processes
# ($pids); on exit every process in it is stopped and the directory removed.
scratch() {
	dir=$(mktemp -d)
	pids=()
	trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$dir"' EXIT
}

# perfserve EVENTS PORT CPU CMD...: start CMD (a server listening on PORT) under perf stat
# counting EVENTS, perf itself on CPU, the count off until "perfctl enable"; waits for PORT.
# Sets $perfpid (perf) and $srv (the server, perf's child; both added to $pids) and opens fds 7
# and 8 on perf's control and acknowledgement fifos; perf writes the count to $dir/stat.csv
# when the server has exited. The server's output goes to $dir/server.log.
perfserve() {
	local events=$1 port=$2 cpu=$3
	shift 3
	rm -f "$dir/ctl" "$dir/ack" "$dir/stat.csv"
	mkfifo "$dir/ctl" "$dir/ack"
	taskset -c "$cpu" perf stat -x, -e "$events" -D -1 --control "fifo:$dir/ctl,$dir/ack" \
		-o "$dir/stat.csv" -- "$@" >"$dir/server.log" 2>&1 &
	perfpid=$!
	pids+=("$perfpid")
	exec 7<>"$dir/ctl" 8<>"$dir/ack"
	waitport "$port" || { cat "$dir/server.log" >&2; exit 1; }
	srv=$(pgrep -P "$perfpid" | head -1)
	[ -n "$srv" ] || { echo "$0: no server process under perf stat ($perfpid)" >&2; exit 1; }
	pids+=("$srv")
}

# perfctl CMD: send perf stat CMD (enable, disable) and wait for its acknowledgement.
perfctl() {
	local ack=""
	echo "$1" >&7
	read -t 10 -r ack <&8 || true
	[ "$ack" = ack ] || { echo "$0: perf stat did not acknowledge $1 in 10 s" >&2; exit 1; }
}

# ticks PID: the CPU time of process PID so far (utime + stime, clock ticks).
ticks() { awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$1/stat"; }
