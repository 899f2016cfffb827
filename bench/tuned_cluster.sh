# Sourced by the PostgreSQL-only benchmarks (bench/storage_bench.sh, bench/compression_bench.sh):
# a fresh cluster under $work/pgdata with the settings skydb derives for this host, its socket
# in $work, running as $user, stopped (and $work removed) when the script exits.
# Needs: $bin (PostgreSQL's binaries), $build (a build with src/skydb), $user, $work (0755,
# owned by $user). Defines as_user.
as_user() { runuser -u "$user" -- "$@"; }
cleanup() { as_user "$bin/pg_ctl" -D "$work/pgdata" -m fast -w stop >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
as_user "$bin/initdb" -D "$work/pgdata" -E UTF8 --locale=C --auth=trust >/dev/null
"$build/src/skydb" tune --format conf > "$work/pgdata/skydb.conf"
chown "$user" "$work/pgdata/skydb.conf"
printf "include = 'skydb.conf'\nunix_socket_directories = '%s'\n" "$work" >> "$work/pgdata/postgresql.conf"
as_user "$bin/pg_ctl" -D "$work/pgdata" -l "$work/log" -w start >/dev/null
