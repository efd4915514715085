#!/usr/bin/env bash
# Draws each flow's rate over time from a measure.sh series file (OUT/flows-N-qQ-series.dat: one block per flow,
# "seconds Gbit/s" rows, blocks separated by two blank lines), with the link's rate as a dashed line.
#
#   integration-tests/bottleneck/series-chart.sh SERIES.dat OUT.png "TITLE" [LINK_GBITS]
#
# Needs gnuplot (Debian: apt-get install gnuplot-nox).
set -euo pipefail

if [ $# -lt 3 ]; then
    sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2
    exit 2
fi
dat=$1 png=$2 title=$3 link=${4:-}
[ -r "$dat" ] || { echo "series-chart.sh: cannot read $dat" >&2; exit 2; }
command -v gnuplot >/dev/null || { echo "series-chart.sh: gnuplot is not installed (apt-get install gnuplot-nox)" >&2; exit 2; }
blocks=$(grep -c '^# flow' "$dat")
[ "$blocks" -gt 0 ] || { echo "series-chart.sh: no '# flow' block in $dat" >&2; exit 2; }

gnuplot <<EOF
set terminal pngcairo size 1000,520 font ',10'
set output '$png'
set title "$title"
set xlabel 'seconds after the flow processes were started (each JVM starts and warms up first)'
set ylabel 'Gbit/s'
set key outside right top
set grid
$( [ -z "$link" ] && echo 'set yrange [0:*]' || echo "set yrange [0:$link * 1.15]")
plot for [i=0:$((blocks - 1))] '$dat' index i using 1:2 with lines lw 1.2 title sprintf('flow %d', i + 1)$(
    [ -z "$link" ] || printf ", %s with lines dt 2 lc rgb 'black' title 'link'" "$link")
EOF
echo "series-chart.sh: wrote $png ($blocks flows)"
