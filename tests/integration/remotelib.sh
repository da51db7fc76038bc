# Helpers for the remote-image tests (sourced after lib.sh, bash): a
# Debian nginx on 127.0.0.1 serving $T/www over HTTP and HTTPS (with a
# self-signed certificate made here), stopped by the EXIT trap before
# lib.sh's cleanup unmounts and checks the daemons.

declare -a REMOTE_PIDS=()

remote_stop() {
	local p
	for p in "${REMOTE_PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	REMOTE_PIDS=()
}
# set +e: a failing (exit $rc) must not end the trap before the cleanup.
trap 'rc=$?; set +e; remote_stop; (exit $rc); czfs_cleanup' EXIT

# free_port: a TCP port of 127.0.0.1 nobody listens on now.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_port PORT: until something accepts connections there (60 s, a
# hang guard: a loaded machine starts a server slowly).
wait_port() {
	local i
	for i in $(seq 1 600); do
		python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "nothing listens on port $1"
}

# nginx_start: serve $T/www; sets HTTP_PORT, HTTPS_PORT and CERT (the
# certificate to trust).  Access log in $T/nginx/access.log.
nginx_start() {
	local n=$T/nginx
	command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] ||
		fail "nginx is missing (scripts/install-deps test)"
	mkdir -p "$n/tmp" "$T/www"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
		-addext subjectAltName=IP:127.0.0.1 -keyout "$n/key.pem" \
		-out "$n/cert.pem" 2>/dev/null || fail "openssl could not make a certificate"
	CERT=$n/cert.pem
	HTTP_PORT=$(free_port)
	HTTPS_PORT=$(free_port)
	cat >"$n/nginx.conf" <<EOC
user root;
worker_processes 2;
pid $n/nginx.pid;
error_log $n/error.log;
events { worker_connections 256; }
http {
	access_log $n/access.log;
	client_body_temp_path $n/tmp;
	proxy_temp_path $n/tmp;
	fastcgi_temp_path $n/tmp;
	uwsgi_temp_path $n/tmp;
	scgi_temp_path $n/tmp;
	types { }
	default_type application/octet-stream;
	server {
		listen 127.0.0.1:$HTTP_PORT;
		listen 127.0.0.1:$HTTPS_PORT ssl http2;
		ssl_certificate $n/cert.pem;
		ssl_certificate_key $n/key.pem;
		root $T/www;
	}
}
EOC
	PATH=$PATH:/usr/sbin nginx -p "$n" -c "$n/nginx.conf" -g 'daemon off;' \
		2>"$n/stderr" &
	REMOTE_PIDS+=($!)
	wait_port "$HTTP_PORT"
	wait_port "$HTTPS_PORT"
}

# requests: how many GETs nginx has logged so far (the HEAD of each
# open is not counted).
requests() {
	grep -c '"GET ' "$T/nginx/access.log" || true
}

# proxy_start: the fault-injection proxy (faultproxy.py) in front of
# nginx's HTTP port; sets PROXY_PORT.  proxy_mode MODE... sets what it
# does next; proxy_count MODE: how many requests it has met so.
proxy_start() {
	PROXY_PORT=$(free_port)
	echo pass >"$T/proxy.mode"
	: >"$T/proxy.log"
	python3 "$top_srcdir/tests/integration/faultproxy.py" "$PROXY_PORT" \
		"$HTTP_PORT" "$T/proxy.mode" "$T/proxy.log" 2>"$T/proxy.err" &
	REMOTE_PIDS+=($!)
	wait_port "$PROXY_PORT"
}

# A rename, not a rewrite in place: the proxy reads the file whenever it
# likes, and one read between the truncation and the write saw no mode,
# so a held request went on as "pass" and a read meant to fail succeeded.
proxy_mode() {
	echo "$*" >"$T/proxy.mode.new"
	mv -f "$T/proxy.mode.new" "$T/proxy.mode"
}

proxy_count() {
	grep -c "^$1 " "$T/proxy.log" || true
}

# s3_start ROOT REGION ACCESS_KEY SECRET [TOKEN]: the SigV4-checking S3
# server (s3server.py) over ROOT; sets S3_PORT.  Its log: $T/s3.log.
s3_start() {
	S3_PORT=$(free_port)
	: >"$T/s3.log"
	python3 "$top_srcdir/tests/integration/s3server.py" "$S3_PORT" "$@" \
		"$T/s3.log" 2>>"$T/s3.err" &
	REMOTE_PIDS+=($!)
	wait_port "$S3_PORT"
}

# stat_of MNT NAME: one counter of czfs-stat MNT.
stat_of() {
	czfs_counter "$1" "$2"
}
