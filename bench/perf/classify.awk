# Puts each sample of `perf script -F ip,sym` output into a class and
# prints each class's share of the samples.
#
#   perf script -i perf.data --time START,END --comm tokio-rt-worker \
#       -F ip,sym > window.script
#   awk -f bench/perf/classify.awk window.script | sort -rn
#
# A sample's class is decided by the frame nearest its leaf that matches
# any class, so a class holds the time spent in that code and in what it
# calls outside every other class (self time by stage). Within one frame,
# classes are tried in the order below.
BEGIN {
    RS = ""
    np = 0
    pat[++np] = "writev";                                   cls[np] = "kernel: writev"
    pat[++np] = "recvfrom|__libc_recv";                     cls[np] = "kernel: recv"
    pat[++np] = "epoll_wait|park_internal|park_timeout";    cls[np] = "runtime: park"
    pat[++np] = "futex";                                    cls[np] = "futex"
    pat[++np] = "payload::|sluice_signing::json";            cls[np] = "webhook body rendering"
    pat[++np] = "sluice_signing|hmac|sha1|sha2";            cls[np] = "signing"
    pat[++np] = "parse::parse|enrich::";                    cls[np] = "ingest: parse and enrich"
    pat[++np] = "bodies::encode";                           cls[np] = "ingest: body compression"
    pat[++np] = "sluice_api::ingest|sluice_api::auth";      cls[np] = "ingest handler"
    pat[++np] = "sluice_api::front|axum::|tower_http::cors"; cls[np] = "routing, CORS, front"
    pat[++np] = "hyper::proto";                             cls[np] = "hyper HTTP/1"
    pat[++np] = "reqwest::|hyper_util::client|tower_http::follow_redirect|tower::retry|sender::pool"; cls[np] = "HTTP client around hyper"
    pat[++np] = "send_via";                                 cls[np] = "sender, rest"
    pat[++np] = "reporter";                                 cls[np] = "reporter"
    pat[++np] = "dispatcher";                               cls[np] = "dispatcher"
    pat[++np] = "tokio::runtime";                           cls[np] = "runtime"
}
{
    n = split($0, frames, "\n")
    c = "other"
    for (i = 1; i <= n && c == "other"; i++)
        for (p = 1; p <= np; p++)
            if (frames[i] ~ pat[p]) { c = cls[p]; break }
    count[c]++; total++
}
END {
    for (k in count) printf "%6.2f%% %s\n", 100 * count[k] / total, k
    printf "%d samples\n", total
}
