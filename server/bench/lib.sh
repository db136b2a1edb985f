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
