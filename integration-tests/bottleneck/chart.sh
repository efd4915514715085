#!/usr/bin/env bash
# Draws the lossy-Ethernet report's charts from the CSV files of docs/reports/data (the figures of
# measure.sh runs, copied there with the report): goodput vs random loss (selective repeat and Go-Back-N),
# and flows through the tbf bottleneck (share of the link used, Jain's index, drops at the queue).
#
#   integration-tests/bottleneck/chart.sh [DATE]     # default 2026-12-01T2228; writes docs/images/lossy-*.png
#
# A loss file has either two series (selective repeat, Go-Back-N) or three (with selective repeat + congestion
# control first: drop,all,sr,gbn).
#
# Needs gnuplot (Debian: apt-get install gnuplot-nox).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
date=${1:-2026-12-01T2228}
data=$root/docs/reports/data
img=$root/docs/images
loss=$data/lossy-loss-$date.csv
flows=$data/lossy-flows-$date.csv
[[ -f $loss && -f $flows ]] || { echo "chart.sh: no data for $date in $data" >&2; exit 2; }
three=$(grep -v '^#' "$loss" | head -1 | awk -F, '{ print (NF >= 4 ? 1 : 0) }')
command -v gnuplot >/dev/null || { echo "chart.sh: gnuplot is not installed (apt-get install gnuplot-nox)" >&2; exit 2; }
gnuplot <<GP
set datafile separator ','
three = $three
stats '$loss' every ::0::0 using 2:3 nooutput
c2 = STATS_max_x
c3 = STATS_max_y
c4 = 1
if (three) { stats '$loss' every ::0::0 using 4 nooutput; c4 = STATS_max }
set terminal pngcairo size 900,520 font ',10'
set output '$img/lossy-goodput-vs-loss.png'
set title 'Single-QP RDMA WRITE 1 MiB under random loss ($date), each series against its own lossless point'
set xlabel 'drop probability per process (path loss about twice)'
set ylabel 'goodput / lossless goodput'
set logscale x
set xrange [0.0008:0.12]
set yrange [0:1.05]
set key top right
set grid
if (three) {
plot '$loss' using 1:(\$2/c2) every ::1 with linespoints lw 2 pt 9 title 'selective repeat + congestion control (jroce peers)', \
     '' using 1:(\$3/c3) every ::1 with linespoints lw 2 pt 7 title 'selective repeat alone', \
     '' using 1:(\$4/c4) every ::1 with linespoints lw 2 pt 5 title 'Go-Back-N, 1 ms tail probe'
} else {
plot '$loss' using 1:(\$2/c2) every ::1 with linespoints lw 2 pt 7 title 'selective repeat (jroce peers)', \
     '' using 1:(\$3/c3) every ::1 with linespoints lw 2 pt 5 title 'Go-Back-N, 1 ms tail probe'
}
set output '$img/lossy-flows.png'
unset logscale x
set title 'Flows through a tbf bottleneck ($date): share of the link, fairness, drops'
set style fill solid 0.8 border -1
set boxwidth 0.9
set xlabel 'bottleneck-flows-extensions (all = selective repeat + congestion control)'
set ylabel 'share of the link, Jain index'
set y2label 'drops at the queue (%)'
set xrange [-1:28]
set yrange [0:1.05]
set y2range [0:63]
set ytics nomirror
set y2tics
set key top right
plot '$flows' using (\$0*4):(\$3/\$2):xtic(1) with boxes title 'share of the link (sum of per-flow goodput)', \
     '' using (\$0*4+1):4 with boxes title 'Jain index', \
     '' using (\$0*4+2):5 axes x1y2 with boxes title 'drops % (right axis)'
GP
echo "chart.sh: wrote $img/lossy-goodput-vs-loss.png and $img/lossy-flows.png"
