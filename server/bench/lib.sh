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
