# OpenStack Swift with its s3api middleware (Debian's swift-proxy,
# -object, -container and -account) on 127.0.0.1: one node, one device,
# tempauth keys, SigV4.  Sourced (bash) by tests/integration/remote_swift.sh
# and bench/remote-s3; the caller stops it (swift_stop) in its EXIT trap.
#
#   swift_start DIR    rings and configurations in DIR, the four servers
#                      started; sets SWIFT_PORT (the proxy), SWIFT_PIDS, and
#                      exports AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
#                      AWS_REGION for its one account.  Returns 1, with a
#                      line on stderr, when the proxy does not answer.
#   swift_put PATH [curl args]
#                      a signed PUT of PATH (/bucket or /bucket/key; -T FILE
#                      for a body): returns 1, with the answer, unless 200.
#   swift_stop         kill the servers.

declare -a SWIFT_PIDS=()
SWIFT_REGION=czfs-swift-1
SWIFT_SECRET=s3cr3tswift

swift_stop() {
	local p
	for p in "${SWIFT_PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	SWIFT_PIDS=()
}

swift_start() {
	local d=$1 sp svc p i py=/usr/bin/python3
	SWIFT_DIR=$d
	mkdir -p "$d/node/d1"
	command -v swift-ring-builder >/dev/null ||
		{ echo "swift is missing (scripts/install-deps test)" >&2; return 1; }
	SWIFT_PORT=$($py -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	# The storage servers' ports: free ones, not Swift's fixed 6200s.
	for svc in object container account; do
		p=$($py -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
		swift-ring-builder "$d/$svc.builder" create 6 1 1 >/dev/null
		swift-ring-builder "$d/$svc.builder" add "r1z1-127.0.0.1:$p/d1" 100 >/dev/null
		swift-ring-builder "$d/$svc.builder" rebalance >/dev/null || true
		cat >"$d/$svc-server.conf" <<EOC
[DEFAULT]
user = root
devices = $d/node
mount_check = false
bind_ip = 127.0.0.1
bind_port = $p
swift_dir = $d
workers = 1
log_facility = LOG_LOCAL0
[pipeline:main]
pipeline = $svc-server
[app:$svc-server]
use = egg:swift#$svc
EOC
	done
	cat >"$d/proxy-server.conf" <<EOC
[DEFAULT]
user = root
bind_ip = 127.0.0.1
bind_port = $SWIFT_PORT
swift_dir = $d
workers = 1
[pipeline:main]
pipeline = catch_errors gatekeeper proxy-logging cache listing_formats s3api tempauth proxy-logging proxy-server
[app:proxy-server]
use = egg:swift#proxy
account_autocreate = true
[filter:catch_errors]
use = egg:swift#catch_errors
[filter:gatekeeper]
use = egg:swift#gatekeeper
[filter:proxy-logging]
use = egg:swift#proxy_logging
[filter:cache]
use = egg:swift#memcache
[filter:listing_formats]
use = egg:swift#listing_formats
[filter:s3api]
use = egg:swift#s3api
location = $SWIFT_REGION
storage_domain = localhost
[filter:tempauth]
use = egg:swift#tempauth
user_czfs_swift = $SWIFT_SECRET .admin
EOC
	for svc in object container account proxy; do
		$py "/usr/bin/swift-$svc-server" "$d/$svc-server.conf" -v >"$d/$svc.log" 2>&1 &
		SWIFT_PIDS+=($!)
	done
	export AWS_ACCESS_KEY_ID=czfs:swift AWS_SECRET_ACCESS_KEY=$SWIFT_SECRET
	export AWS_REGION=$SWIFT_REGION
	# The servers take a few seconds to listen; the account must answer
	# a signed request before the first PUT may go (120 s, a hang guard).
	for i in $(seq 1 600); do
		[ "$(swift_curl /)" = 200 ] && return 0
		sleep 0.2
	done
	echo "swift's proxy on port $SWIFT_PORT does not answer: $(tail -3 "$d/proxy.log")" >&2
	return 1
}

# swift_curl PATH [curl args]: a signed request, its body to
# $SWIFT_DIR/curl.out; prints the HTTP status.  s3api wants the payload
# hash header, which curl 7.88 does not add; the key's ':' is written %3A
# in the URL (--user would split there).
swift_curl() {
	local path=$1
	shift
	curl -s --aws-sigv4 "aws:amz:$SWIFT_REGION:s3" \
		-H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
		-o "$SWIFT_DIR/curl.out" -w '%{http_code}' "$@" \
		"http://czfs%3Aswift:$SWIFT_SECRET@127.0.0.1:$SWIFT_PORT$path"
}

swift_put() {
	local path=$1 code
	shift
	code=$(swift_curl "$path" -X PUT "$@")
	[ "$code" = 200 ] && return 0
	echo "PUT $path: HTTP $code: $(cat "$SWIFT_DIR/curl.out")" >&2
	return 1
}
