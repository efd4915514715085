# Sourced by the A/B scripts of bench/ (gro-ab.sh, gso-ab.sh, lat-ab.sh, ops-ab.sh, verbs-ab.sh): their one option, --out DIR, and --help,
# which prints the script's header comment. Sets OUT (the script's default, bench/results/NAME-<UTC time>, if not
# given) and REPO.
#
#   . "$(dirname "${BASH_SOURCE[0]}")/ab-args.sh" NAME "$@"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ab_name=$1
shift
OUT=
while (($#)); do
    case $1 in
        --out) OUT=$2; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench/$ab_name.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
done
OUT=${OUT:-$REPO/bench/results/$ab_name-$(date -u +%Y%m%dT%H%M%SZ)}

# AB_STATS: awk functions the scripts' summaries share: median(S) and spread(S) ("lo-hi") of the numbers in the
# space-separated string S. Use as: awk "$AB_STATS"' ... '
AB_STATS='function median(s,   a, n, i, j, x) { n = split(s, a, " ")
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { x = a[i]; a[i] = a[j]; a[j] = x }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    function spread(s,   a, n, i, lo, hi) { n = split(s, a, " "); lo = hi = a[1]
        for (i = 2; i <= n; i++) { if (a[i] + 0 < lo + 0) lo = a[i]; if (a[i] + 0 > hi + 0) hi = a[i] }
        return lo "-" hi }
'
