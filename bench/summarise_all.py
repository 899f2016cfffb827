#!/usr/bin/env python3
"""Prints the table of one bench/run_all.sh run from its .jsonl: conditions first, then per disk
model and value model the medians and ranges over the valid repeats of every arm, the ratios to the naive store
and to redis-server, then memory and startup. Invalid runs are listed with their reasons and
never enter a median. Usage: summarise_all.py bench/results/all-<timestamp>.jsonl"""
import json
import statistics
import sys

ARMS = ["tiered-sync", "tiered-sync-pglz", "tiered-sync-lz4", "tiered-async", "memory",
        "redis-always", "redis-everysec", "naive"]
# The anchor each arm is compared with on the "vs redis" column: durable with durable.
REDIS_OF = {"tiered-sync": "redis-always", "tiered-sync-pglz": "redis-always",
            "tiered-sync-lz4": "redis-always", "naive": "redis-always", "redis-always": "redis-always",
            "tiered-async": "redis-everysec", "redis-everysec": "redis-everysec",
            "memory": "redis-everysec"}


def med_range(values, fmt="{:,.0f}"):
    if not values:
        return "—"
    m = statistics.median(values)
    if len(values) == 1:
        return fmt.format(m) + " (n=1)"
    return f"{fmt.format(m)} ({fmt.format(min(values))}–{fmt.format(max(values))}, n={len(values)})"


def ratio(a, b):
    return f"{a / b:.2f}×" if a and b else "—"


def threads_of(run):
    """The generator's load threads for one run (files before --threads existed ran one)."""
    return run.get("conditions", {}).get("threads", 1)


def values_of(r):
    """The value model of one load line (files before --values existed wrote 2,080 bytes)."""
    return r.get("values", "2080")


def wal_per_write(r):
    """WAL bytes per acknowledged write over the whole run (PostgreSQL arms), or None. Not for
    the redis arms: aof_current_size (kept in the raw line as aof_bytes) shrinks at every
    automatic AOF rewrite, so its growth is not the bytes redis-server wrote."""
    writes = (r["run"].get("checks") or {}).get("run_writes")
    if not writes or r.get("wal_bytes") is None or r.get("wal_bytes_before") is None:
        return None
    return (r["wal_bytes"] - r["wal_bytes_before"]) / writes


