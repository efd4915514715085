package io.jroce.cli.perf;

import io.jroce.cli.conn.PerftestHandshake;

import java.util.Arrays;
import java.util.Locale;

/**
 * perftest's result arithmetic and table formats (perftest src/perftest_parameters.c {@code print_report_bw},
 * {@code print_full_bw_report}, {@code print_report_lat}, {@code print_report_lat_duration}; formats from
 * src/perftest_parameters.h as released in perftest 4.5-0.20, whose output is in testdata/rxe/*.log).
 * Times are {@link System#nanoTime()} values, so "cycles" are nanoseconds.
 */
final class PerfReport {
    static final String RESULT_LINE = "---------------------------------------------------------------------------------------";
    static final String RESULT_FMT = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]";
    static final String RESULT_FMT_LAT = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ";
    static final String RESULT_FMT_LAT_DUR = " #bytes        #iterations       t_avg[usec]    tps average";
    /** The header with --report_gbits. */
    static final String RESULT_FMT_G = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]";
    /** perftest reports "MB/sec" with 2^20 bytes per MB ({@code format_factor = 0x100000}). */
    static final double MB = 0x100000;
    /** perftest drops the two largest samples ({@code LAT_MEASURE_TAIL}). */
    static final int LAT_MEASURE_TAIL = 2;

    private PerfReport() {
    }

    /**
     * {@code print_report_bw}: n messages of {@code size} bytes; {@code tposted[i]} when message i was posted,
     * {@code tcompleted[i]} when the i-th completion was seen. Without peak, only index 0 of each array is
     * used: start and end.
     */
    static PerftestHandshake.BwReport bw(long size, long n, long[] tposted, long[] tcompleted, boolean peak, int cqMod) {
        double optDelta = tcompleted[0] - tposted[0];
        if (peak && n > 0) {
            for (int i = 0; i < n; i++) {
                for (long j = roundUp(i + 1, cqMod) - 1; j < n; j += cqMod) {
                    double t = (double) (tcompleted[(int) j] - tposted[i]) / (j - i + 1);
                    if (t < optDelta) optDelta = t;
                }
                if (n % cqMod != 0) {
                    long j = n - 1;
                    double t = (double) (tcompleted[(int) j] - tposted[i]) / (j - i + 1);
                    if (t < optDelta) optDelta = t;
                }
            }
        }
        int last = peak ? (int) (n - 1) : 0;
        double cycles = Math.max(1, tcompleted[Math.max(0, last)] - tposted[0]);
        double bwAvg = size * (double) n * 1e9 / (cycles * MB);
        double msgRate = n * 1e9 / (cycles * 1e6);
        double bwPeak = peak && optDelta > 0 ? size * 1e9 / (optDelta * MB) : 0;
        return new PerftestHandshake.BwReport(size, n, bwPeak, bwAvg, msgRate);
    }

    /** The report with its bandwidths in Gb/sec (10^9 bits per second), as perftest's --report_gbits prints them. */
    static PerftestHandshake.BwReport inGbits(PerftestHandshake.BwReport r) {
        double f = MB * 8 / 1e9;
        return new PerftestHandshake.BwReport(r.size(), r.iters(), r.bwPeak() * f, r.bwAvg() * f, r.msgRate());
    }

    private static long roundUp(long value, long alignment) {
        return value % alignment == 0 ? value : alignment * (value / alignment + 1);
    }

    /** {@code REPORT_FMT}: " %-7lu    %-10lu       %-7.2lf            %-7.2lf\t\t   %-7.6lf". */
    static String bwLine(PerftestHandshake.BwReport r) {
        return String.format(Locale.ROOT, " %-7d    %-10d       %-7.2f            %-7.2f\t\t   %-7.6f",
                r.size(), r.iters(), r.bwPeak(), r.bwAvg(), r.msgRate());
    }

    /** The latency statistics of {@code print_report_lat}, in microseconds. */
    record Lat(long size, long iters, double tMin, double tMax, double tTypical, double tAvg, double tStdev, double p99, double p999) {
    }

    /**
     * {@code print_report_lat} for iteration runs: deltas between consecutive post times, divided by 2 for
     * SEND and WRITE ping-pong (round trip), by 1 for READ and atomics; the two largest dropped.
     */
    static Lat lat(long size, long[] tposted, int iters, boolean roundTrip) {
        int measure = iters - 1;
        long[] delta = new long[measure];
        for (int i = 0; i < measure; i++) delta[i] = tposted[i + 1] - tposted[i];
        double q = 1000.0 * (roundTrip ? 2 : 1);
        Arrays.sort(delta);
        measure -= LAT_MEASURE_TAIL;
        long median = (measure - 1) % 2 != 0 ? (delta[measure / 2] + delta[measure / 2 - 1]) / 2 : delta[measure / 2];
        double sum = 0;
        for (int i = 0; i < measure; i++) sum += delta[i] / q;
        double avg = sum / measure;
        double stdevSum = 0;
        for (int i = 0; i < measure; i++) {
            int tempVar = (int) (avg - delta[i] / q); // perftest truncates to int here
            int powVar = (int) Math.pow(tempVar, 2);
            stdevSum += powVar;
        }
        int i99 = (int) Math.ceil(measure * 0.99);
        int i999 = (int) Math.ceil(measure * 0.999);
        return new Lat(size, iters, delta[0] / q, delta[measure] / q, median / q, avg, Math.sqrt(stdevSum / measure),
                delta[i99] / q, delta[i999] / q);
    }

    /** {@code REPORT_FMT_LAT}. */
    static String latLine(Lat l) {
        return String.format(Locale.ROOT, " %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f",
                l.size(), l.iters(), l.tMin(), l.tMax(), l.tTypical(), l.tAvg(), l.tStdev(), l.p99(), l.p999());
    }

    /** {@code print_report_lat_duration}: average one-way latency and transactions per second. */
    record LatDur(long size, long iters, double tAvg, double tps) {
    }

    static LatDur latDuration(long size, long iters, long elapsedNanos, boolean roundTrip) {
        double us = elapsedNanos / 1000.0;
        double lat = iters == 0 ? 0 : us / (roundTrip ? 2 : 1) / iters;
        double tps = elapsedNanos == 0 ? 0 : iters / (elapsedNanos / 1e9);
        return new LatDur(size, iters, lat, tps);
    }

    /** {@code REPORT_FMT_LAT_DUR}. */
    static String latDurLine(LatDur l) {
        return String.format(Locale.ROOT, " %-7d       %d            %-7.2f        %-7.2f", l.size(), l.iters(), l.tAvg(), l.tps());
    }

    /** C's {@code %#0Nx}: "0x" counted in the width, and no prefix for zero. */
    static String altHex(long v, int width) {
        if (v == 0) return "0".repeat(width);
        String h = Long.toHexString(v);
        int digits = Math.max(0, width - 2 - h.length());
        return "0x" + "0".repeat(digits) + h;
    }
}
