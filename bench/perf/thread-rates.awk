# Reads bench/perf/thread-sample.sh output and prints, per process and
# thread name (threads of one name summed), the cores used and the
# run-queue wait (time runnable but not running, in cores' worth) between
# `from` and `to` seconds after the first sample.
#
#   awk -f bench/perf/thread-rates.awk -v from=4.0 -v to=5.5 threads.txt
{
    if (start == "") start = $1
    t = $1 - start
    if (t < from || t > to) next
    id = $2 SUBSEP $3
    if (!(id in t0)) { t0[id] = t; tick0[id] = $5; wait0[id] = $7 }
    t1[id] = t; tick1[id] = $5; wait1[id] = $7
    name[id] = $2 " " $4
}
END {
    for (id in name) {
        dt = t1[id] - t0[id]
        if (dt <= 0) continue
        cores[name[id]] += (tick1[id] - tick0[id]) / 100 / dt
        waits[name[id]] += (wait1[id] - wait0[id]) / 1e9 / dt
    }
    printf "%-8s %-20s %8s %10s\n", "pid", "thread", "cores", "runq wait"
    for (k in cores) {
        split(k, p, " ")
        printf "%-8s %-20s %8.2f %10.2f\n", p[1], p[2], cores[k], waits[k]
    }
}