def main(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    cond = next((r for r in rows if r.get("phase") == "conditions"), {})
    end = next((r for r in rows if r.get("phase") == "end"), {})
    loads = [r for r in rows if r.get("phase") == "load"]
    forced = cond.get("forced") or any(r.get("forced_above_load") for r in loads)
    if forced:
        print("!! FORCED RUN ABOVE THE LOAD THRESHOLD: these figures are NOT results !!\n")
    print("conditions:", json.dumps({k: v for k, v in cond.items() if k != "phase"}))
    print("load at the end:", end.get("load_end", "?"))

    invalid = [r for r in loads if not r["run"].get("valid")]
    models = cond.get("values", ["2080"])
    for disk, model in [(d, m) for d in cond.get("disks", ["native", "slow"]) for m in models]:
        closed = {a: [] for a in ARMS}
        half = {a: [] for a in ARMS}
        threads = {a: set() for a in ARMS}
        for r in loads:
            if r["disk"] != disk or values_of(r) != model or not r["run"].get("valid"):
                continue
            result = dict(r["run"]["result"])
            result["wal_per_write"] = wal_per_write(r)
            result["foreign_cores"] = r["run"]["checks"].get("foreign_cpu_cores")
            busy = r["run"]["checks"].get("machine_busy_cores")
            cores = r["run"].get("conditions", {}).get("cores_available")
            if busy is not None and cores:
                result["machine_busy_fraction"] = busy / cores
            (closed if r["loop"] == "closed" else half)[r["arm"]].append(result)
            threads[r["arm"]].add(threads_of(r["run"]))
        if not any(closed.values()):
            continue
        label = "this machine's disk" if disk == "native" else "1 ms fsync model (LD_PRELOAD)"
        mixed = full = False
        vlabel = {"2080": "2,080 B letters", "gob37k": "37 KB gob-like sessions",
                  "rand37k": "37 KB incompressible"}.get(model, model)
        print(f"\n== {disk}: {label} · values {vlabel} ==")
        print(f"{'arm':17} {'saturated interactions/s':34} {'vs naive':>8} {'vs redis':>9} "
              f"{'GET p50 µs':>10} {'SET p99 µs at half load':>26} "
              f"{'interaction p99 µs at half load':>31} {'server CPU µs/write':>19} "
              f"{'server cores':>12} {'gen thr':>7} {'WAL B/write':>15} {'max foreign':>13}")
        med = {a: statistics.median([x["interactions_per_s"] for x in v]) if v else None
               for a, v in closed.items()}
        for arm in ARMS:
            runs = closed[arm]
            if not runs:
                if any(r["arm"] == arm for r in loads):  # arms the run did not include: no row
                    print(f"{arm:17} (no valid run)")
                continue
            ips = [x["interactions_per_s"] for x in runs]
            get50 = statistics.median(x["get"]["p50_us"] for x in runs)
            unsaturated = [x for x in half[arm] if not x.get("saturated")]
            set99 = [x["set"]["p99_us"] for x in unsaturated]  # issue 19's goal 4
            p99 = [x["interaction"]["p99_us"] for x in unsaturated]
            cpu = [x["server_cpu_us_per_write"] for x in runs if "server_cpu_us_per_write" in x]
            cores = [x["server_cpu_s"] / x["window_s"] for x in runs
                     if "server_cpu_s" in x and x.get("window_s")]
            core50 = f"{statistics.median(cores):.2f}" if cores else "—"
            busy = [x["machine_busy_fraction"] for x in runs if "machine_busy_fraction" in x]
            if busy and statistics.median(busy) >= 0.9:
                core50 += "‡"  # the machine, not only the server, was full
                full = True
            thr = ",".join(str(t) for t in sorted(threads[arm]))
            wal = [x["wal_per_write"] for x in runs if x.get("wal_per_write") is not None]
            foreign = [x["foreign_cores"] for x in runs if x.get("foreign_cores") is not None]
            anchor = REDIS_OF[arm]
            vs_redis = ratio(med[arm], med[anchor])
            if threads[anchor] and threads[arm] != threads[anchor]:
                vs_redis += "†"  # the two arms ran different generator thread counts
                mixed = True
            print(f"{arm:17} {med_range(ips):34} {ratio(med[arm], med['naive']):>8} "
                  f"{vs_redis:>9} {get50:10.0f} "
                  f"{med_range(set99):>26} {med_range(p99):>31} {med_range(cpu, '{:.1f}'):>19} "
                  f"{core50:>12} {thr:>7} {med_range(wal):>15} "
                  f"{(f'{max(foreign):.2f}' if foreign else '—'):>13}")
        if mixed:
            print("† the arm and its redis anchor ran different generator thread counts")
        if full:
            print("‡ the machine was at least 90% busy (generator, server and others): the figure "
                  "may be the shared machine's bound, not the server's")
        sync = closed["tiered-sync"]
        pss = [m["descendants_pss_kib"] / 1024 for x in sync
               for m in x.get("server_memory_mid_window", []) if m["descendants"] > 0]
        if pss:
            print(f"PostgreSQL tree PSS under load (tiered-sync, mid-window): {med_range(pss, '{:.1f}')} MiB")
        batch = [x["server_counters_delta"]["store_committed_rows"] /
                 x["server_counters_delta"]["store_commits"] for x in sync
                 if (x.get("server_counters_delta") or {}).get("store_commits")]
        if batch:
            print(f"tiered-sync rows per commit (whole run): {med_range(batch, '{:.1f}')}")

    for st in (r for r in rows if r.get("phase") == "store"):
        print(f"\n== store: skydb's store against raw batched libpq, values {st['values']} "
              f"(bench/run_store_bench.sh, 64 in flight) ==")
        if not st.get("file"):
            print("did not run:", st.get("why"))
            continue
        print("\n".join(l for l in st["summary"] if l.strip()))
        print("raw lines:", st["file"])

    mem = next((r for r in rows if r.get("phase") == "memory"), None)
    if mem:
        print("\n== memory (native disk, tiered sync) ==")
        if not mem.get("valid"):
            print("INVALID:", mem.get("invalid_reasons"))
        idle = mem["idle"]
        print(f"idle: skydb RSS {idle['skydb_rss_kib'] / 1024:.1f} MiB, PostgreSQL tree PSS "
              f"{idle['postgres_tree_pss_kib'] / 1024:.1f} MiB ({idle['postgres_processes']} processes)")
        for p in mem["points"]:
            print(f"{p['sessions']:>7} sessions: skydb RSS {p['skydb_rss_kib'] / 1024:8.1f} MiB, "
                  f"used_memory {p['used_memory'] / 2**20:8.1f} MiB")
        s = mem["rss_slope_bytes_per_session"]
        vb = mem["value_bytes"]
        print(f"RSS marginal slope: {s['1k_to_10k']} B/session (1k→10k), {s['10k_to_100k']} "
              f"B/session (10k→100k), least squares {s['least_squares']} B/session "
              f"= {s['least_squares'] / vb:.2f}× the {vb}-byte value" if s["least_squares"] else "")
        d = mem["disk"]
        print(f"disk: sky_sessions {d['sky_sessions_total_bytes'] / 2**20:.1f} MiB for {d['rows']} "
              f"rows = {d['bytes_per_session']} B/session")

    st = next((r for r in rows if r.get("phase") == "startup"), None)
    if st:
        s = st["run"]
        print("\n== startup and recovery (supervisor_startup.py) ==")
        print(f"cold start {s['cold_start_s']} s; warm start median {s['warm_start_s']['median']} s "
              f"{s['warm_start_s']['all']}; kill -9 → ready median {s['kill9_to_ready_s']['median']} s "
              f"{s['kill9_to_ready_s']['all']}; idle PostgreSQL PSS "
              f"{s['idle_postgres_tree']['pss_mib']} MiB; skydb RSS {s['skydb_rss_mib']} MiB")

    if invalid:
        print(f"\n{len(invalid)} invalid run(s), excluded from every median:")
        for r in invalid:
            print(f"  {r['disk']} {values_of(r)} {r['arm']} repeat {r['repeat']} {r['loop']}: "
                  + "; ".join(r["run"].get("invalid_reasons", [])))
    if forced:
        print("\n!! FORCED RUN ABOVE THE LOAD THRESHOLD: these figures are NOT results !!")


if __name__ == "__main__":
    main(sys.argv[1])
