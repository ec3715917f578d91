# SPDX-License-Identifier: Apache-2.0
# Sourced by tests/tuner/history.sh and bench/ingest: a temporary PostgreSQL 15 server from
# Debian's binaries, on a unix socket in a directory of the caller's, no TCP; run as the
# postgres user when the caller is root (the server refuses root). Trust authentication for
# the superuser "tuner": only the socket's directory (0755 under the caller's 0700 tmp dir
# at most) gives access, and the server lives as long as the test.
#
#   pg_missing            prints the missing binary and returns 0 when one is missing
#   pg_start DIR [FSYNC]  initdb and start in DIR/pg (DIR exists, 0755); FSYNC on|off
#                         (default off); sets pg_sock and pg_port; 1 with the log on failure
#   pg_stop               stops it (immediate; harmless when not started)
#   pg_psql ARGS...       psql as tuner over the socket
#   pg_url DB             the postgresql:// URL of database DB
pg_bin=/usr/lib/postgresql/15/bin
pg_started=

pg_missing() {
	for b in initdb pg_ctl postgres psql; do
		if [ ! -x "$pg_bin/$b" ]; then
			echo "$pg_bin/$b"
			return 0
		fi
	done
	return 1
}

pg_as() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

pg_start() {
	pg_dir=$1/pg
	pg_sock=$pg_dir/sock
	if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
		echo "running as root and there is no postgres user to run the server" >&2
		return 1
	fi
	mkdir "$pg_dir" "$pg_dir/data" "$pg_sock" || return 1
	if [ "$(id -u)" = 0 ]; then chown postgres "$pg_dir" "$pg_dir/data" "$pg_sock"; fi
	pg_as "$pg_bin/initdb" -D "$pg_dir/data" -U tuner -A trust --no-sync -E UTF8 \
		>"$1/initdb.log" 2>&1 || { cat "$1/initdb.log" >&2; return 1; }
	pg_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	# no TCP: the port only names the socket
	pg_as "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/log" -w -t 60 \
		-o "-k $pg_sock -p $pg_port -c listen_addresses= -c fsync=${2:-off}" start >/dev/null ||
		{ pg_as cat "$pg_dir/log" >&2; return 1; }
	pg_started=1
}

pg_stop() {
	if [ -n "$pg_started" ]; then
		pg_as "$pg_bin/pg_ctl" -D "$pg_dir/data" -m immediate -w stop >/dev/null 2>&1 || true
		pg_started=
	fi
}

pg_psql() {
	"$pg_bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$pg_sock" -p "$pg_port" -U tuner "$@"
}

pg_url() {
	echo "postgresql://tuner@/$1?host=$pg_sock&port=$pg_port"
}
